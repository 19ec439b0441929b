"""The IR of the elementwise ops on complex64, registered in :data:`vyre.array._kernels.emit.COMPLEX_OPS`
(the emitter uses that table when an operand or the result is complex).

A complex64 element is one ``vec2<f32>`` value (x: real part, y: imaginary part), so leaves, scalars,
views, the fused kernels and the copy kernels (concat, gather, scatter) hold complex arrays as they hold
any dtype. Here: arithmetic (division by Smith's algorithm, as numpy's), comparisons, the component
functions (``real``, ``imag``, ``conj``, ``abs`` through a hypot without overflow), the tests, ``where``,
``astype`` and the internal ``complex`` (two real parts into one value). The transcendental functions
are in vyre/array/_kernels/complex_math.py, their inverses in complex_inverse.py. :data:`RESULT` says which
ops take complex operands and what kind of result they give: every other op is refused before recording
(vyre/array/_complex.py).

Special values: ``multiply`` is the textbook formula (numpy's: ``(inf+0j) * (1+0j)`` is ``inf+nanj``, C99
Annex G would recover infinities); ``divide`` follows numpy (a zero divisor gives inf/NaN components).
"""

from __future__ import annotations

from collections.abc import Callable

from ...ir.builder import ProgramBuilder
from ...ir.values import Val
from . import dtypes as D
from . import float_math as M
from .dtypes import DType
from .emit import COMPLEX_OPS, OPS

C2 = "vec2<f32>"
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


def cx(b: ProgramBuilder, re: Val | float, im: Val | float) -> Val:
    """The complex64 value ``re + im j`` (two f32 values)."""
    return b.vec(C2, re, im)


def _reg(name: str) -> Callable[[Emit], Emit]:
    def deco(fn: Emit) -> Emit:
        COMPLEX_OPS[name] = fn
        return fn
    return deco


def _unary(fn: Callable[[ProgramBuilder, Val, Val], Val]) -> Emit:
    """An op of one complex operand given its components ``(b, re, im)``."""
    def emit(b: ProgramBuilder, args: list[Val], dts: list[DType], out: DType) -> Val:
        z = args[0]
        return fn(b, b.let(z.x), b.let(z.y))
    return emit


def mul(b: ProgramBuilder, x: Val, y: Val) -> Val:
    a, c, bi, d = b.let(x.x), b.let(y.x), b.let(x.y), b.let(y.y)
    return cx(b, a * c - bi * d, a * d + bi * c)


def div(b: ProgramBuilder, x: Val, y: Val) -> Val:
    """Smith's algorithm (numpy's ``npy_cdiv``): the ratio of the smaller divisor component to the larger,
    so no intermediate squares overflow; a zero divisor divides by |0| (inf or NaN components)."""
    a, bi, c, d = b.let(x.x), b.let(x.y), b.let(y.x), b.let(y.y)
    ac, ad = b.let(c.abs()), b.let(d.abs())
    wide = ac >= ad
    rat = b.let(b.select(wide, d / b.select(c == 0.0, b.lit(1.0), c), c / b.select(d == 0.0, b.lit(1.0), d)))
    scl = b.let(1.0 / b.select(wide, c + d * rat, d + c * rat))
    re = b.select(wide, (a + bi * rat) * scl, (a * rat + bi) * scl)
    im = b.select(wide, (bi - a * rat) * scl, (bi * rat - a) * scl)
    zero = (ac == 0.0) & (ad == 0.0)
    return b.select(zero, cx(b, a / ac, bi / ad), cx(b, re, im))


def eq(b: ProgramBuilder, x: Val, y: Val) -> Val:
    """Both components equal (a NaN component is unequal: the real ``equal``)."""
    f = [D.float32, D.float32]
    return OPS["equal"](b, [x.x, y.x], f, D.bool) & OPS["equal"](b, [x.y, y.y], f, D.bool)


def isnan(b: ProgramBuilder, z: Val) -> Val:
    return M.isnan(b, z.x) | M.isnan(b, z.y)


COMPLEX_OPS["positive"] = lambda b, args, dts, out: args[0]
COMPLEX_OPS["negative"] = lambda b, args, dts, out: -args[0]
COMPLEX_OPS["add"] = lambda b, args, dts, out: args[0] + args[1]
COMPLEX_OPS["subtract"] = lambda b, args, dts, out: args[0] - args[1]
COMPLEX_OPS["multiply"] = lambda b, args, dts, out: mul(b, args[0], args[1])
COMPLEX_OPS["square"] = lambda b, args, dts, out: mul(b, args[0], args[0])
COMPLEX_OPS["divide"] = lambda b, args, dts, out: div(b, args[0], args[1])
COMPLEX_OPS["reciprocal"] = lambda b, args, dts, out: div(b, cx(b, 1.0, 0.0), args[0])
COMPLEX_OPS["equal"] = lambda b, args, dts, out: eq(b, args[0], args[1])
COMPLEX_OPS["not_equal"] = lambda b, args, dts, out: ~eq(b, args[0], args[1])
COMPLEX_OPS["real"] = lambda b, args, dts, out: args[0].x
COMPLEX_OPS["imag"] = lambda b, args, dts, out: args[0].y
COMPLEX_OPS["conj"] = _unary(lambda b, re, im: cx(b, re, -im))
COMPLEX_OPS["abs"] = _unary(lambda b, re, im: M.hypot(b, re, im))
COMPLEX_OPS["isnan"] = lambda b, args, dts, out: isnan(b, args[0])
COMPLEX_OPS["isinf"] = _unary(lambda b, re, im: M.isinf(b, re) | M.isinf(b, im))
COMPLEX_OPS["isfinite"] = _unary(lambda b, re, im: M.isfinite(b, re) & M.isfinite(b, im))
COMPLEX_OPS["where"] = lambda b, args, dts, out: b.select(args[0], args[1], args[2])
COMPLEX_OPS["round"] = lambda b, args, dts, out: args[0].round()  # each part, half to even (the standard)
COMPLEX_OPS["complex"] = lambda b, args, dts, out: cx(b, args[0], args[1])  # two float32 parts


@_reg("sign")
def _sign(b: ProgramBuilder, args: list[Val], dts: list[DType], out: DType) -> Val:
    """``z / |z|`` (0 for 0; NaN components give NaN); an infinite ``z`` gives the direction of its
    infinite parts (numpy's ``sign(inf + 1j)`` is ``1 + 0j``)."""
    z = args[0]
    inf = M.isinf(b, z.x) | M.isinf(b, z.y)
    one = b.lit(1.0)
    w = b.let(b.select(inf & ~isnan(b, z), cx(b, b.select(M.isinf(b, z.x), M.copysign(b, one, z.x), b.lit(0.0)),
                                             b.select(M.isinf(b, z.y), M.copysign(b, one, z.y), b.lit(0.0))), z))
    m = b.let(M.hypot(b, w.x, w.y))
    return b.select(m == 0.0, cx(b, 0.0, 0.0), cx(b, w.x / m, w.y / m))


@_reg("astype")
def _astype(b: ProgramBuilder, args: list[Val], dts: list[DType], out: DType) -> Val:
    """Real -> complex (imaginary part 0), complex -> complex, complex -> bool (non-zero, NaN true);
    complex -> a real number type is refused before recording (the standard)."""
    x, d = args[0], dts[0]
    if d.kind == "c":
        if out == D.bool:
            zero = (x.x == 0.0) & (x.y == 0.0)
            return ~zero | isnan(b, x)
        return x
    re = x if d == D.float32 else OPS["astype"](b, [x], [d], D.float32)
    return cx(b, re, 0.0)


@_reg("search_flag")
def _flag(b: ProgramBuilder, args: list[Val], dts: list[DType], out: DType) -> Val:
    """nonzero/count_nonzero's flag (vyre/array/_kernels/sort.py): 1 where z != 0 (NaN parts count)."""
    return b.select(_astype(b, args, dts, D.bool), b.lit(1, "u32"), b.lit(0, "u32"))


__all__ = ["RESULT", "cx", "mul", "div", "eq", "isnan", "C2"]

from . import complex_inverse, complex_math  # noqa: E402, F401 - the transcendental ops (after the arithmetic)
