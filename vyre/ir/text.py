"""Readable text form of programs and nodes, used in error messages and docs."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from .decls import BufferDecl, WorkgroupDecl
from .nodes import (
    STMT_TYPES,
    Assign,
    Atomic,
    Barrier,
    Binary,
    BinOp,
    Bitcast,
    Break,
    BufLen,
    Builtin,
    Cast,
    Continue,
    Eval,
    Extract,
    Fma,
    For,
    If,
    Let,
    Lit,
    Load,
    Node,
    Return,
    Select,
    Stmt,
    Store,
    Subgroup,
    Unary,
    Var,
    VarDecl,
    VecNew,
    While,
)
from .traverse import NODE_TYPES, Visitor

if TYPE_CHECKING:
    from .program import Program

_BIN_SYM = {
    BinOp.ADD: "+", BinOp.SUB: "-", BinOp.MUL: "*", BinOp.DIV: "/", BinOp.REM: "%",
    BinOp.BIT_AND: "&", BinOp.BIT_OR: "|", BinOp.BIT_XOR: "^", BinOp.SHL: "<<", BinOp.SHR: ">>",
    BinOp.EQ: "==", BinOp.NE: "!=", BinOp.LT: "<", BinOp.LE: "<=", BinOp.GT: ">", BinOp.GE: ">=",
    BinOp.AND: "&&", BinOp.OR: "||",
}


_SUFFIX = {"u32": "u", "i32": "i", "f16": "h", "f64": "lf", "i64": "li", "u64": "lu"}


class _Text(Visitor[str], covers=NODE_TYPES):
    """Expressions as text; statements as their one-line head (block bodies elided)."""

    # ---- expressions ----
    def visit_Lit(self, e: Lit) -> str:
        v: object = e.value
        if isinstance(v, bool):
            return "true" if v else "false"
        if isinstance(v, float) and not math.isfinite(v):
            v = "nan" if math.isnan(v) else ("inf" if v > 0 else "-inf")
        return f"{v}{_SUFFIX.get(e.dtype.value, '')}"

    def visit_Var(self, e: Var) -> str:
        return e.name

    def visit_Load(self, e: Load) -> str:
        return f"{e.buffer}[{self.visit(e.index)}]"

    def visit_BufLen(self, e: BufLen) -> str:
        return f"len({e.buffer})"

    def visit_Builtin(self, e: Builtin) -> str:
        if e.axis is None:
            return e.name.value
        return e.name.value + "." + ("xyz"[e.axis] if 0 <= e.axis < 3 else str(e.axis))

    def visit_Unary(self, e: Unary) -> str:
        return f"{e.op.value}({self.visit(e.arg)})"

    def visit_Binary(self, e: Binary) -> str:
        sym = _BIN_SYM.get(e.op)
        if sym is None:
            return f"{e.op.value}({self.visit(e.lhs)}, {self.visit(e.rhs)})"
        return f"({self.visit(e.lhs)} {sym} {self.visit(e.rhs)})"

    def visit_Select(self, e: Select) -> str:
        return f"select({self.visit(e.cond)}, {self.visit(e.if_true)}, {self.visit(e.if_false)})"

    def visit_Cast(self, e: Cast) -> str:
        return f"cast<{e.dtype.value}>({self.visit(e.arg)})"

    def visit_Bitcast(self, e: Bitcast) -> str:
        return f"bitcast<{e.dtype.value}>({self.visit(e.arg)})"

    def visit_Fma(self, e: Fma) -> str:
        return f"fma({self.visit(e.a)}, {self.visit(e.b)}, {self.visit(e.c)})"

    def visit_Atomic(self, e: Atomic) -> str:
        args = [f"{e.buffer}[{self.visit(e.index)}]"]
        if e.expected is not None:
            args.append(self.visit(e.expected))
        if e.value is not None:
            args.append(self.visit(e.value))
        return f"atomic_{e.op.value}({', '.join(args)})"

    def visit_VecNew(self, e: VecNew) -> str:
        return f"{e.dtype.value}({', '.join(self.visit(a) for a in e.args)})"

    def visit_Extract(self, e: Extract) -> str:
        return f"{self.visit(e.arg)}.{'xyzw'[e.lane] if 0 <= e.lane < 4 else e.lane}"

    def visit_Subgroup(self, e: Subgroup) -> str:
        lane = "" if e.lane is None else f", {self.visit(e.lane)}"
        return f"subgroup_{e.op.value}({self.visit(e.value)}{lane})"

    # ---- statements (one line each) ----
    def visit_Let(self, s: Let) -> str:
        return f"let {s.name} = {self.visit(s.value)}"

    def visit_VarDecl(self, s: VarDecl) -> str:
        init = "" if s.value is None else f" = {self.visit(s.value)}"
        return f"var {s.name}: {s.dtype.value}{init}"

    def visit_Assign(self, s: Assign) -> str:
        return f"{s.name} = {self.visit(s.value)}"

    def visit_Store(self, s: Store) -> str:
        return f"{s.buffer}[{self.visit(s.index)}] = {self.visit(s.value)}"

    def visit_If(self, s: If) -> str:
        return f"if {self.visit(s.cond)} {{...}}" + (" else {...}" if s.otherwise else "")

    def visit_For(self, s: For) -> str:
        step = "" if s.step == 1 else f" step {s.step}"
        return f"for {s.var} in {self.visit(s.start)}..{self.visit(s.end)}{step} {{...}}"

    def visit_While(self, s: While) -> str:
        return f"while {self.visit(s.cond)} {{...}}"

    def visit_Break(self, s: Break) -> str:
        return "break"

    def visit_Continue(self, s: Continue) -> str:
        return "continue"

    def visit_Return(self, s: Return) -> str:
        return "return"

    def visit_Barrier(self, s: Barrier) -> str:
        return f"barrier({s.scope.value})"

    def visit_Eval(self, s: Eval) -> str:
        return self.visit(s.value)


_TEXT = _Text()


def decl_text(d: BufferDecl | WorkgroupDecl) -> str:
    """One-line form of a buffer or workgroup array declaration."""
    if isinstance(d, BufferDecl):
        n = "runtime" if d.count is None else d.count
        return f"@binding({d.binding}) {d.name}: array<{d.dtype.value}, {n}> ({d.access.value})"
    return f"workgroup {d.name}: array<{d.dtype.value}, {d.count}>"


def expr_to_text(e: Node) -> str:
    """Text of an expression (given a statement or a declaration: its one-line form)."""
    if isinstance(e, (BufferDecl, WorkgroupDecl)):
        return decl_text(e)
    return _TEXT.visit(e)


def stmt_head(s: Node) -> str:
    """One-line form of a statement (block bodies elided) or of a declaration."""
    return expr_to_text(s)


class _Lines(Visitor[None], covers=STMT_TYPES):
    """A statement block as indented lines."""

    def __init__(self, out: list[str]):
        self.out = out
        self.indent = 0

    def block(self, stmts: list[Stmt]) -> None:
        self.indent += 1
        for s in stmts:
            self.visit(s)
        self.indent -= 1

    def line(self, text: str) -> None:
        self.out.append("    " * self.indent + text)

    def visit_If(self, s: If) -> None:
        self.line(f"if {_TEXT.visit(s.cond)} {{")
        self.block(s.then)
        if s.otherwise:
            self.line("} else {")
            self.block(s.otherwise)
        self.line("}")

    def loop(self, s: For | While) -> None:
        self.line(f"{_TEXT.visit(s).removesuffix(' {...}')} {{")
        self.block(s.body)
        self.line("}")

    visit_For = visit_While = loop

    def simple(self, s: Stmt) -> None:
        self.line(_TEXT.visit(s))

    visit_Let = visit_VarDecl = visit_Assign = visit_Store = visit_Eval = simple
    visit_Break = visit_Continue = visit_Return = visit_Barrier = simple


def program_to_text(p: Program) -> str:
    x, y, z = p.workgroup_size
    grid_from = f" @grid_from({p.grid_from})" if p.grid_from is not None else ""
    out = [f"program {p.name} @workgroup_size({x}, {y}, {z}){grid_from} {{"]
    for b in p.sorted_buffers:
        out.append("    " + decl_text(b))
    for w in p.workgroup:
        out.append("    " + decl_text(w))
    _Lines(out).block(p.body)
    out.append("}")
    return "\n".join(out)


__all__ = ["expr_to_text", "stmt_head", "decl_text", "program_to_text"]
