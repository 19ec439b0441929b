"""What the adjoint transform needs to know of a forward program before it writes any code: the refusals
(what cannot be differentiated, each a ValidationError whose issue path names the statement), the types of
the local names, and which values are *active* (depend differentiably on a float ``In`` array)."""

from __future__ import annotations

from collections.abc import Iterator

from ...errors import ValidationError, ValidationIssue
from ..nodes import (
    Assign,
    Atomic,
    Barrier,
    Binary,
    Bitcast,
    Break,
    BufLen,
    Builtin,
    Cast,
    Continue,
    Eval,
    Expr,
    Extract,
    Fma,
    For,
    If,
    Let,
    Lit,
    Load,
    Return,
    Select,
    Stmt,
    Store,
    Subgroup,
    Unary,
    UnOp,
    Var,
    VarDecl,
    VecNew,
    While,
)
from ..opcodes import COMPARE_BINOPS, LOGIC_BINOPS
from ..program import Program
from ..text import expr_to_text
from ..traverse import expr_children, iter_expr, iter_stmts
from ..types import Access, DataType

#: unary functions whose derivative is zero almost everywhere: their results carry no gradient
ZERO_UNOPS = frozenset({UnOp.FLOOR, UnOp.CEIL, UnOp.ROUND, UnOp.TRUNC, UnOp.SIGN})


def refuse(program: Program, path: str, node: object, message: str, fix: str) -> ValidationError:
    """The error for a construct the adjoint cannot be generated for; ``path`` (``body[3].then[0]``) names
    the statement, which the front end maps back to the kernel's source line."""
    text = expr_to_text(node) if isinstance(node, EXPR_NODES) else type(node).__name__.lower()
    return ValidationError(program.name, [ValidationIssue("adjoint", path, text, message, fix)])


EXPR_NODES = (Lit, Var, Load, BufLen, Builtin, Unary, Binary, Select, Cast, Bitcast, Fma, Atomic, VecNew, Extract,
              Subgroup)


def walk(stmts: list[Stmt], path: str = "body") -> Iterator[tuple[Stmt, str, bool]]:
    """Every statement with its path and whether it is inside a loop body."""
    def go(body: list[Stmt], at: str, in_loop: bool) -> Iterator[tuple[Stmt, str, bool]]:
        for k, s in enumerate(body):
            p = f"{at}[{k}]"
            yield s, p, in_loop
            if isinstance(s, If):
                yield from go(s.then, p + ".then", in_loop)
                yield from go(s.otherwise, p + ".otherwise", in_loop)
            elif isinstance(s, (For, While)):
                yield from go(s.body, p + ".body", True)
    yield from go(stmts, path, False)


def assigned_in(stmts: list[Stmt]) -> set[str]:
    """Names assigned (``Assign``) anywhere in ``stmts``."""
    return {s.name for s in iter_stmts(stmts) if isinstance(s, Assign)}


def declared_in(stmts: list[Stmt]) -> set[str]:
    out: set[str] = set()
    for s in iter_stmts(stmts):
        if isinstance(s, (Let, VarDecl)):
            out.add(s.name)
        elif isinstance(s, For):
            out.add(s.var)
    return out


def reads(e: Expr | None) -> set[str]:
    return set() if e is None else {x.name for x in iter_expr(e) if isinstance(x, Var)}


class Facts:
    """Types and activity of a (uniquely named) forward program, after :func:`check`."""

    def __init__(self, program: Program) -> None:
        self.program = program
        self.buffers = {b.name: b for b in program.buffers}
        #: float In arrays (their gradients are the adjoint's outputs) and float Out arrays (seeded)
        self.diff_in = [b.name for b in program.sorted_buffers if b.access is Access.READ and b.dtype.is_float]
        self.diff_out = [b.name for b in program.sorted_buffers if b.access is Access.WRITE and b.dtype.is_float]
        self.dtype: dict[str, DataType] = {}
        self.active: set[str] = set()
        for s in iter_stmts(program.body):
            if isinstance(s, VarDecl):
                self.dtype[s.name] = s.dtype
        changed = True
        while changed:  # types of lets (in program order) and the activity fixpoint (loops feed back)
            changed = False
            for s in iter_stmts(program.body):
                if isinstance(s, Let) and s.name not in self.dtype:
                    self.dtype[s.name] = self.type_of(s.value)
                    changed = True
                if isinstance(s, For) and s.var not in self.dtype:
                    self.dtype[s.var] = self.type_of(s.start)
                    changed = True
                value = s.value if isinstance(s, (Let, VarDecl, Assign)) else None
                if value is not None and s.name not in self.active and self.is_active(value):  # type: ignore[union-attr]
                    self.active.add(s.name)  # type: ignore[union-attr]
                    changed = True

    def type_of(self, e: Expr) -> DataType:
        if isinstance(e, (Lit, Cast, Bitcast)):
            return e.dtype
        if isinstance(e, Var):
            return self.dtype.get(e.name, DataType.U32)
        if isinstance(e, (Load, Atomic)):
            return self.buffers[e.buffer].dtype if e.buffer in self.buffers else DataType.U32
        if isinstance(e, (BufLen, Builtin)):
            return DataType.U32
        if isinstance(e, Unary):
            return self.type_of(e.arg)
        if isinstance(e, Binary):
            return DataType.BOOL if e.op in COMPARE_BINOPS or e.op in LOGIC_BINOPS else self.type_of(e.lhs)
        if isinstance(e, Select):
            return self.type_of(e.if_true)
        if isinstance(e, Fma):
            return self.type_of(e.a)
        return DataType.U32  # vectors and subgroups are refused before this matters

    def is_active(self, e: Expr) -> bool:
        """Whether ``e`` is a float value with a (possibly) nonzero derivative along a float In array."""
        if not self.type_of(e).is_float:
            return False
        if isinstance(e, Var):
            return e.name in self.active
        if isinstance(e, Load):
            return e.buffer in self.diff_in
        if isinstance(e, Unary) and e.op in ZERO_UNOPS:
            return False
        if isinstance(e, (Unary, Binary, Select, Cast, Fma)):
            kids = expr_children(e)[1:] if isinstance(e, Select) else expr_children(e)
            return any(self.is_active(k) for k in kids)
        return False


def check(program: Program) -> None:
    """Refuse, with the statement's path, what the adjoint transform cannot differentiate."""
    def no(path: str, node: object, message: str, fix: str) -> ValidationError:
        return refuse(program, path, node, message, fix)

    facts = Facts(program)
    stored = False
    allowed: set[str] = set()
    for s, path, _ in walk(program.body):
        for e in expr_children(s):
            for x in iter_expr(e):
                _check_expr(no, facts, x, path)
        top = path.count("[") == 1
        if isinstance(s, While):
            raise no(path, s, "a `while` loop has a data-dependent trip count, which the adjoint cannot reverse",
                     "use `for k in range(n)` with n fixed at launch (a scalar parameter, len(x) or a constant)")
        if isinstance(s, (Break, Continue)):
            raise no(path, s, f"`{type(s).__name__.lower()}` makes a loop's trip count data dependent",
                     "run every trip and guard its body with `if` instead")
        if isinstance(s, Barrier):
            raise no(path, s, "barriers are not differentiable", "write the kernel without vyre.barrier()")
        if isinstance(s, Eval):
            raise no(path, s, "atomics are not differentiable", "write each output element from one thread")
        if isinstance(s, If) and top and _is_guard(s) and not stored:
            allowed.add(path + ".then[0]")
        if isinstance(s, Return) and path not in allowed:
            raise no(path, s, "`return` is differentiable only as `if ...: return` at the top of the kernel, "
                     "before any store", "guard the rest of the kernel with `if` instead")
        if isinstance(s, Store):
            stored = True
        if isinstance(s, If) and any(isinstance(t, Store) for t in iter_stmts(s.then + s.otherwise)):
            stored = True
        if isinstance(s, For):
            if any(isinstance(t, Store) for t in iter_stmts(s.body)):
                stored = True
            changed = assigned_in(s.body) & reads(s.end)
            if changed:
                raise no(path, s, f"the loop's bound reads {sorted(changed)}, which its body changes: the trip "
                         "count is not fixed when the loop starts", "compute the bound before the loop")
        if isinstance(s, (Let, VarDecl)) and s.name in facts.active and facts.dtype.get(s.name, DataType.F32).is_vector:
            raise no(path, s, "vector values are not differentiable", "use scalar f32 values")

    for b in program.sorted_buffers:
        if b.access is Access.READ_WRITE:
            raise no(f"buffers[{b.binding}]", b, f"the array {b.name!r} is read and written (InOut): its "
                     "adjoint would need the values it had before the kernel overwrote them",
                     "read it from an In array and write the result into a separate Out array")
        if b.dtype.is_float and b.dtype is not DataType.F32:
            raise no(f"buffers[{b.binding}]", b, f"the array {b.name!r} is {b.dtype.value}: only f32 arrays are "
                     "differentiable", "use f32 arrays in a differentiable kernel")
    if program.workgroup:
        raise no("workgroup[0]", program.workgroup[0], "workgroup arrays (vyre.shared) and barriers are not "
                 "differentiable", "write the kernel without vyre.shared: one thread per output element")

def _check_expr(no: object, facts: Facts, x: Expr, path: str) -> None:
    fail = no  # (path, node, message, fix) -> ValidationError
    assert callable(fail)
    if isinstance(x, (Atomic, Subgroup)):
        raise fail(path, x, f"{'atomics' if isinstance(x, Atomic) else 'subgroup operations'} are not "
                   "differentiable", "write each output element from one thread, without atomics")
    if isinstance(x, (VecNew, Extract)):
        raise fail(path, x, "vector values are not differentiable", "use scalar f32 values")
    if isinstance(x, Cast) and not x.dtype.is_float and facts.is_active(x.arg):
        raise fail(path, x, f"the cast to {x.dtype.value} of a value that depends on a differentiated array "
                   "would carry no gradient (an integer path)",
                   "say that the derivative through it is zero: cast vyre.floor(v) (or trunc, round) instead of v")
    if isinstance(x, Bitcast) and facts.is_active(x.arg):
        raise fail(path, x, "a bitcast of a value that depends on a differentiated array is not differentiable",
                   "compute the value without reinterpreting its bits")
    if isinstance(x, BufLen) and x.buffer in facts.buffers and facts.buffers[x.buffer].access is Access.WRITE \
            and x.buffer not in facts.diff_out:
        raise fail(path, x, "the length of an integer Out array is not available to the adjoint",
                   "pass the length as a scalar parameter, or use the length of an In array")
    if isinstance(x, Load) and facts.buffers.get(x.buffer) is not None and \
            facts.buffers[x.buffer].access is Access.WRITE:
        raise fail(path, x, "reading an Out array is not differentiable", "keep the value in a local instead")


def _is_guard(s: If) -> bool:
    return len(s.then) == 1 and isinstance(s.then[0], Return) and not s.otherwise


def is_guard(s: Stmt) -> bool:
    """``if c: return`` (the launch's bounds guard, or the user's early return before any store)."""
    return isinstance(s, If) and _is_guard(s)


__all__ = ["Facts", "check", "refuse", "walk", "assigned_in", "declared_in", "reads", "is_guard", "ZERO_UNOPS"]
