"""The elementwise ops' IR for the 64-bit dtypes (float64, int64, uint64), where the 32-bit IR of
vyre/array/_kernels/elementwise.py is specific to 32 bits (f32 bit tests and polynomials, "i32"/"u32"
literals, shift widths). Each such op in :data:`~vyre.array._kernels.emit.OPS` is wrapped once, on import:
64-bit operands take the IR here, every other dtype the original function unchanged (so 32-bit programs are
the same programs). Float math in f64 comes from float_math64.py.
"""

from __future__ import annotations

from collections.abc import Callable

from ...ir.builder import ProgramBuilder
from ...ir.values import Val
from . import dtypes as D
from . import float_math64 as M
from . import trig64 as T
from .dtypes import DType
from .emit import OPS

Emit = Callable[[ProgramBuilder, list[Val], list[DType], DType], Val]
WIDE = (D.float64, D.int64, D.uint64)
_WIDE_OPS: dict[str, Emit] = {}


def _reg(name: str) -> Callable[[Emit], Emit]:
    def deco(fn: Emit) -> Emit:
        _WIDE_OPS[name] = fn
        return fn
    return deco


def _f64(fn: Callable[..., Val]) -> Emit:
    return lambda b, args, dts, out: fn(b, *args)


def _lit(b: ProgramBuilder, v: int, d: DType) -> Val:
    return b.lit(v, D.ir_type(d))


@_reg("astype")
def _astype(b: ProgramBuilder, args: list[Val], dts: list[DType], out: DType) -> Val:
    x, d = args[0], dts[0]
    if out == D.bool and d == D.float64:
        return (x != 0.0) | M.isnan(b, x)  # NaN is truthy (NaN != 0 is not portable)
    if out == D.bool:
        return x != _lit(b, 0, d)
    if d == D.float16:  # no direct f16 <-> 64-bit conversion in WGSL
        x = x.cast("f32")
    if out == D.float16:
        return x.cast("f32").cast("f16")
    return x.cast(D.ir_type(out))


def _nan_minmax(is_max: bool) -> Emit:
    def emit(b: ProgramBuilder, args: list[Val], dts: list[DType], out: DType) -> Val:
        x, y = args
        r = x.max(y) if is_max else x.min(y)
        if out != D.float64:
            return r
        return b.select(M.isnan(b, x) | M.isnan(b, y), M.nan(b), r)
    return emit


_WIDE_OPS["maximum"] = _nan_minmax(True)
_WIDE_OPS["minimum"] = _nan_minmax(False)


def _cmp(fn: Callable[[Val, Val], Val], nan_result: bool) -> Emit:
    def emit(b: ProgramBuilder, args: list[Val], dts: list[DType], out: DType) -> Val:
        x, y = args
        if dts[0] != D.float64:
            return fn(x, y)
        either = M.isnan(b, x) | M.isnan(b, y)
        return (fn(x, y) & ~either) if not nan_result else (fn(x, y) | either)
    return emit


for _n, _f, _r in (("equal", lambda x, y: x == y, False), ("not_equal", lambda x, y: x != y, True),
                   ("less", lambda x, y: x < y, False), ("less_equal", lambda x, y: x <= y, False),
                   ("greater", lambda x, y: x > y, False), ("greater_equal", lambda x, y: x >= y, False)):
    _WIDE_OPS[_n] = _cmp(_f, _r)


@_reg("floor_divide")
def _floor_divide(b: ProgramBuilder, args: list[Val], dts: list[DType], out: DType) -> Val:
    x, y = args
    if out.kind in "iu":
        zero = _lit(b, 0, out)
        if out.kind == "u":
            return b.select(y == zero, zero, x / y)
        q = b.let(x / y)
        adjust = (x % y != zero) & ((x < zero) != (y < zero))
        return b.select(y == zero, zero, b.select(adjust, q - _lit(b, 1, out), q))
    mod = b.let(x % y)  # numpy's npy_divmod: exact fmod, then correct the rounded quotient
    div = b.let((x - mod) / y)
    div = b.let(b.select((mod != 0.0) & ((y < 0.0) != (mod < 0.0)), div - 1.0, div))
    fl = b.let(div.floor())
    fl = b.select(div - fl > 0.5, fl + 1.0, fl)
    r = b.select(div == 0.0, M.copysign(b, M.lit(b, 0.0), x / y), fl)
    return b.select((y == 0.0) | M.isinf(b, x) | M.isinf(b, y), x / y, r)  # the standard's cases: elementwise.py


@_reg("remainder")
def _remainder(b: ProgramBuilder, args: list[Val], dts: list[DType], out: DType) -> Val:
    x, y = args
    m = b.let(x % y)
    if out.kind == "u":
        return m
    if out.kind == "i":
        zero = _lit(b, 0, out)
        return b.select((m != zero) & ((m < zero) != (y < zero)), m + y, m)
    fixed = b.select((m != 0.0) & ((y < 0.0) != (m < 0.0)), m + y, m)
    return b.select(m == 0.0, M.copysign(b, M.lit(b, 0.0), y), fixed)


@_reg("pow")
def _pow(b: ProgramBuilder, args: list[Val], dts: list[DType], out: DType) -> Val:
    x, y = args
    if out.kind in "iu":  # square and multiply over the 64 bits of the exponent (wrapping, as numpy)
        t = D.ir_type(out)
        acc, base = b.var(t, _lit(b, 1, out)), b.var(t, x)
        e = b.var("u64", y.bitcast("u64") if out.kind == "i" else y)
        one = b.lit(1, "u64")
        with b.for_range(0, 64):
            with b.if_((e & one) == one):
                acc.set(acc * base)
            base.set(base * base)
            e.set(e >> b.lit(1, "u32"))
        if out.kind == "u":
            return acc
        p1, m1, z = _lit(b, 1, out), _lit(b, -1, out), _lit(b, 0, out)
        neg = b.select(x == p1, p1, b.select(x == m1, b.select((y & p1) == p1, m1, p1), z))
        return b.select(y < z, neg, acc)
    ax = b.let(x.abs())
    huge = b.let(M.inf(b))
    r = b.let(ax.pow(y))
    r = b.select(ax == 0.0, b.select(y < 0.0, huge, M.lit(b, 0.0)), r)
    r = b.select(M.isinf(b, ax), b.select(y < 0.0, M.lit(b, 0.0), huge), r)
    r = b.select((ax == 1.0) & M.isinf(b, y), M.lit(b, 1.0), r)
    yint = y.floor() == y
    odd = yint & ((y * 0.5).floor() != y * 0.5)
    r = b.select(x < 0.0, b.select(yint, b.select(odd, -r, r), b.select(M.isfinite(b, x), M.nan(b), r)), r)
    r = b.select((x == 0.0) & odd & M.signbit(b, x), -r, r)
    one = ((y == 0.0) & ~M.isnan(b, y)) | ((x == 1.0) & ~M.isnan(b, x))
    return b.select(one, M.lit(b, 1.0), b.select(M.isnan(b, x) | M.isnan(b, y), M.nan(b), r))


def _shift(left: bool) -> Emit:
    def emit(b: ProgramBuilder, args: list[Val], dts: list[DType], out: DType) -> Val:
        x, y = args
        yu = y.bitcast("u64") if out.kind == "i" else y
        big = yu >= b.lit(64, "u64")
        amount = yu.cast("u32")
        zero = _lit(b, 0, out)
        if left:
            return b.select(big, zero, x << amount)
        fill = b.select(x < zero, _lit(b, -1, out), zero) if out.kind == "i" else zero
        return b.select(big, fill, x >> amount)
    return emit


_WIDE_OPS["bitwise_left_shift"] = _shift(True)
_WIDE_OPS["bitwise_right_shift"] = _shift(False)

_FLOAT: dict[str, Callable[..., Val]] = {
    "tanh": lambda b, x: b.select(x == 0.0, x, x.tanh()),  # tanh(-0) = -0
    "log10": M.log10, "expm1": M.expm1, "log1p": M.log1p, "atan": M.atan,
    "asin": M.asin, "acos": M.acos, "sinh": M.sinh, "cosh": M.cosh, "asinh": M.asinh, "acosh": M.acosh,
    "atanh": M.atanh, "atan2": M.atan2, "hypot": M.hypot, "logaddexp": M.logaddexp, "copysign": M.copysign,
    "nextafter": M.nextafter, "sin": T.sin, "cos": T.cos, "tan": T.tan,  # exact range reduction
}
for _n, _fn in _FLOAT.items():
    _WIDE_OPS[_n] = _f64(_fn)


def _float_test(fn: Callable[..., Val]) -> Emit:
    return lambda b, args, dts, out: fn(b, args[0])


for _n, _fn in (("isnan", M.isnan), ("isinf", M.isinf), ("isfinite", M.isfinite), ("signbit", M.signbit)):
    _WIDE_OPS[_n] = _float_test(_fn)


@_reg("sign")
def _sign(b: ProgramBuilder, args: list[Val], dts: list[DType], out: DType) -> Val:
    x = args[0]
    if out.kind == "u":
        return b.select(x == _lit(b, 0, out), _lit(b, 0, out), _lit(b, 1, out))
    if out.kind == "i":
        return x.sign()
    # sign(+-0) = +0 as the 32-bit form; |x| rather than a 0.0 literal: lavapipe gave -0.0 for
    # select(c, -1.0lf, 0.0lf) with c false (a select between two f64 constants)
    one = M.lit(b, 1.0)
    return b.select(M.isnan(b, x), M.nan(b), b.select(x > 0.0, one, b.select(x < 0.0, -one, x.abs())))


def _wrap(name: str, narrow: Emit, wide: Emit) -> Emit:
    def emit(b: ProgramBuilder, args: list[Val], dts: list[DType], out: DType) -> Val:
        if out in WIDE or any(d in WIDE for d in dts):
            return wide(b, args, dts, out)
        return narrow(b, args, dts, out)
    emit.__name__ = f"{name}_or_64"
    return emit


def install() -> None:
    """Wrap the ops of OPS that have a 64-bit form (once; the 32-bit forms stay as they are)."""
    for name, wide in _WIDE_OPS.items():
        current = OPS[name]
        if not getattr(current, "__name__", "").endswith("_or_64"):
            OPS[name] = _wrap(name, current, wide)


install()

__all__ = ["install", "WIDE"]
