"""The standard's elementwise functions (2024.12), each recording one Map node lazily: the work fuses
at evaluation (vyre/array/_kernels/fused.py), the IR of each op is in vyre/array/_kernels/elementwise.py.

:func:`apply` is the one way to record an elementwise op: device check, broadcasting, promotion, Python
scalars, the tree limits, then a Map node. Integer and bool inputs of float-only functions are converted
to float32 first (the standard leaves them implementation-defined). Complex operands (and Python complex
scalars) go through vyre/array/_complex.py's rules: the ops the standard defines for complex, others refused
with a TypeError; ``real``, ``imag`` and ``conj`` are there. ``where`` (the standard lists it with the
searching functions, vyre/array/_searching.py exports it) is recorded here like any elementwise op;
``astype`` is with the data types (vyre/array/_dtypes.py).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..errors import ArgumentTypeError, InvalidArgumentError, UnsupportedDTypeError
from . import _dtypes as D
from ._array import Array
from ._complex import elementwise_dtype as complex_dtype
from ._device import same_device
from ._kernels import elementwise as _ir  # noqa: F401 - registers the ops' IR in OPS
from ._kernels.dtypes import DType
from ._kernels.fused import MAX_LEAVES, MAX_NODES, cut
from ._kernels.index_maps import broadcast_view
from ._kernels.nodes import Leaf, Map, Node, Scalar

Scalarish = bool | int | float


def is_scalar(v: Any) -> bool:
    """Whether ``v`` is a Python scalar operand (bool, int, float; numpy scalars are not: see
    :func:`py_scalar`)."""
    return isinstance(v, (bool, int, float, complex)) and not isinstance(v, np.generic)


def py_scalar(v: Any) -> Any:
    """A real numpy scalar (``np.float64``, ``np.float32``, ``np.int64``, ``np.bool_``, ...) as the Python
    scalar of its kind, so it combines with arrays exactly as that Python scalar does (it does not change
    the array's dtype; an integer out of the dtype's range is refused); anything else unchanged."""
    if isinstance(v, np.generic) and v.dtype.kind in "biufc":
        return v.item()
    return v


def broadcast_together(*shapes: tuple[int, ...]) -> tuple[int, ...]:
    """The common shape of ``shapes`` (numpy rules), else DispatchError (see _utility.broadcast_shapes
    for the public function, which also validates its arguments)."""
    try:
        return tuple(np.broadcast_shapes(*shapes))
    except ValueError:
        raise InvalidArgumentError(f"shapes {', '.join(str(list(s)) for s in shapes)} do not broadcast",
                                   fix="make the trailing dimensions equal or 1 (see broadcast_to)") from None


_PROMOTED: dict[tuple[Any, ...], DType] = {}  # dtypes of the array operands -> their promoted dtype


def _same(d: DType) -> DType:
    return d


def _apply2(op: str, x: Any, y: Any, out: Callable[[DType], DType], accept: str,
            float_only: bool) -> Array | None:
    """The common binary case without the general rules: two arrays of one dtype, shape and device, or an
    array and a Python float (float array) or int (int or float array) that needs no promotion, with the
    tree inside the limits. None: use the general path (which also raises every error)."""
    tx, ty = type(x), type(y)
    arr = x if tx is Array else y if ty is Array else None
    if arr is None:
        return None
    dt = arr._dtype
    if dt.kind not in accept or (float_only and dt.kind != "f"):
        return None  # (before a scalar's range check: the general path may convert the array first)
    if tx is Array and ty is Array:
        if y._dtype != dt or x._shape != y._shape or x._device is not y._device:
            return None
        nx = x._expr if x._expr is not None else Leaf(x)
        ny = y._expr if y._expr is not None else Leaf(y)
    else:
        s = y if tx is Array else x
        ts = type(s)
        if ts is float:
            if dt.kind != "f":
                return None
        elif ts is int:
            if dt.kind in "iu":
                D.check_scalar(s, dt, op)
            elif dt.kind != "f":
                return None
        else:
            return None
        node = arr._expr if arr._expr is not None else Leaf(arr)
        sc = Scalar(s, dt)
        nx, ny = (node, sc) if tx is Array else (sc, node)
    shape, odt = arr._shape, out(dt)
    m = Map(op, (nx, ny), odt, shape)
    if m.size > MAX_NODES or len(m.leaf_ids) > MAX_LEAVES:
        return None  # the general path cuts the tree
    return Array._lazy(shape, odt, arr._device, m)


def apply(op: str, args: Sequence[Any], *, out: Callable[[DType], DType] = _same,
          accept: str = "biuf", float_only: bool = False, what: str | None = None) -> Array:
    """Record ``op`` over ``args`` (Arrays and Python scalars, at least one Array): the arrays' promoted
    dtype (float32 for ``float_only`` ops given integers) must be of a kind in ``accept`` ('b', 'i', 'u',
    'f'); ``out`` maps it to the result dtype. Returns a lazy Array."""
    if what is None:
        if len(args) == 2:
            fast = _apply2(op, args[0], args[1], out, accept, float_only)
            if fast is not None:
                return fast
        elif len(args) == 1 and type(args[0]) is Array:
            x = args[0]
            kind = x._dtype.kind
            if kind in accept and (kind == "f" or not float_only):
                node = x._expr if x._expr is not None else Leaf(x)
                if node.size < MAX_NODES:  # one more node, no new leaf
                    odt = out(x._dtype)
                    return Array._lazy(x._shape, odt, x._device, Map(op, (node,), odt, x._shape))
    # runs once per recorded op: plain loops and cached promotions (a chain of small ops is host-bound)
    args = [py_scalar(a) if isinstance(a, np.generic) else a for a in args]
    arrays: list[Array] = []
    scalars = False
    for a in args:
        if isinstance(a, Array):
            arrays.append(a)
        elif is_scalar(a):
            scalars = True
        else:
            raise ArgumentTypeError(f"{what or op}: cannot use {type(a).__name__} as an operand",
                                    fix="pass vyre arrays or Python scalars (vyre.array_api.asarray converts)")
    if not arrays:
        raise ArgumentTypeError(f"{what or op}: needs at least one array", fix="wrap one operand with asarray")
    name = what or op
    dev = same_device(arrays, name) if len(arrays) > 1 else arrays[0].device
    dts = tuple(a.dtype for a in arrays)
    dt = _PROMOTED.get(dts)
    if dt is None:
        dt = _PROMOTED[dts] = D.result_type(*dts)
    if dt.kind == "c" or (scalars and any(isinstance(a, complex) for a in args)):
        dt, out = complex_dtype(op, name, dt)  # raises for ops the standard leaves undefined
        float_only, accept = False, "c"
    if scalars:
        # Python scalars of a higher kind (implementation-defined in the standard): a float with integer or
        # bool arrays gives float32, an int with bool arrays int32 (numpy would widen to 64 bits)
        if dt.kind != "f" and any(isinstance(a, float) for a in args) and "f" in accept:
            dt = D.float32
        elif dt == D.bool and any(is_scalar(a) and not isinstance(a, bool) for a in args) and "i" in accept:
            dt = D.int32
    if float_only and dt.kind != "f":
        dt = D.float32
    if dt.kind not in accept:
        raise UnsupportedDTypeError(f"{name} is not defined for {dt} arrays",
                                    fix="convert with astype to a dtype of kind " + accept)
    if scalars:
        for a in args:
            if is_scalar(a):
                D.check_scalar(a, dt, name)
    shape = arrays[0].shape
    if any(a.shape != shape for a in arrays):
        shape = broadcast_together(*[a.shape for a in arrays])
    nodes: list[Node] = [a._node() if isinstance(a, Array) else Scalar(a, dt) for a in args]
    nodes = cut(nodes, [a if isinstance(a, Array) else None for a in args])
    for k, n in enumerate(nodes):
        if n.dtype != dt and not isinstance(n, Scalar):
            n = Map("astype", (n,), dt, n.shape)
        if n.shape != shape:
            n = broadcast_view(n, shape)
        nodes[k] = n
    odt = out(dt)
    return Array(shape, odt, dev, Map(op, tuple(nodes), odt, shape))


_NUM, _INT, _INTB, _ALL = "iuf", "iu", "biu", "biuf"


def _b(d: DType) -> DType: return D.bool


def add(x1: Any, x2: Any, /) -> Array: return apply("add", [x1, x2], accept=_NUM)
def subtract(x1: Any, x2: Any, /) -> Array: return apply("subtract", [x1, x2], accept=_NUM)
def multiply(x1: Any, x2: Any, /) -> Array: return apply("multiply", [x1, x2], accept=_NUM)
def divide(x1: Any, x2: Any, /) -> Array: return apply("divide", [x1, x2], accept="f", float_only=True)
def floor_divide(x1: Any, x2: Any, /) -> Array: return apply("floor_divide", [x1, x2], accept=_NUM)
def remainder(x1: Any, x2: Any, /) -> Array: return apply("remainder", [x1, x2], accept=_NUM)
def pow(x1: Any, x2: Any, /) -> Array:  # noqa: A001
    # x ** 2 as x * x on floats (numpy's fast path too): exact, where pow's exp2(2 log2 x) is not
    x1, x2 = py_scalar(x1), py_scalar(x2)
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
    """The next float32 (or float64) after x1 toward x2 (float16 raises; results that are subnormal may be
    flushed to zero by GPUs)."""
    r = apply("nextafter", [x1, x2], accept="f", float_only=True)
    if r.dtype not in (D.float32, D.float64):
        raise UnsupportedDTypeError("nextafter supports float32 and float64 only", fix="astype(float32) first")
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


def as_bool(x: Any) -> Any:
    """An array as a lazy bool array (non-zero, NaN true), a Python scalar as a bool."""
    if isinstance(x, Array) and x.dtype != D.bool:
        return Array(x.shape, D.bool, x.device, Map("astype", (x._node(),), D.bool, x.shape))
    return bool(x) if not isinstance(x, Array) else x


def logical_and(x1: Any, x2: Any, /) -> Array: return apply("bitwise_and", [as_bool(x1), as_bool(x2)])
def logical_or(x1: Any, x2: Any, /) -> Array: return apply("bitwise_or", [as_bool(x1), as_bool(x2)])
def logical_xor(x1: Any, x2: Any, /) -> Array: return apply("bitwise_xor", [as_bool(x1), as_bool(x2)])
def logical_not(x: Array, /) -> Array: return apply("logical_not", [as_bool(x)])


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
    fn.__doc__ = (f"Elementwise {name} (float; integer input is converted to float32). "
                  "Accuracy: vyre/array/_kernels/float_math.py.")
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
    if not isinstance(condition, Array):
        raise ArgumentTypeError("where: condition must be an array", fix="wrap it with asarray")
    cond = as_bool(condition)
    x1, x2 = py_scalar(x1), py_scalar(x2)
    arrays = [a for a in (x1, x2) if isinstance(a, Array)]
    for v in (x1, x2):
        if not isinstance(v, Array) and not is_scalar(v):
            raise ArgumentTypeError(f"where: cannot use {type(v).__name__}", fix="pass arrays or scalars")
    dev = same_device([cond, *arrays], "where")
    dt = D.result_type(*[a.dtype for a in arrays]) if arrays else D.result_type(x1, x2)
    for v in (x1, x2):
        if is_scalar(v):
            D.check_scalar(v, dt, "where")
    shape = broadcast_together(cond.shape, *[a.shape for a in arrays])
    ops = [cond, x1, x2]
    nodes = cut([a._node() if isinstance(a, Array) else Scalar(a, dt) for a in ops],
                [a if isinstance(a, Array) else None for a in ops])
    nodes = [n if n.dtype == dt or k == 0 or isinstance(n, Scalar) else Map("astype", (n,), dt, n.shape)
             for k, n in enumerate(nodes)]
    nodes = [broadcast_view(n, shape) for n in nodes]
    return Array(shape, dt, dev, Map("where", tuple(nodes), dt, shape))


__all__ = ["add", "subtract", "multiply", "divide", "floor_divide", "remainder", "pow", "maximum", "minimum",
           "atan2", "hypot", "logaddexp", "copysign", "nextafter", "equal", "not_equal", "less", "less_equal",
           "greater", "greater_equal", "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_invert",
           "bitwise_left_shift", "bitwise_right_shift", "logical_and", "logical_or", "logical_xor",
           "logical_not", "negative", "positive", "abs", "square", "sign", "reciprocal", "floor", "ceil", "trunc",
           "round", "isnan", "isinf", "isfinite", "signbit", *_FLOAT_FNS, "clip"]
