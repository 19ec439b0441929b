"""The IR of the elementwise ops on complex64 and complex128, registered in
:data:`vyre.array._kernels.emit.COMPLEX_OPS` (the emitter uses that table when an operand or the result is
complex).

A complex element is one vector value: complex64 a ``vec2<f32>`` (x: real part, y: imaginary part),
complex128 a ``vec4<u32>`` holding the two f64 parts' words (the IR has no vectors of f64), so leaves,
scalars, views, the fused kernels and the copy kernels (concat, gather, scatter) hold complex arrays as they
hold any dtype. The ops work on :class:`Z` (the two real parts as f32 or f64 values, unpacked from and
packed back into that vector by :func:`_op`) with :class:`Kind` (the builder, the parts' type and the real
helpers of it: vyre/array/_kernels/float_math.py or float_math64.py), one code for both precisions.

Here: arithmetic (division by Smith's algorithm, as numpy's), comparisons, the component functions
(``real``, ``imag``, ``conj``, ``abs`` through a hypot without overflow), the tests, ``where``, ``round``,
``astype`` and the internal ``complex`` (two real parts into one value). The transcendental functions are
in vyre/array/_kernels/complex_math.py, their inverses in complex_inverse.py. :data:`RESULT` says which
ops take complex operands and what kind of result they give: every other op is refused before recording
(vyre/array/_complex.py).

Special values: ``multiply`` is the textbook formula (numpy's: ``(inf+0j) * (1+0j)`` is ``inf+nanj``, C99
Annex G would recover infinities); ``divide`` follows numpy (a zero divisor gives inf/NaN components).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType
from typing import Any, cast

from ...ir.builder import ProgramBuilder
from ...ir.values import Val
from . import dtypes as D
from . import float_math as M32
from . import float_math64 as M64
from .dtypes import DType
from .emit import COMPLEX_OPS, OPS

Emit = Callable[[ProgramBuilder, list[Val], list[DType], DType], Val]

#: ops defined on complex operands -> the result's kind: "c" (complex), "r" (the real component dtype),
#: "b" (bool). The standard's functions outside this table are refused for complex (TypeError).
RESULT: dict[str, str] = {
    "positive": "c", "negative": "c", "add": "c", "subtract": "c", "multiply": "c", "divide": "c", "square": "c",
    "reciprocal": "c", "pow": "c", "conj": "c", "sign": "c", "where": "c", "astype": "c", "round": "c",
    "sqrt": "c", "exp": "c", "expm1": "c", "log": "c", "log1p": "c", "log2": "c", "log10": "c",
    "sin": "c", "cos": "c", "tan": "c", "sinh": "c", "cosh": "c", "tanh": "c",
    "asin": "c", "acos": "c", "atan": "c", "asinh": "c", "acosh": "c", "atanh": "c",
    "abs": "r", "real": "r", "imag": "r",
    "equal": "b", "not_equal": "b", "isnan": "b", "isinf": "b", "isfinite": "b",
}


@dataclass(frozen=True)
class Z:
    """A complex value as its two real parts (f32 or f64 values)."""

    re: Val
    im: Val

    def __add__(self, o: Z) -> Z: return Z(self.re + o.re, self.im + o.im)
    def __sub__(self, o: Z) -> Z: return Z(self.re - o.re, self.im - o.im)
    def __neg__(self) -> Z: return Z(-self.re, -self.im)
    def scale(self, c: Any) -> Z: return Z(self.re * c, self.im * c)


class Kind:
    """The builder and the parts' precision: ``t`` ('f32' or 'f64'), ``M`` (its real helpers)."""

    def __init__(self, b: ProgramBuilder, wide: bool):
        self.b, self.wide = b, wide
        self.t = "f64" if wide else "f32"
        self.M: ModuleType = M64 if wide else M32
        self.real = D.float64 if wide else D.float32

    def lit(self, v: float) -> Val: return self.b.lit(v, self.t)
    def inf(self) -> Val: return cast(Val, self.M.fbits(self.b, self.M.INF_BITS))
    def nan(self) -> Val: return cast(Val, self.M.nan(self.b))
    def z(self, re: Any, im: Any) -> Z: return Z(self._v(re), self._v(im))
    def let(self, z: Z) -> Z: return Z(self.b.let(z.re), self.b.let(z.im))
    def sel(self, c: Val, p: Z, q: Z) -> Z: return Z(self.b.select(c, p.re, q.re), self.b.select(c, p.im, q.im))
    def eq(self, x: Val, y: Val) -> Val: return OPS["equal"](self.b, [x, y], [self.real, self.real], D.bool)

    def f(self, name: str, *xs: Val) -> Val:
        """The real elementwise op ``name`` (vyre/array/_kernels/elementwise.py's IR, its f64 form for f64)."""
        return self.b.let(OPS[name](self.b, list(xs), [self.real] * len(xs), self.real))

    def _v(self, v: Any) -> Val:
        return v if isinstance(v, Val) else self.lit(float(v))


def unpack(b: ProgramBuilder, v: Val, dt: DType) -> Z:
    """An element of complex dtype ``dt`` as its parts."""
    if dt == D.complex64:
        return Z(v.x, v.y)
    return Z(b.vec("vec2<u32>", v.x, v.y).bitcast("f64"), b.vec("vec2<u32>", v.z, v.w).bitcast("f64"))


def pack(b: ProgramBuilder, z: Z, dt: DType) -> Val:
    """Parts as an element of complex dtype ``dt``."""
    if dt == D.complex64:
        return b.vec(D.ir_type(dt), z.re, z.im)
    r, i = b.let(z.re.bitcast("vec2<u32>")), b.let(z.im.bitcast("vec2<u32>"))
    return b.vec(D.ir_type(dt), r.x, r.y, i.x, i.y)


OpFn = Callable[[Kind, list[Any], list[DType], DType], Any]


def _op(name: str) -> Callable[[OpFn], OpFn]:
    """Register ``fn(k, args, dts, out)``: complex operands arrive as :class:`Z` (real ones as they are),
    a complex result (a :class:`Z`) is packed into ``out``'s element."""
    def deco(fn: OpFn) -> OpFn:
        def emit(b: ProgramBuilder, args: list[Val], dts: list[DType], out: DType) -> Val:
            cdt = next(d for d in (out, *dts) if d.kind == "c")
            k = Kind(b, cdt == D.complex128)
            vals: list[Any] = []
            for a, d in zip(args, dts):
                z = unpack(b, a, d) if d.kind == "c" else None
                vals.append(Z(b.let(z.re), b.let(z.im)) if z is not None else a)
            r = fn(k, vals, dts, out)
            return pack(b, r, out) if out.kind == "c" else r
        COMPLEX_OPS[name] = emit
        return fn
    return deco


def unary(name: str, fn: Callable[[Kind, Val, Val], Any]) -> None:
    """Register an op of one complex operand given its parts ``(k, re, im)``."""
    _op(name)(lambda k, args, dts, out: fn(k, args[0].re, args[0].im))


def mul(k: Kind, x: Z, y: Z) -> Z:
    return Z(x.re * y.re - x.im * y.im, x.re * y.im + x.im * y.re)


def div(k: Kind, x: Z, y: Z) -> Z:
    """Smith's algorithm (numpy's ``npy_cdiv``): the ratio of the smaller divisor component to the larger,
    so no intermediate squares overflow; a zero divisor divides by |0| (inf or NaN components)."""
    b, (a, bi, c, d) = k.b, (x.re, x.im, y.re, y.im)
    ac, ad = b.let(c.abs()), b.let(d.abs())
    wide = ac >= ad
    one = k.lit(1.0)
    rat = b.let(b.select(wide, d / b.select(c == 0.0, one, c), c / b.select(d == 0.0, one, d)))
    scl = b.let(1.0 / b.select(wide, c + d * rat, d + c * rat))
    re = b.select(wide, (a + bi * rat) * scl, (a * rat + bi) * scl)
    im = b.select(wide, (bi - a * rat) * scl, (bi * rat - a) * scl)
    zero = (ac == 0.0) & (ad == 0.0)
    return k.sel(zero, Z(a / ac, bi / ad), Z(re, im))


def eq(k: Kind, x: Z, y: Z) -> Val:
    """Both components equal (a NaN component is unequal: the real ``equal``)."""
    return k.eq(x.re, y.re) & k.eq(x.im, y.im)


def isnan(k: Kind, z: Z) -> Val:
    return cast(Val, k.M.isnan(k.b, z.re) | k.M.isnan(k.b, z.im))


def hypot(k: Kind, re: Val, im: Val) -> Val:
    return k.f("hypot", re, im)


_op("positive")(lambda k, args, dts, out: args[0])
_op("negative")(lambda k, args, dts, out: -args[0])
_op("add")(lambda k, args, dts, out: args[0] + args[1])
_op("subtract")(lambda k, args, dts, out: args[0] - args[1])
_op("multiply")(lambda k, args, dts, out: mul(k, args[0], args[1]))
_op("square")(lambda k, args, dts, out: mul(k, args[0], args[0]))
_op("divide")(lambda k, args, dts, out: div(k, args[0], args[1]))
_op("reciprocal")(lambda k, args, dts, out: div(k, k.z(1.0, 0.0), args[0]))
_op("equal")(lambda k, args, dts, out: eq(k, args[0], args[1]))
_op("not_equal")(lambda k, args, dts, out: ~eq(k, args[0], args[1]))
_op("where")(lambda k, args, dts, out: k.sel(args[0], args[1], args[2]))
_op("complex")(lambda k, args, dts, out: k.z(args[0], args[1]))  # two real parts of the result's precision
_op("isnan")(lambda k, args, dts, out: isnan(k, args[0]))
unary("real", lambda k, re, im: re)
unary("imag", lambda k, re, im: im)
unary("conj", lambda k, re, im: Z(re, -im))
unary("abs", hypot)
unary("isinf", lambda k, re, im: k.M.isinf(k.b, re) | k.M.isinf(k.b, im))
unary("isfinite", lambda k, re, im: k.M.isfinite(k.b, re) & k.M.isfinite(k.b, im))
unary("round", lambda k, re, im: Z(re.round(), im.round()))  # each part, half to even (the standard)


@_op("sign")
def _sign(k: Kind, args: list[Any], dts: list[DType], out: DType) -> Z:
    """``z / |z|`` (0 for 0; NaN components give NaN); an infinite ``z`` gives the direction of its
    infinite parts (numpy's ``sign(inf + 1j)`` is ``1 + 0j``)."""
    z, b, M = args[0], k.b, k.M
    inf = M.isinf(b, z.re) | M.isinf(b, z.im)
    one, zero = k.lit(1.0), k.lit(0.0)
    d = Z(b.select(M.isinf(b, z.re), M.copysign(b, one, z.re), zero),
          b.select(M.isinf(b, z.im), M.copysign(b, one, z.im), zero))
    w = k.let(k.sel(inf & ~isnan(k, z), d, z))
    m = b.let(hypot(k, w.re, w.im))
    return k.sel(m == 0.0, k.z(0.0, 0.0), Z(w.re / m, w.im / m))


@_op("astype")
def _astype(k: Kind, args: list[Any], dts: list[DType], out: DType) -> Any:
    """Real -> complex (imaginary part 0), complex -> complex (complex64 <-> complex128), complex -> bool
    (non-zero, NaN true); complex -> a real number type is refused before recording (the standard)."""
    x, d, b = args[0], dts[0], k.b
    if d.kind == "c":
        if out == D.bool:
            zero = (x.re == 0.0) & (x.im == 0.0)
            return ~zero | isnan(k, x)
        if d == out:
            return x
        t = D.real_of(out)
        return Z(OPS["astype"](b, [x.re], [D.real_of(d)], t), OPS["astype"](b, [x.im], [D.real_of(d)], t))
    re = x if d == k.real else OPS["astype"](b, [x], [d], k.real)
    return Z(re, k.lit(0.0))


@_op("search_flag")
def _flag(k: Kind, args: list[Any], dts: list[DType], out: DType) -> Val:
    """nonzero/count_nonzero's flag (vyre/array/_kernels/sort.py): 1 where z != 0 (NaN parts count)."""
    return k.b.select(_astype(k, args, dts, D.bool), k.b.lit(1, "u32"), k.b.lit(0, "u32"))


__all__ = ["RESULT", "Z", "Kind", "unary", "mul", "div", "eq", "isnan", "hypot", "unpack", "pack"]

from . import complex_inverse, complex_math  # noqa: E402, F401 - the transcendental ops (after the arithmetic)
