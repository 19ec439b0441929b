"""The public elementwise functions of the standard (2024.12), each recording one Map node (fused at
evaluation; see vyre/array/_elementwise.py for the IR and the dtype rules)."""

from __future__ import annotations

from typing import Any

import numpy as np

from . import _dtypes as D
from ._array import Array
from ._elementwise import apply
from ._expr import Map

_NUM, _INT, _INTB, _ALL = "iuf", "iu", "biu", "biuf"


def _b(d: np.dtype) -> np.dtype: return D.bool


def add(x1: Any, x2: Any, /) -> Array: return apply("add", [x1, x2], accept=_NUM)
def subtract(x1: Any, x2: Any, /) -> Array: return apply("subtract", [x1, x2], accept=_NUM)
def multiply(x1: Any, x2: Any, /) -> Array: return apply("multiply", [x1, x2], accept=_NUM)
def divide(x1: Any, x2: Any, /) -> Array: return apply("divide", [x1, x2], accept="f", float_only=True)
def floor_divide(x1: Any, x2: Any, /) -> Array: return apply("floor_divide", [x1, x2], accept=_NUM)
def remainder(x1: Any, x2: Any, /) -> Array: return apply("remainder", [x1, x2], accept=_NUM)
def pow(x1: Any, x2: Any, /) -> Array:  # noqa: A001
    # x ** 2 as x * x on floats (numpy's fast path too): exact, where pow's exp2(2 log2 x) is not
    if isinstance(x1, Array) and x1.dtype.kind == "f" and type(x2) in (int, float) and x2 == 2:
        return apply("multiply", [x1, x1], accept=_NUM)
    return apply("pow", [x1, x2], accept=_NUM)


def maximum(x1: Any, x2: Any, /) -> Array: return apply("maximum", [x1, x2], accept=_NUM)
def minimum(x1: Any, x2: Any, /) -> Array: return apply("minimum", [x1, x2], accept=_NUM)
def atan2(x1: Any, x2: Any, /) -> Array: return apply("atan2", [x1, x2], accept="f", float_only=True)
def hypot(x1: Any, x2: Any, /) -> Array: return apply("hypot", [x1, x2], accept="f", float_only=True)
def logaddexp(x1: Any, x2: Any, /) -> Array: return apply("logaddexp", [x1, x2], accept="f", float_only=True)
def copysign(x1: Any, x2: Any, /) -> Array: return apply("copysign", [x1, x2], accept="f", float_only=True)


def nextafter(x1: Any, x2: Any, /) -> Array:
    """The next float32 after x1 toward x2 (float32 only: float16 raises; results that are subnormal may be
    flushed to zero by GPUs)."""
    r = apply("nextafter", [x1, x2], accept="f", float_only=True)
    if r.dtype != D.float32:
        raise D.UnsupportedDTypeError("nextafter supports float32 only", fix="astype(float32) first")
    return r


def equal(x1: Any, x2: Any, /) -> Array: return apply("equal", [x1, x2], out=_b)
def not_equal(x1: Any, x2: Any, /) -> Array: return apply("not_equal", [x1, x2], out=_b)
def less(x1: Any, x2: Any, /) -> Array: return apply("less", [x1, x2], out=_b, accept=_NUM)
def less_equal(x1: Any, x2: Any, /) -> Array: return apply("less_equal", [x1, x2], out=_b, accept=_NUM)
def greater(x1: Any, x2: Any, /) -> Array: return apply("greater", [x1, x2], out=_b, accept=_NUM)
def greater_equal(x1: Any, x2: Any, /) -> Array: return apply("greater_equal", [x1, x2], out=_b, accept=_NUM)
def bitwise_and(x1: Any, x2: Any, /) -> Array: return apply("bitwise_and", [x1, x2], accept=_INTB)
def bitwise_or(x1: Any, x2: Any, /) -> Array: return apply("bitwise_or", [x1, x2], accept=_INTB)
def bitwise_xor(x1: Any, x2: Any, /) -> Array: return apply("bitwise_xor", [x1, x2], accept=_INTB)
def bitwise_invert(x: Array, /) -> Array: return apply("bitwise_invert", [x], accept=_INTB)


def bitwise_left_shift(x1: Any, x2: Any, /) -> Array:
    """x1 << x2; shifts of 32 or more give 0 (numpy's result), negative shifts count as >= 32."""
    return apply("bitwise_left_shift", [x1, x2], accept=_INT)


def bitwise_right_shift(x1: Any, x2: Any, /) -> Array:
    """x1 >> x2 (arithmetic on int32); shifts of 32 or more give 0, or -1 for negative int32 x1."""
    return apply("bitwise_right_shift", [x1, x2], accept=_INT)


def _as_bool(x: Any) -> Any:
    if isinstance(x, Array) and x.dtype != D.bool:
        return Array(x.shape, D.bool, x.device, Map("astype", (x._node(),), D.bool, x.shape))
    return bool(x) if not isinstance(x, Array) else x


def logical_and(x1: Any, x2: Any, /) -> Array: return apply("bitwise_and", [_as_bool(x1), _as_bool(x2)])
def logical_or(x1: Any, x2: Any, /) -> Array: return apply("bitwise_or", [_as_bool(x1), _as_bool(x2)])
def logical_xor(x1: Any, x2: Any, /) -> Array: return apply("bitwise_xor", [_as_bool(x1), _as_bool(x2)])
def logical_not(x: Array, /) -> Array: return apply("logical_not", [_as_bool(x)])


def negative(x: Array, /) -> Array: return apply("negative", [x], accept=_NUM)
def positive(x: Array, /) -> Array: return apply("positive", [x], accept=_NUM)
def abs(x: Array, /) -> Array: return apply("abs", [x], accept=_NUM)  # noqa: A001
def square(x: Array, /) -> Array: return apply("square", [x], accept=_NUM)
def sign(x: Array, /) -> Array: return apply("sign", [x], accept=_NUM)
def reciprocal(x: Array, /) -> Array: return apply("reciprocal", [x], accept="f", float_only=True)
def floor(x: Array, /) -> Array: return apply("floor", [x], accept=_NUM)
def ceil(x: Array, /) -> Array: return apply("ceil", [x], accept=_NUM)
def trunc(x: Array, /) -> Array: return apply("trunc", [x], accept=_NUM)
def round(x: Array, /) -> Array: return apply("round", [x], accept=_NUM)  # noqa: A001
def isnan(x: Array, /) -> Array: return apply("isnan", [x], out=_b, accept=_NUM)
def isinf(x: Array, /) -> Array: return apply("isinf", [x], out=_b, accept=_NUM)
def isfinite(x: Array, /) -> Array: return apply("isfinite", [x], out=_b, accept=_NUM)
def signbit(x: Array, /) -> Array: return apply("signbit", [x], out=_b, accept="f", float_only=True)


def _float_fn(name: str) -> Any:
    def fn(x: Array, /) -> Array:
        return apply(name, [x], accept="f", float_only=True)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"Elementwise {name} (float; integer input is converted to float32). Accuracy: vyre/array/_math.py."
    return fn


_FLOAT_FNS = ("sqrt", "exp", "expm1", "log", "log1p", "log2", "log10", "sin", "cos", "tan", "asin", "acos",
              "atan", "sinh", "cosh", "tanh", "asinh", "acosh", "atanh")
sqrt, exp, expm1, log, log1p, log2, log10, sin, cos, tan, asin, acos, atan, sinh, cosh, tanh, asinh, acosh, \
    atanh = (_float_fn(n) for n in _FLOAT_FNS)


def clip(x: Array, /, min: Any = None, max: Any = None) -> Array:  # noqa: A002
    """``x`` limited to [min, max] (either may be None, a scalar or an array); the dtype of ``x``."""
    out = x
    if min is not None:
        out = maximum(out, min)
    if max is not None:
        out = minimum(out, max)
    return out if out is not x else positive(x)


def where(condition: Array, x1: Any, x2: Any, /) -> Array:
    """``x1`` where ``condition`` else ``x2`` (broadcast; Python scalars allowed; fused like any
    elementwise op). A non-bool condition is tested against zero."""
    from ._device import same_device
    from ._elementwise import _is_scalar, broadcast_shapes
    from ._expr import Scalar, broadcast_view
    from ._fuse import cut
    if not isinstance(condition, Array):
        raise D.UnsupportedDTypeError("where: condition must be an array", fix="wrap it with asarray")
    cond = _as_bool(condition)
    arrays = [a for a in (x1, x2) if isinstance(a, Array)]
    for v in (x1, x2):
        if not isinstance(v, Array) and not _is_scalar(v):
            raise D.UnsupportedDTypeError(f"where: cannot use {type(v).__name__}", fix="pass arrays or scalars")
    dev = same_device([cond, *arrays], "where")
    dt = D.result_type(*[a.dtype for a in arrays]) if arrays else D.result_type(x1, x2)
    for v in (x1, x2):
        if _is_scalar(v):
            D.check_scalar(v, dt, "where")
    shape = broadcast_shapes(cond.shape, *[a.shape for a in arrays])
    ops = [cond, x1, x2]
    nodes = cut([a._node() if isinstance(a, Array) else Scalar(a, dt) for a in ops],
                [a if isinstance(a, Array) else None for a in ops])
    nodes = [n if n.dtype == dt or k == 0 or isinstance(n, Scalar) else Map("astype", (n,), dt, n.shape)
             for k, n in enumerate(nodes)]
    nodes = [broadcast_view(n, shape) for n in nodes]
    return Array(shape, dt, dev, Map("where", tuple(nodes), dt, shape))


def astype(x: Array, dtype: Any, /, *, copy: bool = True, device: Any = None) -> Array:
    """``x`` converted to ``dtype`` (float -> int truncates toward zero and saturates; NaN -> 0); the same
    array when ``copy=False`` and the dtype matches."""
    dt = D.as_dtype(dtype, "astype")
    if device is not None and device is not x.device:
        x = x.to_device(device)
    if dt == x.dtype and not copy:
        return x
    from ._device import check_dtype_on
    check_dtype_on(x.device, dt)
    return Array(x.shape, dt, x.device, Map("astype" if dt != x.dtype else "positive", (x._node(),), dt, x.shape))


__all__ = ["add", "subtract", "multiply", "divide", "floor_divide", "remainder", "pow", "maximum", "minimum",
           "atan2", "hypot", "logaddexp", "copysign", "nextafter", "equal", "not_equal", "less", "less_equal",
           "greater", "greater_equal", "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_invert",
           "bitwise_left_shift", "bitwise_right_shift", "logical_and", "logical_or", "logical_xor",
           "logical_not", "negative", "positive", "abs", "square", "sign", "reciprocal", "floor", "ceil", "trunc",
           "round", "isnan", "isinf", "isfinite", "signbit", *_FLOAT_FNS, "clip", "where", "astype"]
