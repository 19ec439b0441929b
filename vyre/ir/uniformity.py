"""Workgroup-uniformity analysis: does every invocation of a workgroup reach each barrier?

WGSL requires ``workgroupBarrier()``/``storageBarrier()`` to run in workgroup-uniform
control flow. This analysis is deliberately simple and conservative (stricter than WGSL's):

* Uniform expressions: literals, ``len(buf)``, the built-ins ``workgroup_id`` and
  ``num_workgroups``, loads from ``uniform`` buffers at a uniform index, and variables
  whose every assignment is uniform and happens in uniform control flow. Everything else
  (other built-ins, storage/workgroup loads, atomics) is non-uniform.
* Control flow is non-uniform inside an ``if``/``while`` with a non-uniform condition,
  inside a ``for`` with non-uniform bounds, inside a loop that some invocations may leave
  early (``break``/``continue``/``return`` under non-uniform control flow), and after a
  ``return`` under non-uniform control flow.

Subgroup operations (:mod:`vyre.ir.subgroups`) follow the barrier rule: each must run in
workgroup-uniform control flow (stricter than WGSL's subgroup uniformity, and simple to state),
and the mask/delta of ``shuffle_xor``/``shuffle_up``/``shuffle_down`` must be uniform. Their
results are non-uniform (they differ between subgroups).

Variable uniformity is a monotone fixpoint (a loop can make a variable that its own
condition reads non-uniform), so the walk repeats until nothing changes.
"""

from __future__ import annotations

from dataclasses import dataclass

from .nodes import (
    STMT_TYPES,
    SUBGROUP_LANE_OPS,
    Assign,
    Atomic,
    Barrier,
    Break,
    Builtin,
    BuiltinName,
    Continue,
    Eval,
    Expr,
    For,
    If,
    Let,
    Load,
    Return,
    Stmt,
    Store,
    Subgroup,
    SubgroupOp,
    Var,
    VarDecl,
    While,
)
from .program import Program
from .text import expr_to_text
from .traverse import Visitor, expr_children_at, walk_expr
from .types import Access

UNIFORM_BUILTINS = frozenset({BuiltinName.WORKGROUP_ID, BuiltinName.NUM_WORKGROUPS})


@dataclass(frozen=True)
class BarrierProblem:
    """A barrier that some invocations of a workgroup may not reach, and why."""

    path: str
    barrier: Barrier
    reason: str


@dataclass(frozen=True)
class SubgroupProblem:
    """A subgroup operation outside workgroup-uniform control flow (or with a non-uniform mask/delta), and why."""

    path: str
    op: Subgroup
    reason: str


_UNIFORM_LANE = frozenset(SUBGROUP_LANE_OPS - {SubgroupOp.SHUFFLE})  # broadcast's literal lane is uniform too


def nonuniform_barriers(program: Program) -> list[BarrierProblem]:
    """Every barrier of ``program`` that is not in workgroup-uniform control flow."""
    return _Analysis(program).run()


def uniformity_problems(program: Program) -> tuple[list[BarrierProblem], list[SubgroupProblem]]:
    """The barriers and the subgroup operations of ``program`` that break the uniformity rules."""
    a = _Analysis(program)
    barriers = a.run()
    by_path = {q.path: q for q in reversed(a.subgroup_problems)}  # a loop's end is checked twice: report once
    return barriers, sorted(by_path.values(), key=a.subgroup_problems.index)


class _Analysis(Visitor[None], covers=STMT_TYPES):
    """``visit_<Stmt class>(s, path, cf)``: ``cf`` is None in uniform control flow, else why it is not."""

    def __init__(self, program: Program):
        self.program = program
        self.uniform_buffers = {b.name for b in program.buffers if b.access is Access.UNIFORM}
        self.storage = {b.name for b in program.buffers}
        self.bad_decls: dict[str, str] = {}  # declaration path -> why its value is non-uniform
        self.tainted_loops: dict[str, str] = {}  # loop path -> why its body is non-uniform
        self.changed = False
        self.problems: list[BarrierProblem] = []
        self.subgroup_problems: list[SubgroupProblem] = []
        self.scopes: list[dict[str, str]] = [{}]
        self.loops: list[str] = []
        self.returned: str | None = None

    def run(self) -> list[BarrierProblem]:
        # Each pass can only add entries to bad_decls/tainted_loops, so this terminates.
        while True:
            self.changed = False
            self.problems = []
            self.subgroup_problems = []
            self.scopes = [{}]
            self.loops = []
            self.returned = None
            self.block(self.program.body, "body", None)
            if not self.changed:
                return self.problems

    # ---- expressions ------------------------------------------------------
    def lookup(self, name: str) -> str | None:
        for scope in reversed(self.scopes):
            if name in scope:
                return scope[name]
        return None

    def why(self, e: Expr) -> str | None:
        """None when ``e`` is workgroup-uniform, else what makes it differ between invocations."""
        for node, _ in walk_expr(e, ""):
            if isinstance(node, Builtin) and node.name not in UNIFORM_BUILTINS:
                return f"the built-in `{expr_to_text(node)}`, which differs between invocations"
            if isinstance(node, Load) and node.buffer not in self.uniform_buffers:
                where = "storage buffer" if node.buffer in self.storage else "workgroup array"
                return (f"`{expr_to_text(node)}`, a load from the {where} {node.buffer!r} "
                        "(only uniform-buffer loads count as uniform)")
            if isinstance(node, Subgroup):
                return f"the subgroup operation `{expr_to_text(node)}`, whose result differs between subgroups"
            if isinstance(node, Atomic):
                return f"the atomic `{expr_to_text(node)}`, which returns a different old value to each invocation"
            if isinstance(node, Var):
                decl = self.lookup(node.name)
                if decl is not None and decl in self.bad_decls:
                    return f"the variable `{node.name}`, which {self.bad_decls[decl]}"
        return None

    def mark(self, decl: str, reason: str) -> None:
        if decl not in self.bad_decls:
            self.bad_decls[decl] = reason
            self.changed = True

    def assigned(self, decl: str | None, value: Expr | None, path: str, cf: str | None) -> None:
        if decl is None or value is None:
            return
        if cf is not None:
            self.mark(decl, f"is assigned under non-uniform control flow at {path}")
            return
        w = self.why(value)
        if w is not None:
            self.mark(decl, f"is assigned at {path} from {w}")

    def subgroup_ops(self, e: Expr, path: str, cf: str | None) -> None:
        """Record the subgroup operations in ``e`` (evaluated under ``cf``) that break the rules."""
        for node, p in walk_expr(e, path):
            if not isinstance(node, Subgroup):
                continue
            if cf is not None:
                self.subgroup_problems.append(SubgroupProblem(p, node, cf))
            elif node.op in _UNIFORM_LANE and node.lane is not None:
                w = self.why(node.lane)
                if w is not None:
                    self.subgroup_problems.append(SubgroupProblem(
                        p + ".lane", node, f"its {'mask' if node.op is SubgroupOp.SHUFFLE_XOR else 'delta'} "
                        f"`{expr_to_text(node.lane)}` is not workgroup-uniform: it depends on {w}"))

    # ---- statements ---------------------------------------------------------
    def block(self, stmts: list[Stmt], path: str, cf: str | None) -> None:
        self.scopes.append({})
        for i, s in enumerate(stmts):
            p = f"{path}[{i}]"
            for e, ep in expr_children_at(s, p):
                self.subgroup_ops(e, ep, cf or self.returned)
            self.visit(s, p, cf or self.returned)
        self.scopes.pop()

    def visit_Let(self, s: Let | VarDecl, path: str, cf: str | None) -> None:
        self.assigned(path, s.value, path + ".value", cf)
        self.scopes[-1][s.name] = path

    visit_VarDecl = visit_Let

    def visit_Assign(self, s: Assign, path: str, cf: str | None) -> None:
        self.assigned(self.lookup(s.name), s.value, path + ".value", cf)

    def visit_If(self, s: If, path: str, cf: str | None) -> None:
        w = self.why(s.cond)
        inner = cf or (None if w is None else
                       f"it is inside the `if` at {path} whose condition `{expr_to_text(s.cond)}` "
                       f"is not workgroup-uniform: it depends on {w}")
        self.block(s.then, path + ".then", inner)
        self.block(s.otherwise, path + ".otherwise", inner)

    def visit_For(self, s: For, path: str, cf: str | None) -> None:
        self.assigned(path, s.start, path + ".start", cf)
        w = self.why(s.start) or self.why(s.end)
        inner = cf or (None if w is None else
                       f"it is inside the `for` loop at {path} whose bounds "
                       f"`{expr_to_text(s.start)}..{expr_to_text(s.end)}` are not workgroup-uniform: "
                       f"they depend on {w}")
        self.scopes.append({s.var: path})
        if cf is None:  # the end is evaluated again before each trip
            self.subgroup_ops(s.end, path + ".end", inner or self.tainted_loops.get(path))
        self.loop(s.body, path, inner)
        self.scopes.pop()

    def visit_While(self, s: While, path: str, cf: str | None) -> None:
        w = self.why(s.cond)
        inner = cf or (None if w is None else
                       f"it is inside the `while` loop at {path} whose condition `{expr_to_text(s.cond)}` "
                       f"is not workgroup-uniform: it depends on {w}")
        if cf is None:  # the condition is evaluated again before each trip
            self.subgroup_ops(s.cond, path + ".cond", inner or self.tainted_loops.get(path))
        self.loop(s.body, path, inner)

    def visit_Break(self, s: Break | Continue, path: str, cf: str | None) -> None:
        if cf is not None and self.loops:
            self.taint(self.loops[-1], f"`{s.kind}` at {path}")

    visit_Continue = visit_Break

    def visit_Return(self, s: Return, path: str, cf: str | None) -> None:
        if cf is not None:
            for loop in self.loops:
                self.taint(loop, f"`return` at {path}")
            if self.returned is None:
                self.returned = (f"some invocations may already have left the shader through the `return` "
                                 f"at {path}, which runs under non-uniform control flow")

    def visit_Barrier(self, s: Barrier, path: str, cf: str | None) -> None:
        if cf is not None:
            self.problems.append(BarrierProblem(path, s, cf))

    def visit_Store(self, s: Store | Eval, path: str, cf: str | None) -> None:
        pass  # stores and evals do not change uniformity

    visit_Eval = visit_Store

    def loop(self, body: list[Stmt], path: str, cf: str | None) -> None:
        self.loops.append(path)
        self.block(body, path + ".body", cf or self.tainted_loops.get(path))
        self.loops.pop()

    def taint(self, loop: str, exit_: str) -> None:
        if loop not in self.tainted_loops:
            self.tainted_loops[loop] = (
                f"some invocations may leave the loop at {loop} early ({exit_} runs under non-uniform "
                "control flow), so later iterations run with fewer invocations"
            )
            self.changed = True


__all__ = ["UNIFORM_BUILTINS", "BarrierProblem", "SubgroupProblem", "nonuniform_barriers", "uniformity_problems"]
