"""Emitting a lazy expression tree (vyre/array/_kernels/nodes.py) as IR inside any ProgramBuilder.

:data:`OPS` holds each elementwise op's IR (``(b, args, arg_dtypes, out_dtype) -> Val``): filled by
vyre/array/_kernels/elementwise.py and by the families that add ops of their own (the order keys of
vyre/array/_kernels/sort.py). :class:`Emitter` declares a tree's buffers and emits element ``i``; a
kernel that consumes arrays (a reduction, a gather) fuses the pending work feeding it this way.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ...ir.builder import ProgramBuilder
from ...ir.types import DataType
from ...ir.values import BufRef, Val
from .dtypes import DType, ir_type
from .nodes import Leaf, Map, Node, Scalar, View, collect, scalar_slots

#: Elementwise ops: name -> emit(builder, args: list[Val], arg_dtypes, out_dtype) -> Val (unique names).
OPS: dict[str, Callable[[ProgramBuilder, list[Val], list[DType], DType], Val]] = {}
#: The same ops where an operand or the result is complex (``vec2<f32>`` values: vyre/array/_kernels/complex.py)
COMPLEX_OPS: dict[str, Callable[[ProgramBuilder, list[Val], list[DType], DType], Val]] = {}


class Emitter:
    """A tree's buffers declared in a builder (its leaves' buffers in ``leaves`` order, then a u32
    parameter buffer when it has ``scalars``, following each other in binding order): ``value(i)``
    emits element ``i``; ``fused.Plan.bind(emitter)`` gives the handles for those buffers."""

    def __init__(self, b: ProgramBuilder, node: Node, prefix: str = "in"):
        self.b, self.node = b, node
        c = collect(node)
        self.key, self.leaves, self.scalars = c.key, c.leaves, c.scalars
        self.bufs: dict[int, BufRef] = {}
        for k, leaf in enumerate(self.leaves):
            t, count = self.leaf_buffer(leaf)
            self.bufs[leaf.ident] = b.buffer(f"{prefix}{k}", t, "read", count=count)
        slots, words = scalar_slots(self.scalars)
        self.params = b.buffer(f"{prefix}_p", "u32", "read", count=words) if self.scalars else None
        self._slot = {id(s): k for k, s in zip(slots, self.scalars)}

    def leaf_buffer(self, leaf: Leaf) -> tuple[Any, int]:
        """The element type and count a leaf's buffer is declared with."""
        return ir_type(leaf.dtype), max(1, leaf.count)

    def value(self, i: Val) -> Val:
        """The value of element ``i`` (a u32 row-major index into the node's shape)."""
        return self._emit(self.node, i)

    def scalar(self, n: Scalar) -> Val:
        """A scalar parameter: its u32 word from the parameter buffer, as its dtype."""
        assert self.params is not None
        w = self.params[self._slot[id(n)]]
        t = ir_type(n.dtype)
        if t == DataType.BOOL:
            return w != 0
        if t == DataType.F16:
            return w.bitcast("f32").cast("f16")
        if t == DataType.VEC2_F32:  # complex64: the f32 bits of re, then of im (nodes.scalar_words)
            im = self.params[self._slot[id(n)] + 1]
            return self.b.vec(t, w.bitcast("f32"), im.bitcast("f32"))
        if t == DataType.VEC4_U32:  # complex128: the words of re, then of im (low first)
            k = self._slot[id(n)]
            return self.b.vec(t, w, *(self.params[k + j] for j in (1, 2, 3)))
        if t.is_64bit:  # two words, low first (nodes.scalar_words)
            hi = self.params[self._slot[id(n)] + 1]
            return self.b.vec("vec2<u32>", w, hi).bitcast(t)
        return w if t == DataType.U32 else w.bitcast(t)

    def map(self, n: Map, args: list[Val]) -> Val:
        dts = [a.dtype for a in n.args]
        if n.dtype.kind == "c" or any(d.kind == "c" for d in dts):
            return self.b.let(COMPLEX_OPS[n.op](self.b, args, dts, n.dtype))
        return self.b.let(OPS[n.op](self.b, args, dts, n.dtype))

    def _emit(self, n: Node, i: Val) -> Val:
        if isinstance(n, Leaf):
            return self.bufs[n.ident][i]
        if isinstance(n, Scalar):
            return self.scalar(n)
        if isinstance(n, Map):
            return self.map(n, [self._emit(a, i) for a in n.args])
        if isinstance(n, View):
            return self._emit(n.child, self.b.let(n.source_index(self.b, i)))
        raise TypeError(f"unknown node {type(n).__name__}")


def emit(b: ProgramBuilder, node: Node, flat_index: Val, prefix: str = "in") -> tuple[Val, Emitter]:
    """Declare ``node``'s buffers in ``b`` and emit element ``flat_index``: ``(value, emitter)``; bind
    ``plan.bind(emitter)`` (see :class:`Emitter`)."""
    e = Emitter(b, node, prefix)
    return e.value(flat_index), e


__all__ = ["OPS", "COMPLEX_OPS", "Emitter", "emit"]
