"""Lazy expression trees of elementwise work, and the emitter that turns one into IR.

Node types (immutable; every node has ``shape``, ``dtype`` (numpy), ``size`` (nodes in the tree, shared
subtrees counted each time) and ``leaf_ids`` (the distinct leaf arrays)):

* :class:`Leaf`: an :class:`~vyre.array.Array`'s buffer, captured when recorded (a lazy array cut out of a
  bigger tree is a Leaf too: its buffer's pending expression is computed first, in the same submission);
* :class:`Scalar`: a Python scalar, passed in a small ``u32`` parameter buffer (bit-cast), so the
  program is cached by structure, not by value;
* :class:`Map`: an elementwise op (a name in :data:`OPS`) over children of the node's own shape;
* :class:`View`: an index map, element ``i`` of the view is element ``source_index(i)`` of its child.
  :class:`Strided` (offset + sum(coord_d * stride_d) over the child's row-major elements, strides
  0 to broadcast, negative to flip) covers broadcast_to, expand_dims, permute_dims, flip and basic
  slicing; :class:`Reshape` is the identity map (row-major order is kept). Wave-2 view functions
  build these; a new kind of view subclasses View (``source_index`` and ``params``).

:func:`emit` computes the value of element ``i`` of a node inside any ProgramBuilder; :func:`bind`
declares a tree's buffers in a builder and returns an :class:`Emitter` (value of element i, the
buffers to bind, the structural key) -- what a reduction uses to fuse the work that feeds it.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from ..ir.builder import ProgramBuilder
from ..ir.types import DataType
from ..ir.values import BufRef, Val
from ._dtypes import ir_type

if TYPE_CHECKING:
    from ._array import Array, Buffer
    from ._fuse import Deferred

#: Elementwise ops: name -> emit(builder, args: list[Val], arg_dtypes, out_dtype) -> Val.
#: vyre/array/_elementwise.py and _math.py fill it; wave-2 modules may add entries (unique names).
OPS: dict[str, Callable[..., Val]] = {}


def strides_of(shape: tuple[int, ...]) -> tuple[int, ...]:
    """Row-major element strides of ``shape``."""
    out, acc = [], 1
    for d in reversed(shape):
        out.append(acc)
        acc *= d
    return tuple(reversed(out))


class Node:
    """Base of the expression nodes (see the module docstring)."""

    # leafseq/scalars: the tree's leaves and scalars in walk order (repeats included) and skey its structure
    # without leaf identities, all built when the node is made (O(1) per op), so an evaluation finds its
    # program's key and bindings without walking the tree (see :func:`collect`)
    __slots__ = ("shape", "dtype", "size", "leaf_ids", "_leafseq", "_scalars", "skey")
    shape: tuple[int, ...]
    dtype: np.dtype
    size: int
    leaf_ids: frozenset[int]
    _leafseq: tuple[Leaf, ...]
    _scalars: tuple[Scalar, ...]
    skey: tuple | None

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

    def __init__(self, value: Any, dtype: np.dtype):
        self.value, self.dtype, self.shape = value, dtype, ()
        self.size, self.leaf_ids = 1, frozenset()
        self._leafseq, self.skey = (), ("S", dtype.str)

    @property
    def scalars(self) -> tuple[Scalar, ...]:  # made on use, as Leaf.leafseq
        return (self,)


class Map(Node):
    __slots__ = ("op", "args")

    def __init__(self, op: str, args: tuple[Node, ...], dtype: np.dtype, shape: tuple[int, ...]):
        self.op, self.args, self.dtype, self.shape = op, args, dtype, shape
        if len(args) == 2:  # the common case, without generator overhead (recorded once per op)
            a0, a1 = args
            self.size = 1 + a0.size + a1.size
            self.leaf_ids = a0.leaf_ids | a1.leaf_ids
            self._leafseq, self._scalars = a0.leafseq + a1.leafseq, a0.scalars + a1.scalars
            keys: tuple = (a0.skey or skey_of(a0), a1.skey or skey_of(a1))
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

    def params(self) -> tuple:
        """What the index map depends on besides shapes (part of the program's cache key)."""
        raise NotImplementedError

    def source_index(self, b: ProgramBuilder, i: Val) -> Val:
        raise NotImplementedError


class Reshape(View):
    """The same row-major elements under another shape: the index passes through."""

    __slots__ = ()

    def params(self) -> tuple:
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

    def params(self) -> tuple:
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


# ---- structure: cache key, leaves and scalars --------------------------------------------------

@dataclass
class Collected:
    """One walk of a tree: its structural key, leaf arrays (slot order) and scalar nodes (slot order)."""

    key: tuple
    leaves: list[Leaf] = field(default_factory=list)
    scalars: list[Scalar] = field(default_factory=list)


def skey_of(n: Node) -> tuple:
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


# ---- emission -----------------------------------------------------------------------------------

class Emitter:
    """A tree's buffers declared in a builder (its leaves' buffers in ``leaves`` order, then a u32
    parameter buffer when it has ``scalars``, following each other in binding order): ``value(i)``
    emits element ``i``; ``_fuse.Plan.bind(emitter)`` gives the handles for those buffers."""

    def __init__(self, b: ProgramBuilder, node: Node, prefix: str = "in"):
        self.b, self.node = b, node
        c = collect(node)
        self.key, self.leaves, self.scalars = c.key, c.leaves, c.scalars
        self.bufs: dict[int, BufRef] = {}
        for k, leaf in enumerate(self.leaves):
            t, count = self.leaf_buffer(leaf)
            self.bufs[leaf.ident] = b.buffer(f"{prefix}{k}", t, "read", count=count)
        self.params = (b.buffer(f"{prefix}_p", "u32", "read", count=len(self.scalars))
                       if self.scalars else None)
        self._slot = {id(s): k for k, s in enumerate(self.scalars)}

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
        return w if t == DataType.U32 else w.bitcast(t)

    def map(self, n: Map, args: list[Val]) -> Val:
        return self.b.let(OPS[n.op](self.b, args, [a.dtype for a in n.args], n.dtype))

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


__all__ = ["Node", "Leaf", "Scalar", "Map", "View", "Reshape", "Strided", "OPS", "Emitter", "emit", "collect",
           "broadcast_view", "strides_of"]
