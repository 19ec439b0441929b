"""Program -> WGSL text.

The IR passes (:func:`vyre.ir.passes.wgsl_pipeline`) first remove the WGSL quirks
(bool storage, nested atomics, shift amounts, constant folding); what is left maps onto
WGSL almost one node to one template. Expressions are rendered by small format tables
here; the module, the statement blocks and the helper functions are jinja2 templates
in ``vyre/lower/templates``.

Names: user variables become ``v_<name>`` (a re-declared name ``v<n>_<name>``), buffers
``b_<name>``, workgroup arrays ``w_<name>``; names that are not ASCII identifiers are
hex-encoded (``vx_<hex>``). Everything the lowering invents starts with ``_``.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import NamedTuple

from ..errors import LoweringError
from ..ir.nodes import STMT_TYPES, AtomicOp, BarrierScope, BinOp, BuiltinName, UnOp
from ..ir.passes import atomic_arrays, wgsl_pipeline
from ..ir.program import BufferDecl, Program
from ..ir.text import expr_to_text, stmt_head
from ..ir.types import Access, DataType
from ..ir.typing import TypeEnv, infer

LOWERING_VERSION = "vyre-lower-2"
ENTRY_POINT = "main"

_env = None


def template_env():
    """The jinja2 environment, created on first use."""
    global _env
    if _env is None:
        from jinja2 import Environment, PackageLoader, StrictUndefined

        _env = Environment(
            loader=PackageLoader("vyre.lower", "templates"), undefined=StrictUndefined, keep_trailing_newline=True
        )
    return _env


def _macros(name: str):
    return template_env().get_template(name).module


# --------------------------------------------------------------------------- names
_IDENT = re.compile(r"[A-Za-z0-9_]+")


def _mangle(prefix: str, name: str, n: int = 0) -> str:
    tag = "" if n == 0 else str(n)
    if _IDENT.fullmatch(name):
        return f"{prefix}{tag}_{name}"
    return f"{prefix}x{tag}_{name.encode('utf-8').hex()}"


def _bare(text: str) -> str:
    """Drop one pair of parentheses around the whole expression (for statement-level uses)."""
    if not (text.startswith("(") and text.endswith(")")):
        return text
    depth = 0
    for k, ch in enumerate(text):
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth == 0 and k != len(text) - 1:
                return text
    return text[1:-1]


def _is_atom(text: str) -> bool:
    """True for an identifier, or a call / indexing whose parentheses / brackets close at the end."""
    m = re.match(r"[A-Za-z_][A-Za-z0-9_<>]*", text)
    if m is None:
        return False
    rest = text[m.end():]
    if not rest:
        return True
    if rest[0] not in "([" or rest[-1] not in ")]":
        return False
    depth = 0
    for k, ch in enumerate(rest):
        depth += ch in "(["
        depth -= ch in ")]"
        if depth == 0 and k != len(rest) - 1:
            return False
    return True


def _tag(d: DataType) -> str:
    return d.value.replace("<", "").replace(">", "")


# --------------------------------------------------------------------------- tables
_UNARY_FN = {
    UnOp.ABS: "abs", UnOp.SQRT: "sqrt", UnOp.INVERSE_SQRT: "inverseSqrt", UnOp.EXP: "exp", UnOp.EXP2: "exp2",
    UnOp.LOG: "log", UnOp.LOG2: "log2", UnOp.SIN: "sin", UnOp.COS: "cos", UnOp.TAN: "tan", UnOp.TANH: "tanh",
    UnOp.FLOOR: "floor", UnOp.CEIL: "ceil", UnOp.ROUND: "round", UnOp.TRUNC: "trunc", UnOp.FRACT: "fract",
    UnOp.SIGN: "sign", UnOp.COUNT_ONES: "countOneBits", UnOp.REVERSE_BITS: "reverseBits",
    UnOp.COUNT_LEADING_ZEROS: "countLeadingZeros", UnOp.COUNT_TRAILING_ZEROS: "countTrailingZeros",
}
_BINARY_OP = {
    BinOp.ADD: "+", BinOp.SUB: "-", BinOp.MUL: "*", BinOp.DIV: "/", BinOp.REM: "%",
    BinOp.BIT_AND: "&", BinOp.BIT_OR: "|", BinOp.BIT_XOR: "^", BinOp.SHL: "<<", BinOp.SHR: ">>",
    BinOp.EQ: "==", BinOp.NE: "!=", BinOp.LT: "<", BinOp.LE: "<=", BinOp.GT: ">", BinOp.GE: ">=",
    BinOp.AND: "&&", BinOp.OR: "||",
}
_BINARY_FN = {BinOp.MIN: "min", BinOp.MAX: "max", BinOp.POW: "pow"}
_ATOMIC_FN = {
    AtomicOp.ADD: "atomicAdd", AtomicOp.SUB: "atomicSub", AtomicOp.MIN: "atomicMin", AtomicOp.MAX: "atomicMax",
    AtomicOp.AND: "atomicAnd", AtomicOp.OR: "atomicOr", AtomicOp.XOR: "atomicXor",
    AtomicOp.EXCHANGE: "atomicExchange",
}
_AXES = "xyzw"


@dataclass(frozen=True)
class _Array:
    """A buffer or workgroup array as the shader sees it."""

    name: str  # IR name
    wgsl: str  # WGSL identifier
    dtype: DataType  # element type after the passes (bool buffers are u32 here)
    buffer: BufferDecl | None  # None for workgroup arrays
    index: int  # position in binding order (buffers only)
    count: int | None
    atomic: bool

    @property
    def uniform(self) -> bool:
        return self.buffer is not None and self.buffer.access is Access.UNIFORM

    @property
    def writable(self) -> bool:
        return self.buffer is None or self.buffer.access.writable


# --------------------------------------------------------------------------- uniform layout
def _uniform_layout(dtype: DataType, count: int) -> tuple[str, int, str]:
    """(WGSL element type, array length, load-helper kind) of a uniform buffer.

    Uniform arrays need a 16-byte stride, so elements are packed into ``vec4`` rows
    exactly as the host lays them out (see ``DataType.element_nbytes``).
    """
    s, lanes = dtype.scalar, dtype.lanes
    n = max(count, 1)
    if s is DataType.F16:
        if lanes == 1:
            return "vec4<u32>", math.ceil(n / 8), "f16x1"
        if lanes == 2:
            return "vec4<u32>", math.ceil(n / 4), "f16x2"
        return "vec4<u32>", math.ceil(n / 2), f"f16x{lanes}"
    row = f"vec4<{s.value}>"
    if lanes == 1:
        return row, math.ceil(n / 4), "x1"
    if lanes == 2:
        return row, math.ceil(n / 2), "x2"
    return row, n, f"x{lanes}"


def uniform_binding_nbytes(decl: BufferDecl) -> int:
    """Bytes the WGSL declaration of a uniform buffer spans (a multiple of 16).

    The buffer bound there must be at least this large, which can exceed the host's
    ``storage_nbytes`` (e.g. one f32 is 4 bytes of data but a 16-byte ``vec4`` row)."""
    dtype = decl.dtype.storage_scalar if decl.dtype is DataType.BOOL else decl.dtype
    _, rows, _ = _uniform_layout(dtype, decl.count or 0)
    return 16 * rows


# --------------------------------------------------------------------------- the lowering
class _Lowering:
    def __init__(self, original: Program):
        self.original = original
        self.program = wgsl_pipeline(original)
        self.atomics = atomic_arrays(self.program)
        self.env = TypeEnv.for_program(self.program)
        self.names: list[dict[str, tuple[str, bool]]] = [{}]  # IR name -> (WGSL name, mutable)
        self.decl_count: dict[str, int] = {}
        self.helpers: dict[str, str] = {}
        self.builtins: set[str] = set()
        self.tmp = 0
        self.arrays: dict[str, _Array] = {}
        self._declare_arrays()

    # ---- errors / types ----
    def fail(self, message: str, fix: str, node=None):
        where = ""
        if node is not None:
            text = stmt_head(node) if isinstance(node, STMT_TYPES) else expr_to_text(node)
            where = f" (in `{text}`)"
        raise LoweringError(f"program {self.original.name!r}: {message}{where}", fix=fix)

    def type(self, e) -> DataType:
        problems: list = []
        t = infer(e, self.env, report=lambda *a: problems.append(a))
        if problems or t is None:
            path, node, rule, message, fix = problems[0] if problems else ("", e, "type", "untyped expression", "")
            self.fail(message, fix or "fix the expression's types", node if node is not None else e)
        return t

    # ---- declarations ----
    def _declare_arrays(self) -> None:
        p = self.program
        seen: set[str] = set()
        for k, b in enumerate(p.sorted_buffers):
            if b.name in seen:
                self.fail(f"buffer name {b.name!r} is declared twice", "give every buffer its own name")
            seen.add(b.name)
            self.arrays[b.name] = _Array(b.name, _mangle("b", b.name), b.dtype, b, k, b.count, b.name in self.atomics)
        bindings = [b.binding for b in p.buffers]
        if len(set(bindings)) != len(bindings):
            self.fail(f"binding numbers repeat: {sorted(bindings)}", "give every buffer its own binding number")
        for w in p.workgroup:
            if w.name in seen:
                self.fail(f"workgroup array {w.name!r} reuses a name", "give every buffer and workgroup array its own name")
            seen.add(w.name)
            if w.count < 1:
                self.fail(f"workgroup array {w.name!r} has count {w.count}", "use count >= 1")
            self.arrays[w.name] = _Array(w.name, _mangle("w", w.name), w.dtype, None, -1, w.count, w.name in self.atomics)
        declared = {b.name: b.dtype for b in self.original.buffers}  # before bool -> u32
        declared.update({w.name: w.dtype for w in self.original.workgroup})
        for name in sorted(self.atomics):
            a = self.arrays.get(name)
            if a is None:
                continue  # reported where it is used
            if declared[name] not in (DataType.U32, DataType.I32):
                self.fail(f"atomics on {name!r} of type {declared[name].value}", "atomics need a u32 or i32 array")
            if a.buffer is not None and not a.buffer.access.writable:
                self.fail(f"atomics on {a.buffer.access.value} buffer {name!r}",
                          f"declare {name!r} with access='read_write'")

    def array(self, name: str, node) -> _Array:
        a = self.arrays.get(name)
        if a is None:
            self.fail(f"buffer {name!r} is not declared", "declare it with b.buffer(...) or b.workgroup_array(...)", node)
        return a

    def decl_lines(self) -> list[str]:
        out = []
        for a in self.arrays.values():
            if a.buffer is None:
                t = f"atomic<{a.dtype.value}>" if a.atomic else a.dtype.value
                out.append(f"var<workgroup> {a.wgsl}: array<{t}, {a.count}>;")
                continue
            b = a.buffer
            head = f"@group(0) @binding({b.binding})"
            if a.uniform:
                if b.count is None:
                    self.fail(f"uniform buffer {b.name!r} has no count",
                              "declare it with count=... (uniform arrays have a fixed size)")
                row, rows, _ = _uniform_layout(a.dtype, b.count)
                out.append(f"{head} var<uniform> {a.wgsl}: array<{row}, {rows}>;")
            else:
                mode = "read_write" if b.access.writable else "read"
                t = f"atomic<{a.dtype.value}>" if a.atomic else a.dtype.value
                out.append(f"{head} var<storage, {mode}> {a.wgsl}: array<{t}>;")
        return out

    # ---- scopes ----
    def push(self) -> None:
        self.env.push()
        self.names.append({})

    def pop(self) -> None:
        self.env.pop()
        self.names.pop()

    def declare(self, name: str, dtype: DataType, mutable: bool) -> str:
        n = self.decl_count.get(name, 0)
        self.decl_count[name] = n + 1
        w = _mangle("v", name, n)
        self.env.declare(name, dtype, mutable)
        self.names[-1][name] = (w, mutable)
        return w

    def lookup(self, name: str, node):
        for scope in reversed(self.names):
            if name in scope:
                return scope[name]
        self.fail(f"variable {name!r} is not defined here", f"declare {name!r} before use", node)

    def fresh(self) -> int:
        self.tmp += 1
        return self.tmp

    def helper(self, name: str, macro: str, **kw) -> str:
        if name not in self.helpers:
            self.helpers[name] = getattr(_macros("helpers.wgsl.j2"), macro)(name=name, **kw).strip("\n")
        return name

    # ---- expressions ----
    def root(self, e) -> str:
        """Render a statement-level expression: type-check the whole tree once, then render."""
        self.type(e)
        return self.ex(e)

    def ex(self, e) -> str:
        m = getattr(self, "ex_" + e.kind, None)
        if m is None:  # pragma: no cover - every Expr kind has a method
            self.fail(f"cannot lower expression kind {e.kind!r}", "use the node types of vyre.ir.nodes", e)
        return m(e)

    def ex_lit(self, e) -> str:
        from .literals import literal

        return literal(e.dtype, e.value)

    def ex_var(self, e) -> str:
        return self.lookup(e.name, e)[0]

    def index(self, e) -> str:
        return _bare(self.ex(e))

    def ex_load(self, e) -> str:
        a = self.array(e.buffer, e)
        i = self.index(e.index)
        if a.atomic:
            return f"atomicLoad(&{a.wgsl}[{i}])"
        if a.uniform:
            if self.type(e.index) is DataType.I32:
                i = f"u32({i})"
            _, _, kind = _uniform_layout(a.dtype, a.count or 0)
            fn = self.helper(f"_ld_{a.wgsl}", "uniform_load", array=a.wgsl, dtype=a.dtype.value, layout=kind)
            return f"{fn}({i})"
        return f"{a.wgsl}[{i}]"

    def ex_len(self, e) -> str:
        a = self.array(e.buffer, e)
        if a.count is not None:
            return f"{a.count}u"
        return f"_vyre.lens[{a.index // 4}].{_AXES[a.index % 4]}"

    def ex_builtin(self, e) -> str:
        n = e.name
        axis = None if e.axis is None else _AXES[e.axis]
        if n is BuiltinName.LOCAL_INDEX:
            return "_lidx"
        if n is BuiltinName.GLOBAL_INDEX:
            self.builtins.add("gidx")
            return "_gidx"
        if n is BuiltinName.LOCAL_ID:
            return f"_lid.{axis}"
        if n is BuiltinName.NUM_WORKGROUPS:
            return f"_vyre.grid.{axis}"
        if n is BuiltinName.WORKGROUP_ID:
            self.builtins.add("wgid")
            return f"_wgid.{axis}"
        self.builtins.update(("wgid", "gid"))
        return f"_gid.{axis}"

    def ex_unary(self, e) -> str:
        a = self.ex(e.arg)
        if e.op is UnOp.NEG:
            return f"(-{a})"
        if e.op is UnOp.NOT:
            return f"(!{a})" if self.type(e.arg) is DataType.BOOL else f"(~{a})"
        return f"{_UNARY_FN[e.op]}({a})"

    def ex_binary(self, e) -> str:
        lhs, rhs = self.ex(e.lhs), self.ex(e.rhs)
        if e.op in (BinOp.DIV, BinOp.REM) and self.type(e).scalar is DataType.I32:
            return self.signed_divrem(e, lhs, rhs)
        if e.op in _BINARY_FN:
            return f"{_BINARY_FN[e.op]}({lhs}, {rhs})"
        return f"({lhs} {_BINARY_OP[e.op]} {rhs})"

    def signed_divrem(self, e, lhs: str, rhs: str) -> str:
        """i32 division/remainder through a helper that never divides by 0 or -1."""
        t = self.type(e)
        if self.type(e.lhs) != t:
            lhs = f"{t.value}({lhs})"
        if self.type(e.rhs) != t:
            rhs = f"{t.value}({rhs})"
        rem = e.op is BinOp.REM
        u = DataType.vector(DataType.U32, t.lanes)
        one, zero = (f"{t.value}(1i)", f"{t.value}(0i)") if t.is_vector else ("1i", "0i")
        uzero = f"{u.value}(0u)" if t.is_vector else "0u"
        fn = self.helper(f"_{'rem' if rem else 'div'}_{_tag(t)}", "int_divrem", dtype=t.value, udtype=u.value,
                         one=one, zero=zero, uzero=uzero, rem=rem)
        return f"{fn}({lhs}, {rhs})"

    def ex_select(self, e) -> str:
        return f"select({self.ex(e.if_false)}, {self.ex(e.if_true)}, {self.ex(e.cond)})"

    def ex_cast(self, e) -> str:
        from .literals import literal

        dst = e.dtype
        src = self.type(e.arg)
        a = self.ex(e.arg)
        if src is DataType.BOOL and dst is DataType.BOOL:
            return a
        if src is DataType.BOOL:
            return f"select({literal(dst, 0)}, {literal(dst, 1)}, {a})"
        if dst is DataType.BOOL:
            return f"({a} != {literal(src, 0)})"
        if src.is_float and dst.is_int:
            if src.uses_f16:  # exact widening first; one helper per f32-based shape
                src32 = DataType.vector(DataType.F32, src.lanes)
                a = f"{src32.value}({a})"
                src = src32
            usrc = DataType.vector(DataType.U32, src.lanes)
            signed = dst.scalar is DataType.I32
            fn = self.helper(
                f"_cvt_{_tag(src)}_{_tag(dst)}", "float_to_int", src=src.value, dst=dst.value, usrc=usrc.value,
                hi_limit="2147483648.0f" if signed else "4294967296.0f",
                lo_limit="-2147483648.0f" if signed else "-1.0f",
                hi_value=literal(dst.scalar, 2**31 - 1 if signed else 2**32 - 1),
                lo_value=literal(dst.scalar, -(2**31) if signed else 0),
                zero=literal(dst.scalar, 0),
            )
            return f"{fn}({a})"
        return f"{dst.value}({a})"

    def ex_bitcast(self, e) -> str:
        dst = e.dtype
        src = self.type(e.arg)
        a = self.ex(e.arg)
        if src == dst:
            return f"{dst.value}({a})"
        if not src.uses_f16 and not dst.uses_f16:
            return f"bitcast<{dst.value}>({a})"
        # naga cannot bitcast between 32-bit types and vectors of f16: go through pack/unpack
        if src.uses_f16:
            words = DataType.vector(DataType.U32, dst.lanes)
            fn = self.helper(f"_bc_{_tag(src)}_{_tag(words)}", "f16_to_words", src=src.value, lanes=src.lanes)
            return fn + f"({a})" if dst == words else f"bitcast<{dst.value}>({fn}({a}))"
        words = DataType.vector(DataType.U32, src.lanes)
        fn = self.helper(f"_bc_{_tag(words)}_{_tag(dst)}", "words_to_f16", dst=dst.value, lanes=dst.lanes)
        return f"{fn}({a})" if src == words else f"{fn}(bitcast<{words.value}>({a}))"

    def ex_fma(self, e) -> str:
        return f"fma({self.ex(e.a)}, {self.ex(e.b)}, {self.ex(e.c)})"

    def ex_vec(self, e) -> str:
        return f"{e.dtype.value}({', '.join(self.ex(x) for x in e.args)})"

    def ex_extract(self, e) -> str:
        a = self.ex(e.arg)
        if not _is_atom(a):
            a = f"({a})"
        return f"{a}.{_AXES[e.lane]}"

    def ex_atomic(self, e) -> str:  # pragma: no cover - the passes leave atomics only in let/eval
        self.fail("an atomic nested in an expression reached the lowering",
                  "bind the atomic to a let (the builder does this)", e)

    # ---- atomics (the whole value of a let or eval) ----
    def atomic(self, e, out: list) -> str | None:
        """Emit ``e``; return the WGSL expression of its old value (None: already stored in a temp)."""
        t = self.type(e)
        a = self.array(e.buffer, e)
        i = self.index(e.index)
        if e.op is AtomicOp.LOAD:
            return f"atomicLoad(&{a.wgsl}[{i}])"
        v = self.ex(e.value)
        if e.op is not AtomicOp.COMPARE_EXCHANGE:
            return f"{_ATOMIC_FN[e.op]}(&{a.wgsl}[{i}], {v})"
        # WGSL only has a weak compare-exchange: retry while it fails spuriously
        n = self.fresh()
        x = self.ex(e.expected)
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
    def block(self, stmts: list, push: bool = True) -> list:
        if push:
            self.push()
        out: list = []
        try:
            for s in stmts:
                m = getattr(self, "st_" + s.kind, None)
                if m is None:  # pragma: no cover
                    self.fail(f"cannot lower statement kind {s.kind!r}", "use the node types of vyre.ir.nodes", s)
                m(s, out)
        finally:
            if push:
                self.pop()
        return out

    def st_let(self, s, out) -> None:
        t = self.type(s.value)
        if s.value.kind == "atomic":
            value = self.atomic(s.value, out)
        else:
            value = _bare(self.ex(s.value))
        out.append(_line(f"let {self.declare(s.name, t, False)}: {t.value} = {value};"))

    def st_var(self, s, out) -> None:
        d = s.dtype
        if s.value is None:
            out.append(_line(f"var {self.declare(s.name, d, True)}: {d.value};"))
            return
        t = self.type(s.value)
        if t != d:
            self.fail(f"variable {s.name!r} is {d.value} but is initialised with {t.value}",
                      f"cast the value with .cast('{d.value}')", s)
        value = _bare(self.ex(s.value))  # typed just above
        out.append(_line(f"var {self.declare(s.name, d, True)}: {d.value} = {value};"))

    def st_assign(self, s, out) -> None:
        w, mutable = self.lookup(s.name, s)
        if not mutable:
            self.fail(f"{s.name!r} is immutable", f"declare {s.name!r} with b.var(...) to assign to it", s)
        want = self.env.lookup(s.name).dtype
        t = self.type(s.value)
        if t != want:
            self.fail(f"assigning {t.value} to {s.name!r} of type {want.value}", f"cast the value to {want.value}", s)
        out.append(_line(f"{w} = {_bare(self.ex(s.value))};"))  # typed just above

    def st_store(self, s, out) -> None:
        a = self.array(s.buffer, s)
        if not a.writable:
            self.fail(f"store into {a.buffer.access.value} buffer {s.buffer!r}",
                      f"declare {s.buffer!r} with access='read_write' or 'write'", s)
        t = self.type(s.value)
        if t != a.dtype:
            self.fail(f"storing {t.value} into {s.buffer!r} of type {a.dtype.value}",
                      f"cast the value with .cast('{a.dtype.value}')", s)
        it = self.type(s.index)
        if it not in (DataType.U32, DataType.I32):
            self.fail(f"an index must be u32 or i32, found {it.value}", "cast the index with .cast('u32')", s)
        i, v = self.index(s.index), _bare(self.ex(s.value))
        if a.atomic:
            out.append(_line(f"atomicStore(&{a.wgsl}[{i}], {v});"))
        else:
            out.append(_line(f"{a.wgsl}[{i}] = {v};"))

    def cond(self, e, node) -> str:
        if self.type(e) is not DataType.BOOL:
            self.fail("a condition must be bool", "compare the value, e.g. (x != 0)", node)
        return _bare(self.ex(e))  # typed just above

    def st_if(self, s, out) -> None:
        c = self.cond(s.cond, s)
        out.append({"k": "if", "cond": c, "then": self.block(s.then), "otherwise": self.block(s.otherwise)})

    def st_for(self, s, out) -> None:
        from .literals import literal

        t = self.type(s.start)
        if t.is_vector or not t.is_numeric:
            self.fail(f"a for loop counts with an integer or float scalar, found {t.value}",
                      "use u32 or i32 bounds", s)
        if self.type(s.end) != t:
            self.fail(f"for loop bounds differ: {t.value} and {self.type(s.end).value}",
                      "cast both bounds to one type", s)
        start, end = self.ex(s.start), self.ex(s.end)  # typed just above
        step = abs(s.step)
        step_lit = literal(t, float(step) if t.is_float else step)
        self.push()
        try:
            k = self.declare(s.var, t, False)
            body = self.block(s.body, push=False)
        finally:
            self.pop()
        cmp, upd = ("<", "+=") if s.step >= 0 else (">", "-=")
        out.append({"k": "for", "init": f"var {k}: {t.value} = {start}", "cond": f"{k} {cmp} {end}",
                    "cont": f"{k} {upd} {step_lit}", "body": body})

    def st_while(self, s, out) -> None:
        c = self.cond(s.cond, s)
        out.append({"k": "while", "cond": c, "body": self.block(s.body)})

    def st_break(self, s, out) -> None:
        out.append(_line("break;"))

    def st_continue(self, s, out) -> None:
        out.append(_line("continue;"))

    def st_return(self, s, out) -> None:
        out.append(_line("return;"))

    def st_barrier(self, s, out) -> None:
        out.append(_line("storageBarrier();" if s.scope is BarrierScope.STORAGE else "workgroupBarrier();"))

    def st_eval(self, s, out) -> None:
        if s.value.kind == "atomic":
            value = self.atomic(s.value, out)
            if s.value.op is AtomicOp.COMPARE_EXCHANGE:
                return
        else:
            value = _bare(self.root(s.value))
        out.append(_line(f"_ = {value};"))

    # ---- module ----
    def run(self) -> dict:
        wx, wy, wz = self.program.workgroup_size
        if min(wx, wy, wz) < 1:
            self.fail(f"workgroup_size {self.program.workgroup_size} has a zero or negative dimension",
                      "use sizes >= 1, e.g. (64, 1, 1)")
        decls = self.decl_lines()
        body = self.block(self.program.body, push=False)
        name = re.sub(r"[^A-Za-z0-9_.\-]", "?", self.original.name)
        n_buffers = len(self.program.buffers)
        return {
            "version": LOWERING_VERSION,
            "name": name,
            "f16": program_uses_f16(self.original),
            "n_lens": max(1, math.ceil(n_buffers / 4)),
            "decls": decls,
            "helpers": [self.helpers[k] for k in sorted(self.helpers)],
            "wx": wx, "wy": wy, "wz": wz, "invocations": wx * wy * wz,
            "use_wgid": "wgid" in self.builtins,
            "use_gid": "gid" in self.builtins,
            "use_gidx": "gidx" in self.builtins,
            "entry_point": ENTRY_POINT,
            "body": body,
        }


def _line(text: str) -> dict:
    return {"k": "line", "text": text}


def _iter_dtypes(node):
    from pydantic import BaseModel

    if isinstance(node, DataType):
        yield node
    elif isinstance(node, BaseModel):
        for f in type(node).model_fields:
            yield from _iter_dtypes(getattr(node, f))
    elif isinstance(node, (list, tuple)):
        for x in node:
            yield from _iter_dtypes(x)


def program_uses_f16(program: Program) -> bool:
    """True when any type in the program (declarations, literals, casts, ...) involves f16."""
    return any(d.uses_f16 for d in _iter_dtypes(program))


class Rendered(NamedTuple):
    wgsl: str
    atomic_arrays: frozenset[str]  # buffers and workgroup arrays declared atomic<T>
    uses_f16: bool


def render(program: Program) -> Rendered:
    """Lower ``program`` to WGSL text, without running the validator (``lower`` does that)."""
    try:
        lowering = _Lowering(program)
        ctx = lowering.run()
    except RecursionError:
        raise LoweringError(
            f"program {program.name!r}: an expression is nested too deeply to lower",
            fix="bind intermediate results to lets (b.let(...)) to keep expressions shallow",
        ) from None
    wgsl = template_env().get_template("module.wgsl.j2").render(**ctx)
    return Rendered(wgsl, lowering.atomics, ctx["f16"])


__all__ = ["LOWERING_VERSION", "ENTRY_POINT", "Rendered", "render", "program_uses_f16", "uniform_binding_nbytes", "template_env"]
