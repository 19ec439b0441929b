"""The nodes of lazy elementwise expressions: immutable trees recorded by the array functions and
turned into IR by vyre/array/_kernels/emit.py.

Every node has ``shape``, ``dtype`` (numpy), ``size`` (nodes in the tree, shared subtrees counted each
time) and ``leaf_ids`` (the distinct leaf buffers):

* :class:`Leaf`: an :class:`~vyre.array.Array`'s buffer, captured when recorded (a lazy array cut out of a
  bigger tree is a Leaf too: its buffer's pending expression is computed first, in the same submission);
* :class:`Scalar`: a Python scalar, passed in a small ``u32`` parameter buffer (bit-cast), so the
  program is cached by structure, not by value;
* :class:`Map`: an elementwise op (a name in :data:`vyre.array._kernels.emit.OPS`) over children of the
  node's own shape;
* :class:`View`: an index map, element ``i`` of the view is element ``source_index(i)`` of its child
  (the maps themselves are in vyre/array/_kernels/index_maps.py).

:func:`collect` walks a tree once for its program's structural key, its leaves and its scalars.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ...ir.builder import ProgramBuilder
from ...ir.values import Val
from ...ir.words import pack_scalars
from .dtypes import DType

if TYPE_CHECKING:
    from .._array import Array, Buffer
    from .fused import Deferred


class Node:
    """Base of the expression nodes (see the module docstring)."""

    # leafseq/scalars: the tree's leaves and scalars in walk order (repeats included) and skey its structure
    # without leaf identities, all built when the node is made (O(1) per op), so an evaluation finds its
    # program's key and bindings without walking the tree (see :func:`collect`)
    __slots__ = ("shape", "dtype", "size", "leaf_ids", "_leafseq", "_scalars", "skey")
    shape: tuple[int, ...]
    dtype: DType
    size: int
    leaf_ids: frozenset[int]
    _leafseq: tuple[Leaf, ...]
    _scalars: tuple[Scalar, ...]
    skey: tuple[Any, ...] | None

    @property
    def leafseq(self) -> tuple[Leaf, ...]:
        return self._leafseq

    @property
    def scalars(self) -> tuple[Scalar, ...]:
        return self._scalars

    @property
    def count(self) -> int:
        return math.prod(self.shape)

    def children(self) -> tuple[Node, ...]:
        return ()


class Leaf(Node):
    """An array's buffer, captured when the leaf is made: later in-place operators, assignments or
    ``out=`` on the array give it another buffer (or copy first), and this leaf keeps reading the values
    it was recorded against. A lazy array (cut out of a bigger tree) gets its buffer now, with its
    expression as the buffer's ``pending`` work: the evaluation computes it first, in the same
    submission, unless another evaluation already has."""

    __slots__ = ("buf",)
    buf: Buffer

    def __init__(self, array: Array):
        array._allocate()
        assert array._buf is not None
        self.buf = array._buf
        self.shape, self.dtype = array.shape, array.dtype
        self.size, self.leaf_ids = 1, frozenset((id(self.buf),))
        self._scalars, self.skey = (), ("L", self.dtype.str, self.shape)

    @property
    def leafseq(self) -> tuple[Leaf, ...]:  # made on use: a stored (self,) would be a reference cycle
        return (self,)

    @property
    def ident(self) -> int:
        return id(self.buf)

    @property
    def pending(self) -> Node | Deferred | None:
        """The expression still to be computed into the buffer (None once it holds its values)."""
        return self.buf.pending

    def handle(self) -> Any:
        """The resident handle to bind (a pending buffer is filled by an earlier step of the same plan)."""
        return self.buf.handle


class Scalar(Node):
    __slots__ = ("value",)

    def __init__(self, value: Any, dtype: DType):
        self.value, self.dtype, self.shape = value, dtype, ()
        self.size, self.leaf_ids = 1, frozenset()
        self._leafseq, self.skey = (), ("S", dtype.str)

    @property
    def scalars(self) -> tuple[Scalar, ...]:  # made on use, as Leaf.leafseq
        return (self,)


def scalar_words(scalars: Sequence[Scalar]) -> bytes:
    """The params words of a tree's scalar nodes (:func:`vyre.ir.words.pack_scalars`: f32 bits for floats,
    f16 too, 0/1 for bool, the two's complement for integers); a 64-bit scalar (and complex64) takes two
    words, low first, complex128 four (:func:`scalar_slots` gives each scalar's first word)."""
    if not any(s.dtype.itemsize >= 8 for s in scalars):
        return pack_scalars("".join([s.dtype.kind for s in scalars]), [s.value for s in scalars])
    import numpy as np

    parts = [np.array(s.value, dtype=s.dtype).tobytes() if s.dtype.itemsize >= 8
             else pack_scalars(s.dtype.kind, [s.value]) for s in scalars]
    return b"".join(parts)


def scalar_slots(scalars: Sequence[Scalar]) -> tuple[list[int], int]:
    """The first params word of each scalar and the number of words (a 64-bit scalar takes two, a
    complex128 four)."""
    slots, n = [], 0
    for s in scalars:
        slots.append(n)
        n += max(1, s.dtype.itemsize // 4)
    return slots, n


class Map(Node):
    __slots__ = ("op", "args")

    def __init__(self, op: str, args: tuple[Node, ...], dtype: DType, shape: tuple[int, ...]):
        self.op, self.args, self.dtype, self.shape = op, args, dtype, shape
        if len(args) == 2:  # the common case, without generator overhead (recorded once per op)
            a0, a1 = args
            self.size = 1 + a0.size + a1.size
            self.leaf_ids = a0.leaf_ids | a1.leaf_ids
            self._leafseq, self._scalars = a0.leafseq + a1.leafseq, a0.scalars + a1.scalars
            keys: tuple[Any, ...] = (a0.skey or skey_of(a0), a1.skey or skey_of(a1))
        else:
            self.size = 1 + sum(a.size for a in args)
            self.leaf_ids = frozenset().union(*(a.leaf_ids for a in args))
            self._leafseq = tuple(x for a in args for x in a.leafseq)
            self._scalars = tuple(x for a in args for x in a.scalars)
            keys = tuple([a.skey or skey_of(a) for a in args])
        self.skey = ("M", op, dtype.str, shape, keys)

    def children(self) -> tuple[Node, ...]:
        return self.args


class View(Node):
    """An index-map node: element ``i`` (row-major in ``shape``) is child element ``source_index(b, i)``."""

    __slots__ = ("child",)

    def __init__(self, child: Node, shape: tuple[int, ...]):
        self.child, self.shape, self.dtype = child, shape, child.dtype
        self.size, self.leaf_ids = 1 + child.size, child.leaf_ids
        self._leafseq, self._scalars = child.leafseq, child.scalars
        self.skey = None  # params() is known once the subclass is initialised: see skey_of

    def children(self) -> tuple[Node, ...]:
        return (self.child,)

    def params(self) -> tuple[Any, ...]:
        """What the index map depends on besides shapes (part of the program's cache key)."""
        raise NotImplementedError

    def source_index(self, b: ProgramBuilder, i: Val) -> Val:
        raise NotImplementedError


# ---- structure: cache key, leaves and scalars --------------------------------------------------

@dataclass
class Collected:
    """One walk of a tree: its structural key, leaf arrays (slot order) and scalar nodes (slot order)."""

    key: tuple[Any, ...]
    leaves: list[Leaf] = field(default_factory=list)
    scalars: list[Scalar] = field(default_factory=list)


def skey_of(n: Node) -> tuple[Any, ...]:
    """``n``'s structural key without leaf identities (a View's is made on first use and kept)."""
    if n.skey is None:
        assert isinstance(n, View)
        n.skey = ("V", type(n).__name__, n.shape, n.params(), skey_of(n.child))
    return n.skey


def collect(node: Node) -> Collected:
    """The key of ``node``'s program (structure, dtypes, shapes, view params and which leaves alias, never
    data or identity), its leaf arrays (slot order: first use) and its scalars (walk order)."""
    slots: dict[int, int] = {}
    leaves: list[Leaf] = []
    pattern = []
    for leaf in node.leafseq:
        k = slots.get(leaf.ident)
        if k is None:
            k = slots[leaf.ident] = len(leaves)
            leaves.append(leaf)
        pattern.append(k)
    return Collected((skey_of(node), tuple(pattern)), leaves, list(node.scalars))


__all__ = ["Node", "Leaf", "Scalar", "Map", "View", "Collected", "collect", "skey_of"]
