"""Views: arrays whose node is an index map over another array's (vyre/array/_kernels/index_maps.py).
They move no data and fuse into whatever consumes them. The standard's broadcast_to, reshape and
permute_dims (exported with the manipulation functions, vyre/array/_manipulation.py), the axis
arguments' normalisation, and the two view builders the manipulation and indexing functions share:

* :func:`axis_view`: every view that maps each output axis to one input axis, or to none (slicing, flip,
  expand_dims, squeeze, permutations, broadcasting); it composes with a Strided child (a slice of a flip
  of a transpose is one Strided node, one index computation) and becomes a Reshape (no index arithmetic)
  when the result is row-major in the child's elements;
* :func:`wrap_view`: the :class:`~vyre.array._kernels.index_maps.Wrap` map (roll, tile, repeat by an int).
"""

from __future__ import annotations

import math
import operator
from collections.abc import Sequence
from typing import Any

from ..errors import ArgumentTypeError, AxisError, InvalidArgumentError
from ._array import Array
from ._elementwise import broadcast_together
from ._kernels.index_maps import Reshape, Strided, Wrap, broadcast_view, strided_node, strides_of
from ._kernels.nodes import Node


def axis_index(value: Any, what: str) -> int:
    """``value`` as a Python int (``operator.index``; bools refused), else DispatchError."""
    if isinstance(value, bool):
        raise ArgumentTypeError(f"{what}: expected an integer, got {value!r}", fix="pass an int")
    try:
        return operator.index(value)
    except TypeError:
        raise ArgumentTypeError(f"{what}: expected an integer, got {type(value).__name__}",
                                fix="pass an int (or a tuple of ints where allowed)") from None


def normalize_axis(axis: Any, ndim: int, what: str) -> int:
    """``axis`` in [-ndim, ndim) as a non-negative axis."""
    a = axis_index(axis, what)
    if not -ndim <= a < ndim:
        raise AxisError(f"{what}: axis {a} is out of range for an array of {ndim} dimension(s)",
                        fix=f"pass an axis in [{-ndim}, {ndim - 1}]" if ndim else "a 0-d array has no axes")
    return a % ndim


def normalize_axes(axis: Any, ndim: int, what: str) -> tuple[int, ...]:
    """An int or a tuple of ints as distinct non-negative axes, in the order given."""
    items = tuple(axis) if isinstance(axis, (tuple, list)) else (axis,)
    out = tuple(normalize_axis(a, ndim, what) for a in items)
    if len(set(out)) != len(out):
        raise AxisError(f"{what}: repeated axis in {items!r}", fix="name each axis once")
    return out


def _base(x: Array) -> tuple[Node, int, tuple[int, ...]]:
    """(child, offset, per-axis strides): x's elements as child element ``offset + sum(c_k * st_k)``."""
    node = x._node()
    if isinstance(node, Strided):
        return node.child, node.offset, node.strides
    return node, 0, strides_of(x.shape)


def axis_view(x: Array, shape: Sequence[int], start: Sequence[int],
              dims: Sequence[tuple[int | None, int]]) -> Array:
    """A lazy view of ``x``: output dimension ``d`` of size ``shape[d]`` walks input axis ``dims[d][0]``
    from ``start`` with step ``dims[d][1]`` (None: a new axis, stride 0, so any size broadcasts); input
    axes no output dimension walks stay at ``start[k]``."""
    out = tuple(int(n) for n in shape)
    child, off, st = _base(x)
    offset = off + sum(int(s) * t for s, t in zip(start, st))
    strides = tuple(0 if a is None else step * st[a] for a, step in dims)
    return Array(out, x.dtype, x.device, strided_node(child, out, offset, strides))


def wrap_view(x: Array, shape: Sequence[int], div: Sequence[int], add: Sequence[int]) -> Array:
    """``x`` through a :class:`Wrap` map (the identity is returned as ``x``)."""
    out = tuple(int(n) for n in shape)
    if out == x.shape and all(d == 1 for d in div) and not any(add):
        return x
    return Array(out, x.dtype, x.device, Wrap(x._node(), out, tuple(div), tuple(add)))


def broadcast_to(x: Array, /, shape: Sequence[int]) -> Array:
    """``x`` broadcast to ``shape`` (numpy rules; a lazy view)."""
    s = tuple(int(d) for d in shape)
    if broadcast_together(x.shape, s) != s:
        raise InvalidArgumentError(f"broadcast_to: {list(x.shape)} cannot broadcast to {list(s)}",
                                   fix="dimensions of x must equal the target's or be 1")
    return Array(s, x.dtype, x.device, broadcast_view(x._node(), s))


def reshape(x: Array, /, shape: Sequence[int], *, copy: bool | None = None) -> Array:
    """``x`` with a new shape of the same size (one dimension may be -1); a lazy view. ``copy=False``
    is always honoured (no copy is ever made)."""
    dims = [int(d) for d in shape]
    if dims.count(-1) > 1 or any(d < -1 for d in dims):
        raise InvalidArgumentError(f"reshape: bad shape {dims}", fix="non-negative dimensions, at most one -1")
    if -1 in dims:
        rest = math.prod(d for d in dims if d != -1)
        if rest == 0 or x.size % rest:
            raise InvalidArgumentError(f"reshape: cannot infer -1 in {dims} for size {x.size}",
                                       fix="give every dimension")
        dims[dims.index(-1)] = x.size // rest
    s = tuple(dims)
    if math.prod(s) != x.size:
        raise InvalidArgumentError(f"reshape: {list(x.shape)} ({x.size} elements) cannot become {list(s)}",
                                   fix="keep the number of elements")
    if s == x.shape:
        return x
    return Array(s, x.dtype, x.device, Reshape(x._node(), s))


def permute_dims(x: Array, /, axes: Sequence[int]) -> Array:
    """``x`` with its axes reordered (a lazy strided view)."""
    ax = [int(a) % max(1, x.ndim) if -x.ndim <= int(a) < x.ndim else -1 for a in axes]
    if sorted(ax) != list(range(x.ndim)):
        raise AxisError(f"permute_dims: {list(axes)} is not a permutation of {x.ndim} axes",
                        fix=f"pass each of 0..{x.ndim - 1} once")
    src = strides_of(x.shape)
    s = tuple(x.shape[a] for a in ax)
    if ax == list(range(x.ndim)):
        return x
    return Array(s, x.dtype, x.device, Strided(x._node(), s, 0, tuple(src[a] for a in ax)))


__all__ = ["broadcast_to", "reshape", "permute_dims"]
