"""Complex numbers in vyre.array (the standard's complex64, and complex128 where the device has
``shader-f64``): the elementwise rules for complex operands, ``real``/``imag``/``conj``, and the table of
complex forms of functions defined elsewhere.

Storage: a complex array's buffer holds interleaved (re, im) pairs, numpy's layout: one ``vec2<f32>`` per
complex64 element, one ``vec4<u32>`` (the words of two f64) per complex128 element (the IR is in
vyre/array/_kernels/complex.py), so views, indexing, concat, the fused kernels and host
transfers move pairs as they move any element (the FFT pipelines read and write that layout as it is:
vyre/array/_kernels/fft.py).

Functions defined in other modules whose complex form is built from real work (``sum``, ``prod``,
``mean``, ``matmul``, ``tensordot``, ``vecdot``, ``cumulative_sum``, ``cumulative_prod``) call
:func:`dispatch` for complex input;
vyre/array/_complex_reduce.py registers those forms in :data:`IMPL` (this module sits below the modules
that call it). A function with no complex form raises :class:`~vyre.errors.ArgumentTypeError` (a
TypeError: the standard leaves it undefined for complex), before any GPU work.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..errors import ArgumentTypeError, UnsupportedDTypeError
from ._array import Array
from ._array import check_array as _check
from ._kernels import complex as _ir  # registers the complex ops' IR
from ._kernels import dtypes as KD
from ._kernels.dtypes import DType
from ._kernels.nodes import Map

#: complex forms of functions defined in other modules (filled by vyre/array/_complex_reduce.py)
IMPL: dict[str, Callable[..., Array]] = {}


def undefined(what: str, dtype: DType) -> ArgumentTypeError:
    """The error of a function the standard does not define for complex (ordering, rounding, ...)."""
    return ArgumentTypeError(f"{what} is not defined for complex arrays ({dtype}): complex numbers have no "
                             "order (the array API standard)",
                             fix="apply it to real(x), imag(x) or abs(x)")


def dispatch(what: str, x: Array, *args: Any, **kwargs: Any) -> Array:
    """The complex form of ``what`` on ``x`` (registered in :data:`IMPL`), or :func:`undefined`'s error."""
    fn = IMPL.get(what)
    if fn is None:
        raise undefined(what, x.dtype)
    return fn(x, *args, **kwargs)


def elementwise_dtype(op: str, name: str, dt: DType) -> tuple[DType, Callable[[DType], DType]]:
    """For ``_elementwise.apply``: the operands' dtype and the result-dtype rule of ``op`` when an operand
    is complex (``dt`` complex) or a Python complex scalar meets real arrays (then complex64, or complex128
    for float64). Raises for ops the standard leaves undefined for complex."""
    if not KD.is_complex(dt):
        dt = KD.complex_of(dt) if dt.kind == "f" else KD.complex64  # a Python complex with real arrays
    kind = _ir.RESULT.get(op)
    if kind is None:
        raise undefined(name, dt)
    if kind == "c":
        return dt, lambda d: d
    if kind == "r":
        return dt, KD.real_of
    return dt, lambda d: KD.bool


def _component(x: Any, op: str) -> Array:
    x = _check(x, op)
    if not KD.is_complex(x.dtype):
        if x.dtype.kind != "f":
            raise UnsupportedDTypeError(f"{op} needs a floating-point or complex array, got {x.dtype}",
                                        fix="astype(float32) or astype(complex64) first")
        if op == "real":
            return Array(x.shape, x.dtype, x.device, Map("positive", (x._node(),), x.dtype, x.shape))
        from ._creation import zeros  # the imaginary part of a real array (numpy's rule)

        return zeros(x.shape, dtype=x.dtype, device=x.device)
    rt = KD.real_of(x.dtype)
    return Array(x.shape, rt, x.device, Map(op, (x._node(),), rt, x.shape))


def real(x: Array, /) -> Array:
    """The real part (float32 for complex64, float64 for complex128; a real floating array: a copy of itself)."""
    return _component(x, "real")


def imag(x: Array, /) -> Array:
    """The imaginary part (float32 for complex64, float64 for complex128; a real floating array: zeros)."""
    return _component(x, "imag")


def conj(x: Array, /) -> Array:
    """The complex conjugate (``re - im j``); a real array is returned as a copy (numpy's rule)."""
    x = _check(x, "conj")
    op = "conj" if KD.is_complex(x.dtype) else "positive"
    return Array(x.shape, x.dtype, x.device, Map(op, (x._node(),), x.dtype, x.shape))


def make_complex(re: Array, im: Array) -> Array:
    """``re + im j`` from two float32 (float64) arrays of one shape and device: complex64 (complex128);
    lazy, fused with both."""
    dt = KD.complex_of(re.dtype)
    return Array(re.shape, dt, re.device, Map("complex", (re._node(), im._node()), dt, re.shape))


__all__ = ["real", "imag", "conj"]
