"""Program -> WGSL text.

The IR passes (:func:`vyre.ir.passes.wgsl_pipeline`) first remove the WGSL quirks
(bool storage, nested atomics, shift amounts, constant folding); what is left maps onto
WGSL almost one node to one template. Expressions are rendered by
:class:`vyre.lower.exprs.ExprRenderer`, statements here (:class:`_StmtRenderer`, one
``visit_<Stmt class>`` each) into a tree of items that the jinja2 templates in
``vyre/lower/templates`` turn into the module, the statement blocks and the helper functions.

Names: user variables become ``v_<name>`` (a re-declared name ``v<n>_<name>``), buffers
``b_<name>``, workgroup arrays ``w_<name>``; names that are not ASCII identifiers are
hex-encoded (``vx_<hex>``). Everything the lowering invents starts with ``_``.
"""

from __future__ import annotations

import itertools
import math
import re
from typing import Any, NamedTuple

from ..errors import LoweringError
from ..ir.nodes import (
    STMT_TYPES,
    Assign,
    Atomic,
    AtomicOp,
    Barrier,
    BarrierScope,
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
from ..ir.program import Program
from ..ir.subgroups import program_uses_subgroups
from ..ir.text import stmt_head
from ..ir.traverse import Visitor, iter_exprs, iter_stmts
from ..ir.trips import unrolled
from ..ir.types import DataType
from .exprs import ATOMIC_FN, ExprRenderer
from .jinja import template_env
from .layout import bare, uniform_binding_nbytes
from .literals import NONFINITE_HELPERS, literal
from .state import LoweringState
from .trap import COUNTER as TRAP_COUNTER
from .trap import DECLARATION as TRAP_DECLARATION
from .trap import EXIT_LINE, count_lines, entry_line, trap_code

LOWERING_VERSION = "vyre-lower-7"
#: the first words of the comment line a shader using the 64-bit types carries (after the header line):
#: checkers of standard WebGPU (Tint, browsers) skip or refuse such shaders by it
NONSTANDARD_MARK = "// not standard WebGPU: "
ENTRY_POINT = "main"

#: one rendered statement for the templates: {"k": "line" | "if" | "loop" | "for" | "while", ...}
Item = dict[str, Any]


def _line(text: str) -> Item:
    return {"k": "line", "text": text}


class _StmtRenderer(Visitor[None], covers=STMT_TYPES):
    """``visit_<Stmt class>(s, out)`` appends the items of ``s`` to ``out``."""

    def __init__(self, st: LoweringState):
        self.st = st
        self.ex = ExprRenderer(st)

    def block(self, stmts: list[Stmt], push: bool = True) -> list[Item]:
        if push:
            self.st.push()
        out: list[Item] = []
        try:
            for s in stmts:
                self.visit(s, out)
        finally:
            if push:
                self.st.pop()
        return out

    # ---- atomics (the whole value of a let or eval) ----
    def atomic(self, e: Atomic, out: list[Item]) -> str:
        """Emit ``e``; return the WGSL expression of its old value."""
        t = self.st.type(e)
        a = self.st.array(e.buffer, e)
        i = self.ex.index(e.index)
        if e.op is AtomicOp.LOAD:
            return f"atomicLoad(&{a.wgsl}[{i}])"
        if e.value is None:
            self.st.fail(f"atomic {e.op.value} needs a value", "pass the operand", e)
        v = self.ex.visit(e.value)
        if e.op is not AtomicOp.COMPARE_EXCHANGE:
            return f"{ATOMIC_FN[e.op]}(&{a.wgsl}[{i}], {v})"
        if e.expected is None:
            self.st.fail("compare_exchange needs an expected value", "pass expected=...", e)
        # WGSL only has a weak compare-exchange: retry while it fails spuriously
        n = self.st.fresh()
        x = self.ex.visit(e.expected)
        out.append(_line(f"let _i{n} = {i};"))
        out.append(_line(f"let _e{n} = {x};"))
        out.append(_line(f"let _v{n} = {v};"))
        out.append(_line(f"var _o{n}: {t.value};"))
        out.append({
            "k": "loop",
            "body": [
                _line(f"let _r{n} = atomicCompareExchangeWeak(&{a.wgsl}[_i{n}], _e{n}, _v{n});"),
                {"k": "if", "cond": f"_r{n}.exchanged || _r{n}.old_value != _e{n}",
                 "then": [_line(f"_o{n} = _r{n}.old_value;"), _line("break;")], "otherwise": []},
            ],
        })
        return f"_o{n}"

    # ---- statements ----
    def visit_Let(self, s: Let, out: list[Item]) -> None:
        t = self.st.type(s.value)
        if isinstance(s.value, Atomic):
            value = self.atomic(s.value, out)
        else:
            value = bare(self.ex.visit(s.value))
        out.append(_line(f"let {self.st.declare(s.name, t, False)}: {t.value} = {value};"))

    def visit_VarDecl(self, s: VarDecl, out: list[Item]) -> None:
        d = s.dtype
        if s.value is None:
            out.append(_line(f"var {self.st.declare(s.name, d, True)}: {d.value};"))
            return
        t = self.st.type(s.value)
        if t != d:
            self.st.fail(f"variable {s.name!r} is {d.value} but is initialised with {t.value}",
                         f"cast the value with .cast('{d.value}')", s)
        value = bare(self.ex.visit(s.value))  # typed just above
        out.append(_line(f"var {self.st.declare(s.name, d, True)}: {d.value} = {value};"))

    def visit_Assign(self, s: Assign, out: list[Item]) -> None:
        w, mutable = self.st.lookup(s.name, s)
        if not mutable:
            self.st.fail(f"{s.name!r} is immutable", f"declare {s.name!r} with b.var(...) to assign to it", s)
        want = self.st.var_type(s.name, s)
        t = self.st.type(s.value)
        if t != want:
            self.st.fail(f"assigning {t.value} to {s.name!r} of type {want.value}",
                         f"cast the value to {want.value}", s)
        out.append(_line(f"{w} = {bare(self.ex.visit(s.value))};"))  # typed just above

    def visit_Store(self, s: Store, out: list[Item]) -> None:
        a = self.st.array(s.buffer, s)
        if a.buffer is not None and not a.writable:
            self.st.fail(f"store into {a.buffer.access.value} buffer {s.buffer!r}",
                         f"declare {s.buffer!r} with access='read_write' or 'write'", s)
        t = self.st.type(s.value)
        if t != a.dtype:
            self.st.fail(f"storing {t.value} into {s.buffer!r} of type {a.dtype.value}",
                         f"cast the value with .cast('{a.dtype.value}')", s)
        it = self.st.type(s.index)
        if it not in (DataType.U32, DataType.I32):
            self.st.fail(f"an index must be u32 or i32, found {it.value}", "cast the index with .cast('u32')", s)
        i, v = self.ex.index(s.index), bare(self.ex.visit(s.value))
        if a.atomic:
            out.append(_line(f"atomicStore(&{a.wgsl}[{i}], {v});"))
        else:
            out.append(_line(f"{a.wgsl}[{i}] = {v};"))

    def cond(self, e: Expr, node: Node) -> str:
        if self.st.type(e) is not DataType.BOOL:
            self.st.fail("a condition must be bool", "compare the value, e.g. (x != 0)", node)
        return bare(self.ex.visit(e))  # typed just above

    def visit_If(self, s: If, out: list[Item]) -> None:
        c = self.cond(s.cond, s)
        out.append({"k": "if", "cond": c, "then": self.block(s.then), "otherwise": self.block(s.otherwise)})

    def visit_For(self, s: For, out: list[Item]) -> None:
        t = self.st.type(s.start)
        if t.is_vector or not t.is_numeric:
            self.st.fail(f"a for loop counts with an integer or float scalar, found {t.value}",
                         "use u32 or i32 bounds", s)
        if self.st.type(s.end) != t:
            self.st.fail(f"for loop bounds differ: {t.value} and {self.st.type(s.end).value}",
                         "cast both bounds to one type", s)
        start, end = self.ex.visit(s.start), self.ex.visit(s.end)  # typed just above
        step = abs(s.step)
        step_lit = literal(t, float(step) if t.is_float else step)
        self.st.push()
        try:
            k = self.st.declare(s.var, t, False)
            body = self.block(s.body, push=False)
        finally:
            self.st.pop()
        cmp, upd = ("<", "+=") if s.step >= 0 else (">", "-=")
        if not unrolled(s):  # trapped only when the loop wants an iteration past the cap: k + step < end
            body = self.trap(s, out, f"{start} {cmp} {end}", f"({k} {upd[0]} {step_lit}) {cmp} {end}") + body
        out.append({"k": "for", "init": f"var {k}: {t.value} = {start}", "cond": f"{k} {cmp} {end}",
                    "cont": f"{k} {upd} {step_lit}", "body": body})
        if self.st.loop_cap is not None and not unrolled(s):
            out.append(_line(EXIT_LINE))

    def visit_While(self, s: While, out: list[Item]) -> None:
        c = self.cond(s.cond, s)
        out.append({"k": "while", "cond": c, "body": self.trap(s, out, c) + self.block(s.body)})
        if self.st.loop_cap is not None:
            out.append(_line(EXIT_LINE))

    def trap(self, s: For | While, out: list[Item], first: str, more: str | None = None) -> list[Item]:
        """The loop trap for a loop llvmpipe counts (nothing without a loop cap): the check before the loop
        (appended to ``out``: the cap is already reached and ``first``, the condition of its first iteration,
        holds) and the lines that start its body (returned; ``more``: the condition that the loop runs another
        iteration after this one, where it is known)."""
        cap = self.st.loop_cap
        if cap is None:
            return []
        self.st.trap_loops.append(stmt_head(s))
        code = trap_code(self.st.original.fingerprint, len(self.st.trap_loops))
        out.append(_line(entry_line(cap, code, first)))
        return [_line(text) for text in count_lines(cap, code, more)]

    def visit_Break(self, s: Break, out: list[Item]) -> None:
        out.append(_line("break;"))

    def visit_Continue(self, s: Continue, out: list[Item]) -> None:
        out.append(_line("continue;"))

    def visit_Return(self, s: Return, out: list[Item]) -> None:
        out.append(_line("return;"))

    def visit_Barrier(self, s: Barrier, out: list[Item]) -> None:
        out.append(_line("storageBarrier();" if s.scope is BarrierScope.STORAGE else "workgroupBarrier();"))

    def visit_Eval(self, s: Eval, out: list[Item]) -> None:
        if isinstance(s.value, Atomic):
            value = self.atomic(s.value, out)
            if s.value.op is AtomicOp.COMPARE_EXCHANGE:
                return
        else:
            value = bare(self.ex.root(s.value))
        out.append(_line(f"_ = {value};"))


def _module(st: LoweringState) -> dict[str, Any]:
    """The template context of the whole shader module."""
    wx, wy, wz = st.program.workgroup_size
    if min(wx, wy, wz) < 1:
        st.fail(f"workgroup_size {st.program.workgroup_size} has a zero or negative dimension",
                "use sizes >= 1, e.g. (64, 1, 1)")
    decls = st.decl_lines()
    body = _StmtRenderer(st).block(st.program.body, push=False)
    name = re.sub(r"[^A-Za-z0-9_.\-]", "?", st.original.name)
    n_buffers = len(st.program.buffers)
    return {
        "version": LOWERING_VERSION,
        "name": name,
        "f16": program_uses_f16(st.original),
        "wide": ", ".join(sorted(program_wide_features(st.original))),
        "subgroups": program_uses_subgroups(st.original),
        "n_lens": max(1, math.ceil(n_buffers / 4)),
        "decls": decls,
        "helpers": [st.helpers[k] for k in sorted(st.helpers)],
        "wx": wx, "wy": wy, "wz": wz, "invocations": wx * wy * wz,
        "use_wgid": "wgid" in st.builtins,
        "use_gid": "gid" in st.builtins,
        "use_gidx": "gidx" in st.builtins,
        "use_sgid": "sgid" in st.builtins,
        "use_sgsize": "sgsize" in st.builtins,
        "entry_point": ENTRY_POINT,
        "body": body,
        "trap": bool(st.trap_loops),
        "trap_declaration": TRAP_DECLARATION,
        "trap_counter": TRAP_COUNTER,
    }


def program_uses_f16(program: Program) -> bool:
    """True when any type in the program (declarations, literals, casts, ...) involves f16.
    Types live in the ``dtype`` field of declarations and nodes (tests/ir/test_traverse.py checks
    that no other field holds one)."""
    nodes = itertools.chain(program.buffers, program.workgroup, iter_stmts(program.body), iter_exprs(program.body))
    return any(isinstance(d := getattr(n, "dtype", None), DataType) and d.uses_f16 for n in nodes)


def program_wide_features(program: Program) -> frozenset[str]:
    """The device features the program's 64-bit types need (``shader-f64``, ``shader-int64``): not core
    WebGPU, wgpu-native's extensions."""
    nodes = itertools.chain(program.buffers, program.workgroup, iter_stmts(program.body), iter_exprs(program.body))
    return frozenset(str(d.feature) for n in nodes
                     if isinstance(d := getattr(n, "dtype", None), DataType) and d.is_64bit)


class Rendered(NamedTuple):
    wgsl: str
    atomic_arrays: frozenset[str]  # buffers and workgroup arrays declared atomic<T>
    uses_f16: bool
    trap_loops: tuple[str, ...] = ()  # the loops the trap instruments, by number - 1 (empty: no trap)


def render(program: Program, loop_cap: int | None = None) -> Rendered:
    """Lower ``program`` to WGSL text, without running the validator (``lower`` does that). ``loop_cap``:
    instrument the loops llvmpipe counts with the loop trap (vyre/lower/trap.py)."""
    try:
        st = LoweringState(program, loop_cap)
        ctx = _module(st)
    except RecursionError:
        raise LoweringError(
            f"program {program.name!r}: an expression is nested too deeply to lower",
            fix="bind intermediate results to lets (b.let(...)) to keep expressions shallow",
        ) from None
    template = template_env().get_template("module.wgsl.j2")
    wgsl = template.render(**ctx)
    # Literals are rendered without the state: declare the helpers their text calls (NaN, infinities).
    missing = [h for h in NONFINITE_HELPERS if f"{h}(" in wgsl and h not in st.helpers]
    if missing:
        for h in missing:
            st.helper(h, "nonfinite", dtype=NONFINITE_HELPERS[h])
        ctx["helpers"] = [st.helpers[k] for k in sorted(st.helpers)]
        wgsl = template.render(**ctx)
    return Rendered(wgsl, st.atomics, bool(ctx["f16"]), tuple(st.trap_loops))


__all__ = [
    "LOWERING_VERSION", "NONSTANDARD_MARK", "ENTRY_POINT", "Rendered", "render", "program_uses_f16",
    "program_wide_features", "uniform_binding_nbytes", "template_env",
]
