"""The IR of the elementwise ops, registered in :data:`vyre.array._kernels.emit.OPS` under their names
(``(b, args, arg_dtypes, out_dtype) -> Val``). Float math is computed in f32 for float16 (rounded once);
the functions the IR has no op for come from vyre/array/_kernels/float_math.py. The public functions
recording these ops are in vyre/array/_elementwise.py.
"""

from __future__ import annotations

from collections.abc import Callable

from ...ir.builder import ProgramBuilder
from ...ir.values import Val
from . import dtypes as D
from . import float_math as M
from . import trig as T
from .dtypes import DType
from .emit import OPS

F32 = "f32"


def _reg(name: str) -> Callable[[Callable[..., Val]], Callable[..., Val]]:
    def deco(fn: Callable[..., Val]) -> Callable[..., Val]:
        OPS[name] = fn
        return fn
    return deco


def _in_f32(fn: Callable[..., Val]) -> Callable[..., Val]:
    """Compute ``fn(b, *f32 args)`` in f32; the result is cast back to an f16 output."""
    def emit(b: ProgramBuilder, args: list[Val], dts: list[DType], out: DType) -> Val:
        wide = [a.cast(F32) if d == D.float16 else a for a, d in zip(args, dts)]
        r = fn(b, *wide)
        return r.cast("f16") if out == D.float16 else r
    return emit


def _simple(fn: Callable[..., Val]) -> Callable[..., Val]:
    return lambda b, args, dts, out: fn(b, *args)


@_reg("astype")
def _astype(b: ProgramBuilder, args: list[Val], dts: list[DType], out: DType) -> Val:
    x, d = args[0], dts[0]
    if out == D.bool:
        if d.kind == "f":  # NaN is truthy (NaN != 0 is not portable, see docs/architecture.md)
            w = x.cast(F32) if d == D.float16 else x
            return (w != 0.0) | M.isnan(b, w)
        return x != 0 if d != D.bool else x
    return x.cast(D.ir_type(out))


OPS["positive"] = _simple(lambda b, x: x)
OPS["add"] = _simple(lambda b, x, y: x + y)
OPS["subtract"] = _simple(lambda b, x, y: x - y)
OPS["multiply"] = _simple(lambda b, x, y: x * y)
OPS["square"] = _simple(lambda b, x: x * x)
OPS["divide"] = _simple(lambda b, x, y: x / y)
OPS["reciprocal"] = _simple(lambda b, x: 1.0 / x)
OPS["abs"] = lambda b, args, dts, out: args[0] if out.kind in "ub" else args[0].abs()
OPS["negative"] = lambda b, args, dts, out: (0 - args[0]) if out.kind == "u" else -args[0]
OPS["bitwise_and"] = _simple(lambda b, x, y: x & y)
OPS["bitwise_or"] = _simple(lambda b, x, y: x | y)
OPS["bitwise_xor"] = lambda b, args, dts, out: (args[0] != args[1]) if out == D.bool else args[0] ^ args[1]
OPS["bitwise_invert"] = _simple(lambda b, x: ~x)
OPS["logical_not"] = _simple(lambda b, x: ~x)
OPS["where"] = _simple(lambda b, c, x, y: b.select(c, x, y))
OPS["maximum"] = _in_f32(lambda b, x, y: x.max(y) if x.dtype.value != "f32" else
                         b.select(M.isnan(b, x) | M.isnan(b, y), M.nan(b), x.max(y)))
OPS["minimum"] = _in_f32(lambda b, x, y: x.min(y) if x.dtype.value != "f32" else
                         b.select(M.isnan(b, x) | M.isnan(b, y), M.nan(b), x.min(y)))


def _cmp(fn: Callable[..., Val], nan_result: bool) -> Callable[..., Val]:
    def emit(b: ProgramBuilder, args: list[Val], dts: list[DType], out: DType) -> Val:
        x, y = args
        if dts[0].kind != "f":
            return fn(x, y)
        wx, wy = (x.cast(F32), y.cast(F32)) if dts[0] == D.float16 else (x, y)
        either = M.isnan(b, wx) | M.isnan(b, wy)
        return (fn(x, y) & ~either) if not nan_result else (fn(x, y) | either)
    return emit


OPS["equal"] = _cmp(lambda x, y: x == y, False)
OPS["not_equal"] = _cmp(lambda x, y: x != y, True)
OPS["less"] = _cmp(lambda x, y: x < y, False)
OPS["less_equal"] = _cmp(lambda x, y: x <= y, False)
OPS["greater"] = _cmp(lambda x, y: x > y, False)
OPS["greater_equal"] = _cmp(lambda x, y: x >= y, False)


@_reg("floor_divide")
def _floor_divide(b: ProgramBuilder, args: list[Val], dts: list[DType], out: DType) -> Val:
    x, y = args
    if out.kind == "u":
        return b.select(y == 0, b.lit(0, "u32"), x / y)
    if out.kind == "i":
        q = b.let(x / y)
        adjust = (x % y != 0) & ((x < 0) != (y < 0))
        return b.select(y == 0, b.lit(0, "i32"), b.select(adjust, q - 1, q))
    return _in_f32(lambda b, x, y: _float_floordiv(b, x, y))(b, args, dts, out)


def _float_floordiv(b: ProgramBuilder, x: Val, y: Val) -> Val:
    # numpy's npy_divmod: exact fmod, then correct the rounded quotient. With an infinite operand the
    # standard's special cases are x / y itself (inf // 2 = inf, -1 // inf = -0, inf // inf = NaN), where
    # numpy's fmod gives NaN / -1; a zero divisor too (x / 0 = +-inf, 0 / 0 = NaN)
    mod = b.let(x % y)
    div = b.let((x - mod) / y)
    div = b.let(b.select((mod != 0.0) & ((y < 0.0) != (mod < 0.0)), div - 1.0, div))
    fl = b.let(div.floor())
    fl = b.select(div - fl > 0.5, fl + 1.0, fl)
    r = b.select(div == 0.0, M.copysign(b, b.lit(0.0), x / y), fl)
    return b.select((y == 0.0) | M.isinf(b, x) | M.isinf(b, y), x / y, r)


@_reg("remainder")
def _remainder(b: ProgramBuilder, args: list[Val], dts: list[DType], out: DType) -> Val:
    x, y = args
    if out.kind in "iu":
        r = b.let(x % y)
        if out.kind == "u":
            return r
        return b.select((r != 0) & ((r < 0) != (y < 0)), r + y, r)

    def flt(b: ProgramBuilder, x: Val, y: Val) -> Val:
        m = b.let(x % y)
        fixed = b.select((m != 0.0) & ((y < 0.0) != (m < 0.0)), m + y, m)
        return b.select(m == 0.0, M.copysign(b, b.lit(0.0), y), fixed)
    return _in_f32(flt)(b, args, dts, out)


@_reg("pow")
def _pow(b: ProgramBuilder, args: list[Val], dts: list[DType], out: DType) -> Val:
    x, y = args
    if out.kind in "iu":
        t = D.ir_type(out)
        acc = b.var(t, 1)
        base = b.var(t, x)
        e = b.var("u32", y.cast("u32") if out.kind == "i" else y)
        with b.for_range(0, 32):
            with b.if_((e & 1) == 1):
                acc.set(acc * base)
            base.set(base * base)
            e.set(e >> 1)
        if out.kind == "u":
            return acc
        neg = b.select(x == 1, b.lit(1, "i32"), b.select(x == -1, b.select((y & 1) == 1, b.lit(-1, "i32"),
                                                                           b.lit(1, "i32")), b.lit(0, "i32")))
        return b.select(y < 0, neg, acc)

    def flt(b: ProgramBuilder, x: Val, y: Val) -> Val:
        ax = b.let(x.abs())
        # WGSL leaves pow(0, y) and pow(inf, y) undefined (exp2(y log2 x)) and 1^inf is NaN through it:
        # IEEE's values are set here (0^-y = inf, inf^-y = 0, (+-1)^(+-inf) = 1)
        huge = b.let(M.fbits(b, M.INF_BITS))
        r = b.let(ax.pow(y))
        r = b.select(ax == 0.0, b.select(y < 0.0, huge, b.lit(0.0)), r)
        r = b.select(M.isinf(b, ax), b.select(y < 0.0, b.lit(0.0), huge), r)
        r = b.select((ax == 1.0) & M.isinf(b, y), b.lit(1.0), r)
        yint = y.floor() == y
        odd = yint & ((y * 0.5).floor() != y * 0.5)
        r = b.select(x < 0.0, b.select(yint, b.select(odd, -r, r), b.select(M.isfinite(b, x), M.nan(b), r)), r)
        r = b.select((x == 0.0) & odd & M.signbit(b, x), -r, r)
        # NaN by its bits (lavapipe's float compares with NaN are unreliable); x^0 = 1^y = 1 even for NaN
        one = ((y == 0.0) & ~M.isnan(b, y)) | ((x == 1.0) & ~M.isnan(b, x))
        return b.select(one, b.lit(1.0), b.select(M.isnan(b, x) | M.isnan(b, y), M.nan(b), r))
    return _in_f32(flt)(b, args, dts, out)


def _shift(left: bool) -> Callable[..., Val]:
    def emit(b: ProgramBuilder, args: list[Val], dts: list[DType], out: DType) -> Val:
        x, y = args
        big = (y.cast("u32") >= 32) if out.kind == "i" else (y >= 32)
        amount = y.cast("u32") if out.kind == "i" else y
        if left:
            return b.select(big, b.lit(0, D.ir_type(out)), x << amount)
        fill = b.select(x < 0, b.lit(-1, "i32"), b.lit(0, "i32")) if out.kind == "i" else b.lit(0, "u32")
        return b.select(big, fill, x >> amount)
    return emit


OPS["bitwise_left_shift"] = _shift(True)
OPS["bitwise_right_shift"] = _shift(False)

_FLOAT_IR: dict[str, Callable[..., Val]] = {
    "sqrt": lambda b, x: x.sqrt(), "exp": lambda b, x: x.exp(), "log": lambda b, x: x.log(),
    "log2": lambda b, x: x.log2(), "sin": T.sin, "cos": T.cos, "tan": T.tan,  # exact range reduction
    "tanh": lambda b, x: M.keep_nan(b, x, b.select(x == 0.0, x, x.max(-10.0).min(10.0).tanh())),  # tanh(-0) = -0
    "log10": M.log10, "expm1": M.expm1, "log1p": M.log1p, "atan": M.atan, "asin": M.asin, "acos": M.acos,
    "sinh": M.sinh, "cosh": M.cosh, "asinh": M.asinh, "acosh": M.acosh, "atanh": M.atanh,
    "atan2": M.atan2, "hypot": M.hypot, "logaddexp": M.logaddexp, "copysign": M.copysign,
    "nextafter": M.nextafter,
}
for _name, _fn in _FLOAT_IR.items():
    OPS[_name] = _in_f32(_fn)


def _rounding(fn: Callable[..., Val]) -> Callable[..., Val]:
    return lambda b, args, dts, out: args[0] if out.kind in "iub" else fn(args[0])


OPS["floor"] = _rounding(lambda x: x.floor())
OPS["ceil"] = _rounding(lambda x: x.ceil())
OPS["trunc"] = _rounding(lambda x: x.trunc())
OPS["round"] = _rounding(lambda x: x.round())


def _float_test(fn: Callable[..., Val], for_ints: bool) -> Callable[..., Val]:
    def emit(b: ProgramBuilder, args: list[Val], dts: list[DType], out: DType) -> Val:
        d = dts[0]
        if d.kind != "f":
            return b.lit(for_ints, "bool")
        return fn(b, args[0].cast(F32) if d == D.float16 else args[0])
    return emit


OPS["isnan"] = _float_test(M.isnan, False)
OPS["isinf"] = _float_test(M.isinf, False)
OPS["isfinite"] = _float_test(M.isfinite, True)
OPS["signbit"] = _float_test(M.signbit, False)


@_reg("sign")
def _sign(b: ProgramBuilder, args: list[Val], dts: list[DType], out: DType) -> Val:
    x = args[0]
    if out.kind == "u":
        return b.select(x == 0, b.lit(0, "u32"), b.lit(1, "u32"))
    if out.kind == "i":
        return x.sign()
    w = x.cast(F32) if out == D.float16 else x
    # sign(+-0) is 0 (the standard: an unsigned zero, +0 as numpy gives), not the signed zero itself: |w|
    # there (not a literal: lavapipe miscompiles some selects between two f64 constants, see elementwise64)
    r = b.select(M.isnan(b, w), M.nan(b), b.select(w > 0.0, b.lit(1.0), b.select(w < 0.0, b.lit(-1.0), w.abs())))
    return r.cast("f16") if out == D.float16 else r


__all__: list[str] = []  # the ops are registered in OPS on import

from . import elementwise64  # noqa: E402, F401 - wraps the ops with a 64-bit form (after the 32-bit ones)
