"""The validator: every rule a program must satisfy before lowering.

:func:`check` returns every problem as a :class:`~vyre.errors.ValidationIssue`;
:func:`validate` raises one :class:`~vyre.errors.ValidationError` listing them all.
Each issue has a stable ``rule`` id (see :data:`RULES`), the ``path`` of the node
(``body[3].then[0].value``, ``buffers[2]``, ``workgroup_size``), the node's text form,
a message and a fix hint. Expression typing is :func:`vyre.ir.typing.infer`; barrier
uniformity is :mod:`vyre.ir.uniformity`; declarations are checked by
:mod:`vyre.ir.validate_decls`, names by :mod:`vyre.ir.names`, against :mod:`vyre.ir.limits`.

Where rules overlap: a store into a ``read`` or ``uniform`` buffer is ``readonly-store``; an
atomic on a ``uniform`` buffer is ``uniform-misuse``; an atomic on a ``read``/``write`` buffer
or on a non-u32/i32 array is ``atomic-type``. A name that equals a buffer/workgroup array name
or one already in scope is ``shadowed`` (WGSL allows some shadowing; vyre does not).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import ValidationError, ValidationIssue
from .limits import Limits
from .names import name_problem, suggest_name
from .nodes import (
    STMT_TYPES,
    Assign,
    Atomic,
    Barrier,
    Break,
    Continue,
    Eval,
    Expr,
    For,
    If,
    Let,
    Node,
    Return,
    Stmt,
    Store,
    VarDecl,
    While,
)
from .program import Program
from .traverse import Visitor, expr_depth, walk_expr
from .trips import loop_iterations_issue
from .types import Access, DataType
from .typing import TypeEnv, infer
from .uniformity import uniformity_problems
from .validate_decls import DeclChecker, Issues, node_text

# Nesting limits: WGSL allows 127 nested brace blocks per function (the generated shader adds its own),
# and the wire format (pydantic serialisation) stops at about 250 nested nodes in total.
MAX_BLOCK_DEPTH = 64
MAX_EXPR_DEPTH = 160

RULES = {
    "type": "every expression and statement is well typed",
    "undefined": "every variable and buffer is declared before use",
    "shadowed": "a let/var/for name is not already visible, and is not a buffer or workgroup array name",
    "name": "names are valid WGSL identifiers, not WGSL keywords/predeclared names, not `__...` or `_vyre...`",
    "assign-immutable": "only `var` variables are assigned",
    "readonly-store": "stores go only into read_write/write buffers and workgroup arrays",
    "uniform-misuse": (
        "uniform buffers have a fixed count, a u32/i32/f32 (or vec4) dtype, fit the limit, and no atomics"
    ),
    "atomic-type": "atomics only on u32/i32 read_write buffers or workgroup arrays",
    "barrier-uniformity": "every invocation of a workgroup reaches each barrier",
    "subgroup-uniformity": "every subgroup operation runs in workgroup-uniform control flow, and the mask/delta of "
                           "shuffle_xor/up/down is workgroup-uniform",
    "control-flow": "break/continue only inside a loop",
    "for-step": "a for-loop step is a non-zero i32",
    "workgroup-size": "workgroup size dims are >= 1, within the per-axis limits, product within the invocation limit",
    "workgroup-memory": "workgroup arrays have count >= 1 and fit the workgroup storage limit together",
    "duplicate-binding": "binding numbers are unique",
    "binding": "binding numbers are >= 0 and below the bindings-per-group limit (1000 in portable WebGPU)",
    "buffer-limit": "storage and uniform buffers fit the adapter's per-shader-stage limits, when given "
                    "(the hidden params uniform takes one uniform slot)",
    "grid-from": "grid_from, when set, names one of the program's storage (non-uniform) buffers",
    "duplicate-name": "buffer and workgroup array names are unique",
    "buffer-count": "a declared buffer count is >= 1",
    "loop-iterations": "the loop iterations one invocation runs, where the program fixes them, stay within the "
                       "adapter's limit when it has one (llvmpipe ends loops after 65,535 in all, silently)",
    "nesting": f"blocks nest at most {MAX_BLOCK_DEPTH} deep and expressions at most {MAX_EXPR_DEPTH} deep",
}



# --------------------------------------------------------------------------- checker
@dataclass
class _Decl:
    kind: str  # "let", "var" or "for"
    path: str


_INDEX_TYPES = (DataType.U32, DataType.I32)
_KIND_WORD = {"let": "a `let` binding", "var": "a `var`", "for": "a for-loop variable"}
_BARRIER_FIX = (
    "every invocation of a workgroup must reach each barrier: move the barrier out of the "
    "branch/loop (compute what differs first, barrier at top level, then branch), or make the "
    "condition/bounds workgroup-uniform (literals, len(...), workgroup_id, num_workgroups, "
    "uniform-buffer loads, and variables assigned only such values); replace an early "
    "non-uniform return/break with a flag checked after the barrier"
)
_SUBGROUP_FIX = (
    "guard the value, not the call: compute it with b.select(cond, value, identity) and call the subgroup "
    "operation at top level (or under workgroup-uniform conditions only); give shuffle_xor/up/down a "
    "uniform mask/delta (a literal, len(...), a uniform-buffer load)"
)


class _Checker(Visitor[None], covers=STMT_TYPES):
    """Checks the statements (``visit_<Stmt class>(s, path)``) after :class:`DeclChecker`."""

    def __init__(self, program: Program, limits: Limits):
        self.p = program
        self.limits = limits
        self.issues = Issues()
        self.add = self.issues.add
        self.names: dict[str, str] = {}  # buffer / workgroup name -> path of its declaration
        self.env = TypeEnv.for_program(program)
        self.decls: list[dict[str, _Decl]] = [{}]  # parallel to env.scopes
        self.loop_depth = 0
        self.block_depth = -1  # the program body is depth 0
        self.too_deep = False

    def report(self, path: str, node: Node | None, rule: str, message: str, fix: str) -> None:
        """typing's report callback."""
        self.add(rule, path, node, message, fix)

    def run(self) -> list[ValidationIssue]:
        self.names = DeclChecker(self.p, self.limits, self.issues).run()
        self.block(self.p.body, "body")
        if self.too_deep:
            return self.issues.found  # the uniformity walk recurses through blocks and prints expressions
        barriers, subgroup_ops = uniformity_problems(self.p)
        for prob in barriers:
            self.add("barrier-uniformity", prob.path, prob.barrier,
                     f"the barrier at {prob.path} may not be reached by every invocation of the workgroup: "
                     f"{prob.reason}", _BARRIER_FIX)
        for sg in subgroup_ops:
            self.add("subgroup-uniformity", sg.path, sg.op,
                     f"the subgroup operation at {sg.path} must run in workgroup-uniform control flow with a "
                     f"uniform mask/delta: {sg.reason}", _SUBGROUP_FIX)
        cap = self.limits.max_loop_iterations
        if cap is not None:
            issue = loop_iterations_issue(self.p, cap)
            if issue is not None:
                self.issues.found.append(issue)
        return self.issues.found

    # ---- scopes -------------------------------------------------------------
    def push(self) -> None:
        self.env.push()
        self.decls.append({})

    def pop(self) -> None:
        self.env.pop()
        self.decls.pop()

    def lookup(self, name: str) -> _Decl | None:
        for scope in reversed(self.decls):
            if name in scope:
                return scope[name]
        return None

    def declare(self, name: str, dtype: DataType | None, kind: str, path: str, stmt: Stmt) -> None:
        what = _KIND_WORD[kind]
        prob = name_problem(name)
        if prob is not None:
            self.add("name", path, stmt, f"the name of {what} {prob}", f"rename it, e.g. to {suggest_name(name)!r}")
        prev = self.lookup(name)
        if name in self.names:
            self.add("shadowed", path, stmt,
                     f"{what} named {name!r} hides the buffer/workgroup array {name!r} ({self.names[name]})",
                     f"rename the {kind} (e.g. to {name + '_v'!r}) so {name!r} keeps meaning the array")
        elif prev is not None:
            self.add("shadowed", path, stmt,
                     f"{what} named {name!r} shadows {_KIND_WORD[prev.kind]} of the same name declared at "
                     f"{prev.path}; vyre rejects shadowing to keep programs readable",
                     f"rename one of them (e.g. {name + '2'!r}), or assign to the existing one if it is a var")
        self.env.declare(name, dtype, kind == "var")  # dtype None: unknown, no follow-up errors
        self.decls[-1][name] = _Decl(kind, path)

    # ---- expressions --------------------------------------------------------
    def expr(self, e: Expr, path: str) -> DataType | None:
        depth = expr_depth(e)
        if depth > MAX_EXPR_DEPTH:
            self.too_deep = True
            text = node_text(e)
            self.add("nesting", path, text if len(text) <= 200 else text[:200] + "...",
                     f"this expression nests {depth} levels deep, over vyre's limit of {MAX_EXPR_DEPTH}",
                     "bind partial results to names with b.let(...) (e.g. accumulate a long sum in a var "
                     "inside a for_range loop) so that no single expression nests that deep")
            return None
        t = infer(e, self.env, path, self.report)
        for node, p in walk_expr(e, path):
            if isinstance(node, Atomic):
                self.atomic_access(node, p)
        return t

    def atomic_access(self, e: Atomic, path: str) -> None:
        decl = self.env.buffers.get(e.buffer)
        if decl is None or decl.access is Access.READ_WRITE:
            return  # workgroup arrays and read_write buffers are fine; undeclared is reported by typing
        op = f"atomic_{e.op.value}"
        if decl.access is Access.UNIFORM:
            self.add("uniform-misuse", path, e,
                     f"{op} on uniform buffer {e.buffer!r}: uniform buffers cannot be used by atomics",
                     f"declare {e.buffer!r} with access='read_write' (a storage buffer) to use atomics on it")
        else:
            self.add("atomic-type", path, e,
                     f"{op} on {decl.access.value!r} buffer {e.buffer!r}: atomics need a read_write buffer "
                     "or a workgroup array",
                     f"declare {e.buffer!r} with access='read_write'")

    def expect(self, t: DataType | None, want: DataType, path: str, node: Expr, what: str, fix: str) -> None:
        if t is not None and t != want:
            self.add("type", path, node, f"{what} must be {want.value}, found {t.value}", fix)

    # ---- statements ---------------------------------------------------------
    def block(self, stmts: list[Stmt], path: str) -> None:
        if self.block_depth >= MAX_BLOCK_DEPTH and stmts:
            self.too_deep = True
            self.add("nesting", path, stmts[0],
                     f"statements are nested more than {MAX_BLOCK_DEPTH} blocks deep (if/for/while inside each "
                     "other) here", "flatten the control flow: combine conditions with & and |, or split the "
                     "work into several programs")
            return
        self.block_depth += 1
        self.push()
        for i, s in enumerate(stmts):
            self.visit(s, f"{path}[{i}]")
        self.pop()
        self.block_depth -= 1

    def visit_Let(self, s: Let, path: str) -> None:
        t = self.expr(s.value, path + ".value")
        self.declare(s.name, t, "let", path, s)

    def visit_VarDecl(self, s: VarDecl, path: str) -> None:
        if s.value is not None:
            t = self.expr(s.value, path + ".value")
            if t is not None and t != s.dtype:
                self.add("type", path + ".value", s.value,
                         f"var {s.name!r} is declared {s.dtype.value} but initialised with a {t.value} value",
                         f"cast the initial value with .cast('{s.dtype.value}'), or declare the var as {t.value}")
        self.declare(s.name, s.dtype, "var", path, s)

    def visit_Assign(self, s: Assign, path: str) -> None:
        t = self.expr(s.value, path + ".value")
        d = self.lookup(s.name)
        if d is None:
            if s.name in self.names:
                self.add("assign-immutable", path, s,
                         f"{s.name!r} is a buffer/workgroup array, not a variable; it cannot be assigned as a whole",
                         f"store into one element instead: {s.name}[i] = value")
            else:
                self.add("undefined", path, s, f"assignment to {s.name!r}, which is not declared here",
                         f"declare it first with b.var(dtype, init, name={s.name!r}), or check the spelling")
            return
        if d.kind != "var":
            fix = ("declare it with b.var(dtype, init) instead of b.let(...)" if d.kind == "let" else
                   "a for-loop variable only advances by the step; copy it into a var (b.var('u32', k)) "
                   "and assign that, or use a while_ loop")
            self.add("assign-immutable", path, s,
                     f"assignment to {s.name!r}, which is {_KIND_WORD[d.kind]} (declared at {d.path}) and cannot "
                     "be changed", fix)
            return
        info = self.env.lookup(s.name)
        if info is not None and info.dtype is not None and t is not None and t != info.dtype:
            self.add("type", path + ".value", s.value,
                     f"var {s.name!r} is {info.dtype.value} but the assigned value is {t.value}",
                     f"cast the value with .cast('{info.dtype.value}')")

    def visit_Store(self, s: Store, path: str) -> None:
        it = self.expr(s.index, path + ".index")
        if it is not None and it not in _INDEX_TYPES:
            self.add("type", path + ".index", s.index, f"an index must be u32 or i32, found {it.value}",
                     "cast the index with .cast('u32')")
        vt = self.expr(s.value, path + ".value")
        dtype = self.env.array_dtype(s.buffer)
        if dtype is None:
            self.add("undefined", path, s,
                     f"store into {s.buffer!r}, which is not a declared buffer or workgroup array",
                     "declare it with b.buffer(...) or b.workgroup_array(...), or check the spelling")
            return
        decl = self.env.buffers.get(s.buffer)
        if decl is not None and not decl.access.writable:
            kind = "uniform" if decl.access is Access.UNIFORM else "read-only"
            self.add("readonly-store", path, s,
                     f"store into {kind} buffer {s.buffer!r} (access={decl.access.value!r}); "
                     "only read_write and write buffers can be stored to",
                     f"declare {s.buffer!r} with access='read_write' (or 'write' if the shader never reads it), "
                     "or store the result into an output buffer")
        if vt is not None and vt != dtype:
            self.add("type", path + ".value", s.value,
                     f"{s.buffer!r} holds {dtype.value} but the stored value is {vt.value}",
                     f"cast the value with .cast('{dtype.value}')")

    def visit_If(self, s: If, path: str) -> None:
        self.expect(self.expr(s.cond, path + ".cond"), DataType.BOOL, path + ".cond", s.cond,
                    "an if condition", "compare it, e.g. (x != 0)")
        self.block(s.then, path + ".then")
        self.block(s.otherwise, path + ".otherwise")

    def visit_While(self, s: While, path: str) -> None:
        self.expect(self.expr(s.cond, path + ".cond"), DataType.BOOL, path + ".cond", s.cond,
                    "a while condition", "compare it, e.g. (x != 0)")
        self.loop(s.body, path)

    def visit_For(self, s: For, path: str) -> None:
        st = self.expr(s.start, path + ".start")
        et = self.expr(s.end, path + ".end")
        fix = "use u32 (or i32) bounds of one type, e.g. with .cast('u32')"
        var_t = None
        if st is not None and st not in _INDEX_TYPES:
            self.add("type", path + ".start", s.start, f"a for-loop start must be u32 or i32, found {st.value}", fix)
        elif et is not None and et not in _INDEX_TYPES:
            self.add("type", path + ".end", s.end, f"a for-loop end must be u32 or i32, found {et.value}", fix)
        elif st is not None and et is not None and st != et:
            self.add("type", path, s, f"for-loop bounds differ in type: start is {st.value}, end is {et.value}", fix)
        else:
            var_t = st
        if s.step == 0:
            self.add("for-step", path + ".step", s, "a for-loop step of 0 never advances the loop",
                     "use a non-zero step: positive counts up (k < end), negative counts down (k > end)")
        elif not -(2**31) <= s.step < 2**31:
            self.add("for-step", path + ".step", s, f"for-loop step {s.step} does not fit in i32",
                     "use a step between -2147483648 and 2147483647")
        self.push()
        self.declare(s.var, var_t, "for", path, s)
        self.loop(s.body, path)
        self.pop()

    def loop(self, body: list[Stmt], path: str) -> None:
        self.loop_depth += 1
        self.block(body, path + ".body")
        self.loop_depth -= 1

    def _jump(self, s: Break | Continue, path: str) -> None:
        if self.loop_depth == 0:
            self.add("control-flow", path, s, f"`{s.kind}` outside a loop",
                     f"put `{s.kind}` inside a for_range/while_ body, or use return_() to end the invocation")

    visit_Break = visit_Continue = _jump

    def visit_Return(self, s: Return, path: str) -> None:
        pass

    def visit_Barrier(self, s: Barrier, path: str) -> None:
        pass  # uniformity is checked by vyre.ir.uniformity

    def visit_Eval(self, s: Eval, path: str) -> None:
        self.expr(s.value, path + ".value")


# --------------------------------------------------------------------------- API
def check(program: Program, limits: object = None) -> list[ValidationIssue]:
    """Every problem of ``program`` (empty when it is valid)."""
    return _Checker(program, Limits.of(limits)).run()


def validate(program: Program, limits: object = None) -> None:
    """Raise :class:`vyre.errors.ValidationError` listing every problem of ``program``."""
    issues = check(program, limits)
    if issues:
        raise ValidationError(program.name, issues)


__all__ = ["RULES", "MAX_BLOCK_DEPTH", "MAX_EXPR_DEPTH", "Limits", "name_problem", "check", "validate"]
