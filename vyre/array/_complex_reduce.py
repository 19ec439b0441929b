"""The complex forms of reductions and products, built from the real kernels on the components (registered
in vyre/array/_complex.py's ``IMPL``; the real functions call them for complex input):

* ``sum``, ``mean``, ``cumulative_sum``: the real and imaginary parts reduced separately (two real
  reductions fusing ``real(x)`` / ``imag(x)`` into their loads), joined lazily;
* ``prod``: pairwise products of halves (log2(n) rounds of complex multiplies, the rounds fused in
  chains up to the tree limits): no logarithms, so zeros, signs and infinities behave as in multiplication;
  ``cumulative_prod`` by doubling (log2(n) rounds);
* ``matmul``, ``tensordot``: four real products (``(ar br - ai bi) + (ar bi + ai br) j``; three, or two
  when one operand is real), the real matrix kernels (and their accuracy) unchanged;
* ``vecdot``: ``sum(conj(x1) * x2)`` per the standard, as four real vecdots.

Argument checks (axes, shapes, devices) are those of the real functions the parts go through.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from ..errors import InvalidArgumentError, UnsupportedDTypeError
from . import _complex as C
from . import _dtypes as D
from . import _linalg as L
from . import _statistical as S
from ._array import Array
from ._creation import full
from ._kernels import dtypes as KD
from ._manipulation import concat
from ._views import permute_dims, reshape

Parts = tuple[Array, Array | None]  # (real part, imaginary part or None for a real operand)


def _work(x: Array, dtype: Any, what: str) -> Array:
    """``x`` in the requested ``dtype`` of a sum or product (a complex dtype; None: its own)."""
    if dtype is None:
        return x
    dt = D.as_dtype(dtype, what)
    if not KD.is_complex(dt):
        raise UnsupportedDTypeError(f"{what}: dtype={dt} for {x.dtype} input would drop the imaginary part",
                                    fix="leave dtype=None (or pass complex128)")
    return x if dt == x.dtype else D.astype(x, dt)


def _split(x: Array, dt: Any) -> Parts:
    """``x`` as the real parts of complex dtype ``dt`` (a real operand has no imaginary part)."""
    if KD.is_complex(x.dtype):
        x = x if x.dtype == dt else D.astype(x, dt)
        return C.real(x), C.imag(x)
    t = KD.real_of(dt)
    return (x if x.dtype == t else D.astype(x, t)), None


def _pair_dtype(x1: Any, x2: Any) -> Any:
    """The complex result dtype of two arrays (the real functions check everything else)."""
    return D.result_type(x1.dtype, x2.dtype) if isinstance(x1, Array) and isinstance(x2, Array) else KD.complex64


def _sum_parts(x: Array, *, axis: Any = None, dtype: Any = None, keepdims: bool = False) -> Array:
    x = _work(x, dtype, "sum")
    re, im = C.real(x), C.imag(x)
    return C.make_complex(S.sum(re, axis=axis, keepdims=keepdims), S.sum(im, axis=axis, keepdims=keepdims))


def _mean_parts(x: Array, *, axis: Any = None, keepdims: bool = False) -> Array:
    re, im = C.real(x), C.imag(x)
    return C.make_complex(S.mean(re, axis=axis, keepdims=keepdims), S.mean(im, axis=axis, keepdims=keepdims))


def _cumsum_parts(x: Array, *, axis: int | None = None, dtype: Any = None, include_initial: bool = False) -> Array:
    x = _work(x, dtype, "cumulative_sum")
    kw: dict[str, Any] = {"axis": axis, "include_initial": include_initial}
    return C.make_complex(S.cumulative_sum(C.real(x), **kw), S.cumulative_sum(C.imag(x), **kw))


def _prod(x: Array, *, axis: Any = None, dtype: Any = None, keepdims: bool = False) -> Array:
    """Pairwise: the reduced axes moved last and flattened to one of n, then n -> ceil(n/2) per round
    (an odd row padded with 1)."""
    x = _work(x, dtype, "prod")
    axes = S.normalize_axes(axis, x.ndim, "prod")
    keep = [d for d in range(x.ndim) if d not in axes]
    out_shape = tuple(1 if d in axes else x.shape[d] for d in range(x.ndim)) if keepdims else \
        tuple(x.shape[d] for d in keep)
    n = math.prod(x.shape[d] for d in axes)
    rows = math.prod(x.shape[d] for d in keep)
    if n == 0 or rows == 0:
        return full(out_shape, 1 + 0j, dtype=x.dtype, device=x.device)
    y = reshape(permute_dims(x, (*keep, *axes)), (rows, n))
    while n > 1:
        if n % 2:
            y = concat((y, full((rows, 1), 1 + 0j, dtype=x.dtype, device=x.device)), axis=1)
            n += 1
        y = y[:, : n // 2] * y[:, n // 2:]
        n //= 2
    return reshape(y, out_shape)


def _cumprod(x: Array, *, axis: int | None = None, dtype: Any = None, include_initial: bool = False) -> Array:
    """Running products by doubling (Hillis-Steele): round k multiplies each element by the one 2^k
    before it (1 before the start), log2(n) rounds of one kernel each; axis checks as the real function's."""
    x = _work(x, dtype, "cumulative_prod")
    if x.ndim == 0:
        S.cumulative_prod(C.real(x), axis=axis, include_initial=include_initial)  # its error (0-d)
    ax = 0 if axis is None and x.ndim == 1 else axis
    if ax is None or isinstance(ax, bool) or not isinstance(ax, int) or not -x.ndim <= ax < x.ndim:
        S.cumulative_prod(C.real(x), axis=axis, include_initial=include_initial)  # raises its error
        raise AssertionError("unreachable")  # pragma: no cover - the real function raised
    if not isinstance(include_initial, bool):
        raise InvalidArgumentError("cumulative_prod: include_initial must be a bool", fix="pass True or False")
    ax %= x.ndim
    perm = (*range(ax), *range(ax + 1, x.ndim), ax)
    y = permute_dims(x, perm)
    lead, n = y.shape[:-1], y.shape[-1]

    def ones(k: int) -> Array:
        return full((*lead, k), 1 + 0j, dtype=x.dtype, device=x.device)
    k = 1
    while k < n:
        y = y * concat((ones(k), y[..., : n - k]), axis=-1)
        k *= 2
    if include_initial:
        y = concat((ones(1), y), axis=-1)
    back = list(range(x.ndim - 1))
    back.insert(ax, x.ndim - 1)
    return permute_dims(y, tuple(back))


def _times(a: Parts, b: Parts, product: Callable[[Array, Array], Array]) -> Array:
    """``product`` (a real bilinear map) of complex operands given as parts."""
    (ar, ai), (br, bi) = a, b
    re = product(ar, br)
    if ai is not None and bi is not None:
        re = re - product(ai, bi)
    terms = [product(ar, bi) if bi is not None else None, product(ai, br) if ai is not None else None]
    present = [t for t in terms if t is not None]
    im = present[0] if len(present) == 1 else present[0] + present[1]
    return C.make_complex(re, im)


def _matmul(x1: Array, x2: Array) -> Array:
    dt = _pair_dtype(x1, x2)
    return _times(_split(x1, dt), _split(x2, dt), L.matmul)


def _tensordot(x1: Array, x2: Array, *, axes: Any = 2) -> Array:
    dt = _pair_dtype(x1, x2)
    return _times(_split(x1, dt), _split(x2, dt), lambda a, b: L.tensordot(a, b, axes=axes))


def _vecdot(x1: Array, x2: Array, *, axis: int = -1) -> Array:
    """``sum(conj(x1) * x2, axis)``: ``(ar br + ai bi) + (ar bi - ai br) j``."""
    dt = _pair_dtype(x1, x2)
    (ar, ai), (br, bi) = _split(x1, dt), _split(x2, dt)

    def dot(a: Array, b: Array) -> Array:
        return L.vecdot(a, b, axis=axis)
    re = dot(ar, br)
    if ai is not None and bi is not None:
        re = re + dot(ai, bi)
    im_terms = [dot(ar, bi) if bi is not None else None, -dot(ai, br) if ai is not None else None]
    present = [t for t in im_terms if t is not None]
    im = present[0] if len(present) == 1 else present[0] + present[1]
    return C.make_complex(re, im)


C.IMPL.update({"sum": _sum_parts, "mean": _mean_parts, "prod": _prod, "cumulative_sum": _cumsum_parts,
               "cumulative_prod": _cumprod, "matmul": _matmul, "tensordot": _tensordot,
               "vecdot": _vecdot})

__all__: list[str] = []
