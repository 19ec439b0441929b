"""Index maps: the :class:`~vyre.array._kernels.nodes.View` nodes, element ``i`` (row-major in the
view's shape) being element ``source_index(b, i)`` of the child. They move no data: the emitter computes
the child's index inside whatever kernel reads the view.

* :class:`Reshape`: the identity map (row-major order is kept);
* :class:`Strided`: ``offset + sum(coord_d * stride_d)`` over the child's row-major elements (strides 0
  to broadcast, negative to flip): broadcast_to, expand_dims, permute_dims, flip, basic slicing;
  :func:`strided_node` simplifies one to the child or a Reshape when it is the identity;
* :class:`Wrap`: coordinates wrapped modulo the child's axes (roll, tile, repeat by an integer).

A new kind of view subclasses View (``source_index`` and ``params``, the latter part of the cache key).
"""

from __future__ import annotations

from typing import Any

from ...ir.builder import ProgramBuilder
from ...ir.values import Val
from .nodes import Node, Scalar, View


def strides_of(shape: tuple[int, ...]) -> tuple[int, ...]:
    """Row-major element strides of ``shape``."""
    out, acc = [], 1
    for d in reversed(shape):
        out.append(acc)
        acc *= d
    return tuple(reversed(out))


class Reshape(View):
    """The same row-major elements under another shape: the index passes through."""

    __slots__ = ()

    def params(self) -> tuple[Any, ...]:
        return ()

    def source_index(self, b: ProgramBuilder, i: Val) -> Val:
        return i


class Strided(View):
    """Child element ``offset + sum(coord_d * strides[d])`` (child row-major flat index; u32 arithmetic
    wraps, so negative strides work as long as the result is in range)."""

    __slots__ = ("offset", "strides")

    def __init__(self, child: Node, shape: tuple[int, ...], offset: int, strides: tuple[int, ...]):
        super().__init__(child, shape)
        self.offset, self.strides = int(offset), tuple(int(s) for s in strides)

    def params(self) -> tuple[Any, ...]:
        return (self.offset, self.strides)

    def source_index(self, b: ProgramBuilder, i: Val) -> Val:
        acc: Val | None = None
        rest = strides_of(self.shape)
        for d, (n, s) in enumerate(zip(self.shape, self.strides)):
            if s == 0 or n == 1:
                continue
            coord = i / b.lit(rest[d], "u32") if rest[d] != 1 else i
            if d > 0:  # the outermost coordinate needs no modulo
                coord = coord % b.lit(n, "u32")
            term = coord * b.lit(s & 0xFFFFFFFF, "u32") if s != 1 else coord
            acc = term if acc is None else acc + term
        if acc is None:
            return b.lit(self.offset, "u32")
        return acc + b.lit(self.offset, "u32") if self.offset else acc


def broadcast_view(node: Node, shape: tuple[int, ...]) -> Node:
    """``node`` broadcast to ``shape`` (numpy rules; checked by the caller): itself when the shapes match."""
    if node.shape == shape:
        return node
    if isinstance(node, Scalar):
        return node  # a scalar is the same for every element
    pad = (1,) * (len(shape) - len(node.shape)) + node.shape
    cs = strides_of(pad)
    return Strided(node, shape, 0, tuple(0 if p == 1 else s for p, s in zip(pad, cs)))


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

    def params(self) -> tuple[Any, ...]:
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


__all__ = ["strides_of", "Reshape", "Strided", "Wrap", "broadcast_view", "strided_node"]
