"""Views as lazy index maps (vyre/array/_expr.py :class:`View`): they record a node, move no data, and
fuse into whatever consumes them. The worked examples for the other view functions (expand_dims, squeeze,
flip, basic slicing: each a :class:`Strided` with its own offset and strides):

* ``broadcast_to``: strides 0 along broadcast dimensions (``broadcast_view``);
* ``reshape``: :class:`Reshape`, the identity index map (row-major order is kept);
* ``permute_dims``: a Strided node whose strides are the child's row-major strides, permuted.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from ..errors import DispatchError
from ._array import Array
from ._elementwise import broadcast_shapes
from ._expr import Reshape, Strided, broadcast_view, strides_of


def broadcast_to(x: Array, /, shape: Sequence[int]) -> Array:
    """``x`` broadcast to ``shape`` (numpy rules; a lazy view)."""
    s = tuple(int(d) for d in shape)
    if broadcast_shapes(x.shape, s) != s:
        raise DispatchError(f"broadcast_to: {list(x.shape)} cannot broadcast to {list(s)}",
                            fix="dimensions of x must equal the target's or be 1")
    return Array(s, x.dtype, x.device, broadcast_view(x._node(), s))


def reshape(x: Array, /, shape: Sequence[int], *, copy: bool | None = None) -> Array:
    """``x`` with a new shape of the same size (one dimension may be -1); a lazy view. ``copy=False``
    is always honoured (no copy is ever made)."""
    dims = [int(d) for d in shape]
    if dims.count(-1) > 1 or any(d < -1 for d in dims):
        raise DispatchError(f"reshape: bad shape {dims}", fix="non-negative dimensions, at most one -1")
    if -1 in dims:
        rest = math.prod(d for d in dims if d != -1)
        if rest == 0 or x.size % rest:
            raise DispatchError(f"reshape: cannot infer -1 in {dims} for size {x.size}", fix="give every dimension")
        dims[dims.index(-1)] = x.size // rest
    s = tuple(dims)
    if math.prod(s) != x.size:
        raise DispatchError(f"reshape: {list(x.shape)} ({x.size} elements) cannot become {list(s)}",
                            fix="keep the number of elements")
    if s == x.shape:
        return x
    return Array(s, x.dtype, x.device, Reshape(x._node(), s))


def permute_dims(x: Array, /, axes: Sequence[int]) -> Array:
    """``x`` with its axes reordered (a lazy strided view)."""
    ax = [int(a) % max(1, x.ndim) if -x.ndim <= int(a) < x.ndim else -1 for a in axes]
    if sorted(ax) != list(range(x.ndim)):
        raise DispatchError(f"permute_dims: {list(axes)} is not a permutation of {x.ndim} axes",
                            fix=f"pass each of 0..{x.ndim - 1} once")
    src = strides_of(x.shape)
    s = tuple(x.shape[a] for a in ax)
    if ax == list(range(x.ndim)):
        return x
    return Array(s, x.dtype, x.device, Strided(x._node(), s, 0, tuple(src[a] for a in ax)))


__all__ = ["broadcast_to", "reshape", "permute_dims"]
