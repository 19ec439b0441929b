"""The vec4 variant of a fused elementwise program: one invocation per 4 output elements, every
buffer read and written as ``vec4<T>`` (what the op library's elementwise kernel does), so a fused
chain moves its bytes at the rate of a single ``zip.add``.

:func:`vec4_program` builds it for a tree where it gives the same values as the scalar program,
else returns None (and :func:`vyre.array._kernels.fused.program_for` builds the scalar one). Valid when:

* the tree is Leaf, Scalar, Map and Reshape nodes only (no other view), every Leaf and Map of the
  root's element count, so element ``i`` of every leaf is element ``i`` of the output;
* the element count is a positive multiple of 4;
* every dtype is float32, int32 or uint32 (no ``vec4<bool>`` buffers; float16 is left out);
* every Map's dtype and its operands' are among those three.

A Map whose op is in :data:`VEC_OPS` for its dtype is emitted on vec4 values: its IR
(vyre/array/_kernels/elementwise.py) is the same expression on vectors (``astype`` is emitted here as a vec4
cast: its IR casts to a scalar type, which a vector cannot take). Any other op (float
``maximum``/``minimum`` with their NaN test, ``tanh``'s clamp, ``remainder``, ``pow``, anything built on
comparisons, ``select`` or bit tests, which the IR only has for scalars) runs its scalar IR on each of the
four lanes and packs the results: the loads and stores stay vec4, the values are the scalar program's.

The variant is a function of the program's structural key (it holds every node's op, dtype and
shape, and every View), so the two never share a cache entry and no per-evaluation check is made.
Buffers keep the scalar program's names and binding order (leaves, parameters, ``out``): the plan
binds the same handles. The declared counts are in vec4s (``n / 4``), the same bytes.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...ir.builder import ProgramBuilder
from ...ir.program import Program
from ...ir.types import DataType
from ...ir.values import Val
from .dtypes import DType, ir_type
from .emit import OPS, Emitter
from .index_maps import Reshape
from .nodes import Leaf, Map, Node, Scalar

LANES = 4
NAME = "array_fused_v4"
F32, I32, U32 = np.dtype(np.float32), np.dtype(np.int32), np.dtype(np.uint32)
_ALL = frozenset({F32, I32, U32})
_INT = frozenset({I32, U32})
_FLOAT = frozenset({F32})

#: op -> the dtypes (of the Map's result) for which its IR is the same on vec4 operands
VEC_OPS: dict[str, frozenset[DType]] = {
    "add": _ALL, "subtract": _ALL, "multiply": _ALL, "square": _ALL,
    "positive": _ALL, "negative": _ALL, "abs": _ALL,  # u32: 0 - x and the identity
    "divide": _FLOAT, "reciprocal": _FLOAT,  # float only (integer operands are cast first)
    "maximum": _INT, "minimum": _INT,  # float ones test NaN by comparing x.dtype with "f32": see above
    "sqrt": _FLOAT, "exp": _FLOAT, "log": _FLOAT, "log2": _FLOAT,  # sin/cos/tan: selects (trig.py)
    "floor": _ALL, "ceil": _ALL, "trunc": _ALL, "round": _ALL,  # integers: the identity
    "bitwise_and": _INT, "bitwise_or": _INT, "bitwise_xor": _INT, "bitwise_invert": _INT,
    "astype": _ALL,  # between f32, i32 and u32: emitted here as a vec4 cast (its IR casts to a scalar type)
}


def vectorizable(node: Node) -> bool:
    """Whether the vec4 program of ``node`` computes what the scalar one does (see the module doc)."""
    n = node.count
    if n <= 0 or n % LANES:
        return False
    stack = [node]
    while stack:  # at most MAX_NODES nodes, walked once per program built
        x = stack.pop()
        if x.dtype not in _ALL:
            return False
        if isinstance(x, Scalar):
            continue
        if x.count != n:
            return False
        if isinstance(x, Map):
            if any(a.dtype not in _ALL for a in x.args):
                return False
            stack.extend(x.args)
        elif isinstance(x, Reshape):
            stack.append(x.child)  # the same row-major elements: element i stays element i
        elif not isinstance(x, Leaf):
            return False  # another view (broadcast, slice, transpose...): the scalar program
    return True


def _vec(d: DType) -> DataType:
    return DataType.vector(ir_type(d), LANES)


class VecEmitter(Emitter):
    """:class:`vyre.array._kernels.emit.Emitter` for a vectorizable tree: the same buffer names and order,
    ``vec4<T>`` leaves of ``count / 4`` elements, scalars splatted, ``astype`` as a vec4 cast, ops
    outside :data:`VEC_OPS` lane by lane."""

    def leaf_buffer(self, leaf: Leaf) -> tuple[Any, int]:
        return _vec(leaf.dtype), leaf.count // LANES

    def scalar(self, n: Scalar) -> Val:
        return self.b.vec(_vec(n.dtype), super().scalar(n))

    def map(self, n: Map, args: list[Val]) -> Val:
        if n.op == "astype":  # the same component-wise conversion (float -> int saturates, NaN -> 0)
            return self.b.let(args[0].cast(_vec(n.dtype)))
        if n.dtype in VEC_OPS.get(n.op, ()):
            return super().map(n, args)
        # an op whose IR is scalar-only: the scalar IR on each lane, then one vec4
        b, dts = self.b, [a.dtype for a in n.args]
        lanes = [b.let(OPS[n.op](b, [v[k] for v in args], dts, n.dtype)) for k in range(LANES)]
        return b.let(b.vec(_vec(n.dtype), *lanes))


def vec4_program(node: Node, workgroup: int) -> Program | None:
    """The vec4 program computing ``node`` into ``out`` (bound after the scalar program's buffers),
    or None when the tree is not :func:`vectorizable`."""
    if not vectorizable(node):
        return None
    b = ProgramBuilder(NAME, workgroup)
    e = VecEmitter(b, node)  # value(i): the vec4 of elements 4i .. 4i+3
    m = node.count // LANES
    out = b.buffer("out", _vec(node.dtype), "write", count=m)
    b.set_grid_from(out)
    i = b.global_index()
    with b.if_(i < b.lit(m, "u32")):
        out[i] = e.value(i)
    return b.build()


__all__ = ["VEC_OPS", "vectorizable", "vec4_program", "VecEmitter", "NAME", "LANES"]
