"""Readable text form of programs and nodes, used in error messages and docs."""

from __future__ import annotations

import math

from .nodes import BinOp

_BIN_SYM = {
    BinOp.ADD: "+", BinOp.SUB: "-", BinOp.MUL: "*", BinOp.DIV: "/", BinOp.REM: "%",
    BinOp.BIT_AND: "&", BinOp.BIT_OR: "|", BinOp.BIT_XOR: "^", BinOp.SHL: "<<", BinOp.SHR: ">>",
    BinOp.EQ: "==", BinOp.NE: "!=", BinOp.LT: "<", BinOp.LE: "<=", BinOp.GT: ">", BinOp.GE: ">=",
    BinOp.AND: "&&", BinOp.OR: "||",
}


_SUFFIX = {"u32": "u", "i32": "i", "f16": "h"}


def _lit(e) -> str:
    v = e.value
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float) and not math.isfinite(v):
        v = "nan" if math.isnan(v) else ("inf" if v > 0 else "-inf")
    return f"{v}{_SUFFIX.get(e.dtype.value, '')}"


def expr_to_text(e) -> str:
    k = getattr(e, "kind", None)
    if k == "lit":
        return _lit(e)
    if k == "var" and not hasattr(e, "dtype"):  # a VarDecl statement shares the kind "var"
        return e.name
    if k == "load":
        return f"{e.buffer}[{expr_to_text(e.index)}]"
    if k == "len":
        return f"len({e.buffer})"
    if k == "builtin":
        return e.name.value + ("" if e.axis is None else "." + ("xyz"[e.axis] if 0 <= e.axis < 3 else str(e.axis)))
    if k == "unary":
        return f"{e.op.value}({expr_to_text(e.arg)})"
    if k == "binary":
        sym = _BIN_SYM.get(e.op)
        if sym is None:
            return f"{e.op.value}({expr_to_text(e.lhs)}, {expr_to_text(e.rhs)})"
        return f"({expr_to_text(e.lhs)} {sym} {expr_to_text(e.rhs)})"
    if k == "select":
        return f"select({expr_to_text(e.cond)}, {expr_to_text(e.if_true)}, {expr_to_text(e.if_false)})"
    if k in ("cast", "bitcast"):
        return f"{k}<{e.dtype.value}>({expr_to_text(e.arg)})"
    if k == "fma":
        return f"fma({expr_to_text(e.a)}, {expr_to_text(e.b)}, {expr_to_text(e.c)})"
    if k == "atomic":
        args = [f"{e.buffer}[{expr_to_text(e.index)}]"]
        if e.expected is not None:
            args.append(expr_to_text(e.expected))
        if e.value is not None:
            args.append(expr_to_text(e.value))
        return f"atomic_{e.op.value}({', '.join(args)})"
    if k == "vec":
        return f"{e.dtype.value}({', '.join(expr_to_text(a) for a in e.args)})"
    if k == "extract":
        return f"{expr_to_text(e.arg)}.{'xyzw'[e.lane] if 0 <= e.lane < 4 else e.lane}"
    return stmt_head(e)


def stmt_head(s) -> str:
    """One-line form of a statement (block bodies elided)."""
    k = getattr(s, "kind", None)
    if k == "let":
        return f"let {s.name} = {expr_to_text(s.value)}"
    if k == "var":
        init = "" if s.value is None else f" = {expr_to_text(s.value)}"
        return f"var {s.name}: {s.dtype.value}{init}"
    if k == "assign":
        return f"{s.name} = {expr_to_text(s.value)}"
    if k == "store":
        return f"{s.buffer}[{expr_to_text(s.index)}] = {expr_to_text(s.value)}"
    if k == "if":
        return f"if {expr_to_text(s.cond)} {{...}}" + (" else {...}" if s.otherwise else "")
    if k == "for":
        step = "" if s.step == 1 else f" step {s.step}"
        return f"for {s.var} in {expr_to_text(s.start)}..{expr_to_text(s.end)}{step} {{...}}"
    if k == "while":
        return f"while {expr_to_text(s.cond)} {{...}}"
    if k in ("break", "continue", "return"):
        return k
    if k == "barrier":
        return f"barrier({s.scope.value})"
    if k == "eval":
        return expr_to_text(s.value)
    if hasattr(s, "binding"):
        n = "runtime" if s.count is None else s.count
        return f"@binding({s.binding}) {s.name}: array<{s.dtype.value}, {n}> ({s.access.value})"
    if hasattr(s, "count") and hasattr(s, "dtype"):
        return f"workgroup {s.name}: array<{s.dtype.value}, {s.count}>"
    return repr(s)


def _block(stmts, indent: int, out: list[str]) -> None:
    pad = "    " * indent
    for s in stmts:
        k = s.kind
        if k == "if":
            out.append(f"{pad}if {expr_to_text(s.cond)} {{")
            _block(s.then, indent + 1, out)
            if s.otherwise:
                out.append(f"{pad}}} else {{")
                _block(s.otherwise, indent + 1, out)
            out.append(f"{pad}}}")
        elif k in ("for", "while"):
            out.append(f"{pad}{stmt_head(s).removesuffix(' {...}')} {{")
            _block(s.body, indent + 1, out)
            out.append(f"{pad}}}")
        else:
            out.append(pad + stmt_head(s))


def program_to_text(p) -> str:
    x, y, z = p.workgroup_size
    out = [f"program {p.name} @workgroup_size({x}, {y}, {z}) {{"]
    for b in p.sorted_buffers:
        out.append("    " + stmt_head(b))
    for w in p.workgroup:
        out.append("    " + stmt_head(w))
    _block(p.body, 1, out)
    out.append("}")
    return "\n".join(out)


__all__ = ["expr_to_text", "stmt_head", "program_to_text"]
