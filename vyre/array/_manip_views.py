"""The view machinery of the manipulation and indexing functions: axis normalisation, :func:`axis_view`
(every view that maps each output axis to one input axis, or to none: slicing, flip, expand_dims, squeeze,
permutations, broadcasting), and the :class:`Wrap` index map (roll, tile, repeat by an integer).

Views stay lazy and fuse into whatever consumes them. :func:`axis_view` composes with a :class:`Strided`
child (a slice of a flip of a transpose is one Strided node, one index computation), and becomes a
:class:`Reshape` (no index arithmetic at all) when the result is row-major in the child's elements.
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from typing import Any

from ..errors import DispatchError
from ..ir.builder import ProgramBuilder
from ..ir.values import Val
from ._array import Array
from ._expr import Node, Reshape, Strided, View, strides_of


def axis_index(value: Any, what: str) -> int:
    """``value`` as a Python int (``operator.index``; bools refused), else DispatchError."""
    if isinstance(value, bool):
        raise DispatchError(f"{what}: expected an integer, got {value!r}", fix="pass an int")
    try:
        return operator.index(value)
    except TypeError:
        raise DispatchError(f"{what}: expected an integer, got {type(value).__name__}",
                            fix="pass an int (or a tuple of ints where allowed)") from None


def normalize_axis(axis: Any, ndim: int, what: str) -> int:
    """``axis`` in [-ndim, ndim) as a non-negative axis."""
    a = axis_index(axis, what)
    if not -ndim <= a < ndim:
        raise DispatchError(f"{what}: axis {a} is out of range for an array of {ndim} dimension(s)",
                            fix=f"pass an axis in [{-ndim}, {ndim - 1}]" if ndim else "a 0-d array has no axes")
    return a % ndim


def normalize_axes(axis: Any, ndim: int, what: str) -> tuple[int, ...]:
    """An int or a tuple of ints as distinct non-negative axes, in the order given."""
    items = tuple(axis) if isinstance(axis, (tuple, list)) else (axis,)
    out = tuple(normalize_axis(a, ndim, what) for a in items)
    if len(set(out)) != len(out):
        raise DispatchError(f"{what}: repeated axis in {items!r}", fix="name each axis once")
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


def strided_node(child: Node, shape: tuple[int, ...], offset: int, strides: tuple[int, ...]) -> Node:
    """``Strided(child, shape, offset, strides)``, simplified: the child itself or a Reshape when the
    map is the identity on row-major order (no index arithmetic in the kernel)."""
    rm = strides_of(shape)
    size = 1
    for n in shape:
        size *= n
    identity = offset == 0 and all(n == 1 or s == r for n, s, r in zip(shape, strides, rm))
    if identity and size == child.count:
        return child if child.shape == shape else Reshape(child, shape)
    return Strided(child, shape, offset, strides)


class Wrap(View):
    """Child coordinate ``(c_k // div[k] + add[k]) % child.shape[k]`` along each axis (same number of
    axes): ``roll`` (add), ``tile`` (an output axis longer than the child's) and ``repeat`` by an integer
    (div)."""

    __slots__ = ("div", "add")

    def __init__(self, child: Node, shape: tuple[int, ...], div: tuple[int, ...], add: tuple[int, ...]):
        super().__init__(child, shape)
        self.div, self.add = tuple(int(d) for d in div), tuple(int(a) for a in add)

    def params(self) -> tuple:
        return (self.div, self.add)

    def source_index(self, b: ProgramBuilder, i: Val) -> Val:
        rest, src = strides_of(self.shape), strides_of(self.child.shape)
        acc: Val | None = None
        for d, (n, m) in enumerate(zip(self.shape, self.child.shape)):
            if m == 1:
                continue
            c = i / b.lit(rest[d], "u32") if rest[d] != 1 else i
            if d > 0:
                c = c % b.lit(n, "u32")
            if self.div[d] != 1:
                c = c / b.lit(self.div[d], "u32")
            if self.add[d]:
                c = c + b.lit(self.add[d], "u32")
            if self.add[d] or n > m * self.div[d]:  # the coordinate can pass the child's axis: wrap it
                c = c % b.lit(m, "u32")
            term = c * b.lit(src[d], "u32") if src[d] != 1 else c
            acc = term if acc is None else acc + term
        return acc if acc is not None else b.lit(0, "u32")


def wrap_view(x: Array, shape: Sequence[int], div: Sequence[int], add: Sequence[int]) -> Array:
    """``x`` through a :class:`Wrap` map (the identity is returned as ``x``)."""
    out = tuple(int(n) for n in shape)
    if out == x.shape and all(d == 1 for d in div) and not any(add):
        return x
    return Array(out, x.dtype, x.device, Wrap(x._node(), out, tuple(div), tuple(add)))


__all__ = ["axis_index", "normalize_axis", "normalize_axes", "axis_view", "strided_node", "Wrap", "wrap_view"]
