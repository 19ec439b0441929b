"""``permutation`` and ``choice``: sorting random words.

A permutation of ``n`` is the stable argsort of ``n`` random uint32 words. Equal words (probability about
``n**2 / 2**33`` per sort) keep their previous order, which is deterministic but not random; as JAX's
``permutation`` does, the shuffle repeats with fresh words ``ceil(3 ln n / ln(2**32 - 1))`` times (once up
to n = 1,625, twice up to about 2.6 million), applying each sort to the previous result, so a tie left
by one round is reordered by the next.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import array as va
from ..array import _dtypes as D
from ..array._array import Array
from ..array._creation import check_shape
from ..array._elementwise import log
from ..errors import ArgumentTypeError, InvalidArgumentError
from ._distributions import randint, uniform, unit
from ._keys import check_key, fold_in, generate

if TYPE_CHECKING:
    from ..backends.base import Backend

_MAX_N = (1 << 31) - 1  # int32 indices


def rounds(n: int) -> int:
    """The number of sorting rounds for ``n`` elements (see the module docstring)."""
    return max(1, math.ceil(3 * math.log(max(n, 1)) / math.log(2**32 - 1)))


def _count(x: Any, axis: int, what: str) -> tuple[int, Array | None, int]:
    """(n, the array or None, its normalised axis) for ``x``: an int n >= 0 or an array with an axis."""
    if isinstance(x, Array):
        if x.ndim == 0:
            raise InvalidArgumentError(f"{what}: a 0-d array has no axis to shuffle", fix="pass a 1-D array or an int")
        if not -x.ndim <= axis < x.ndim:
            raise InvalidArgumentError(f"{what}: axis {axis} is out of range for a {x.ndim}-D array",
                                       fix=f"pass an axis in [-{x.ndim}, {x.ndim})")
        ax = axis % x.ndim
        return x.shape[ax], x, ax
    if isinstance(x, (bool, np.bool_)) or not isinstance(x, (int, np.integer)):
        raise ArgumentTypeError(f"{what}: x must be an int or a vyre array, not {type(x).__name__}",
                                fix=f"{what}(key, 10) or {what}(key, array)")
    n = int(x)
    if not 0 <= n <= _MAX_N:
        raise InvalidArgumentError(f"{what}: n must be in [0, 2**31 - 1], not {n}", fix="pass a non-negative int")
    return n, None, 0


def _axis(axis: Any, what: str) -> int:
    if isinstance(axis, (bool, np.bool_)) or not isinstance(axis, (int, np.integer)):
        raise ArgumentTypeError(f"{what}: axis must be an int, not {type(axis).__name__} {axis!r}", fix="axis=0")
    return int(axis)


def _shuffle(k: Array, n: int) -> Array:
    """A random permutation of range(n) as int32 (see the module docstring)."""
    if n == 0:
        return va.zeros((0,), dtype=D.int32, device=k.device)
    perm: Array | None = None
    for r in range(rounds(n)):
        sub = k if r == 0 else fold_in(k, r)
        order = va.argsort(generate(sub, (n,), "bits", "permutation"), stable=True)
        perm = order if perm is None else va.take(perm, order)
    assert perm is not None
    return perm


def permutation(key: Array, x: int | Array, axis: int = 0, *, device: Backend | None = None) -> Array:
    """A random permutation: of ``range(x)`` (int32) for an int ``x``, else of ``x``'s elements along
    ``axis`` (a new array; one permutation of the slices along that axis)."""
    k = check_key(key, "permutation", device)
    n, arr, ax = _count(x, _axis(axis, "permutation"), "permutation")
    perm = _shuffle(k, n)
    if arr is None:
        return perm
    if arr.device is not k.device:
        arr = arr.to_device(k.device)
    return va.take(arr, perm, axis=ax)


def choice(key: Array, a: int | Array, shape: Any = (), replace: bool = True, p: Array | None = None,
           axis: int = 0, *, device: Backend | None = None) -> Array:
    """Random picks of ``shape`` from ``range(a)`` (an int) or from ``a``'s slices along ``axis``:
    with ``replace``, independent uniform indices (``randint``) or, with probabilities ``p`` (a float
    array of ``n``, normalised here), the inverse of ``p``'s cumulative sum at uniform points; without,
    the first ``prod(shape)`` of a permutation, or with ``p`` the Gumbel top-k (the largest ``log p - log(-log
    u)``), which draws without replacement in proportion to ``p``."""
    k = check_key(key, "choice", device)
    dims = check_shape(shape, "choice")
    n, arr, ax = _count(a, _axis(axis, "choice"), "choice")
    m = math.prod(dims)
    if not isinstance(replace, (bool, np.bool_)):
        raise ArgumentTypeError(f"choice: replace must be a bool, not {replace!r}", fix="replace=False")
    if n == 0 and m:
        raise InvalidArgumentError("choice: cannot pick from an empty population", fix="pass a non-empty a")
    if not replace and m > n:
        raise InvalidArgumentError(f"choice: {m} picks without replacement from {n} elements",
                                   fix="pick at most n, or pass replace=True")
    if p is not None:
        if not isinstance(p, Array) or p.dtype.kind != "f" or p.shape != (n,):
            raise ArgumentTypeError(f"choice: p must be a float array of shape ({n},)", fix="pass p as float32")
        if p.device is not k.device:
            p = p.to_device(k.device)
        if p.dtype != D.float32:
            p = va.astype(p, D.float32)
    if m == 0:
        idx = va.zeros(dims, dtype=D.int32, device=k.device)
    elif replace and p is None:
        idx = randint(k, dims, 0, n)
    elif replace:
        assert p is not None
        cdf = va.cumulative_sum(p)
        total = cdf[-1]  # points strictly below it: never past the last non-zero probability
        u = va.minimum(uniform(k, dims) * total, va.nextafter(total, va.zeros_like(total)))
        idx = va.minimum(va.searchsorted(cdf, va.reshape(u, (m,)), side="right"), n - 1)
        idx = va.reshape(idx, dims)
    elif p is None:
        idx = va.reshape(_shuffle(k, n)[:m], dims)
    else:
        u = va.clip(unit(generate(k, (n,), "bits", "choice"), D.float32), 2.0**-24, 1.0 - 2.0**-24)
        score = log(p) - log(-log(u))  # Gumbel-perturbed log-probabilities
        idx = va.reshape(va.argsort(score, descending=True, stable=True)[:m], dims)
    return idx if arr is None else va.take(arr, idx, axis=ax)


__all__ = ["permutation", "choice", "rounds"]
