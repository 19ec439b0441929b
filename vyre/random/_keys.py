"""Keys and raw Philox output: ``key``, ``split``, ``fold_in``, ``bits`` and the generator launch the
distributions share (:func:`generate`).

A key is a ``uint32`` vyre Array of shape ``(2,)``: Philox's 64-bit key, low word first. Being an
ordinary array, it can be an input of a traced or compiled function, live on any backend and be a
lazy result (a key from ``split`` is a slice of that kernel's output, fused into its consumer).

Counter space: for key ``k``, the block ``j`` of a stream with domain ``d`` encrypts the 128-bit counter
``(j, 0, 0, d)`` (little-endian words). Domains keep the uses of one key apart: 0 for the values of every
sampling function, 1 for ``split``, 2 for ``fold_in`` (whose data fill counter words 0 and 1 instead of j).
"""

from __future__ import annotations

import math
import operator
from typing import TYPE_CHECKING, Any

import numpy as np

from ..array import _dtypes as D
from ..array._array import Array
from ..array._creation import check_shape, check_size, upload
from ..array._device import check_dtype_on, current_backend
from ..array._kernels.dtypes import DType
from ..array._kernels.fused import Plan, defer
from ..array._kernels.index_maps import Strided
from ..array._kernels.nodes import Leaf, Node, collect
from ..errors import ArgumentTypeError, InvalidArgumentError
from . import _philox

if TYPE_CHECKING:
    from ..backends.base import Backend

DOMAIN_SAMPLE, DOMAIN_SPLIT, DOMAIN_FOLD = 0, 1, 2
_U64 = 1 << 64
_MAX_KEY_BUFFERS = 4  # key leaves + its scalars: with params and out, within WebGPU's 8 per stage


def check_key(key: Any, what: str, device: Backend | None = None) -> Array:
    """``key`` if it is a key (a uint32 Array of shape (2,)), moved to ``device`` when one is given and
    differs; anything else raises ArgumentTypeError (InvalidArgumentError for a uint32 array of another
    shape)."""
    if not isinstance(key, Array) or key.dtype != D.uint32:
        kind = f"a {key.dtype} array" if isinstance(key, Array) else type(key).__name__
        raise ArgumentTypeError(f"{what}: key must be a vyre.random key (a uint32 array of shape (2,)), not {kind}",
                                fix="make one with vyre.random.key(seed), derive more with vyre.random.split")
    if key.shape != (2,):
        raise InvalidArgumentError(f"{what}: a key has shape (2,), not {key.shape}",
                                   fix="index one key out of split's (num, 2) result: keys[i]")
    if device is not None:
        dev = current_backend(device)
        if dev is not key.device:
            return key.to_device(dev)
    return key


def _int64ish(value: Any, what: str, name: str) -> int:
    """A Python or numpy int in [-2**63, 2**64), reduced modulo 2**64 (bools and floats refused)."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise ArgumentTypeError(f"{what}: {name} must be an int, not {type(value).__name__} {value!r}",
                                fix=f"pass an int as {name}")
    v = int(value)
    if not -(1 << 63) <= v < _U64:
        raise InvalidArgumentError(f"{what}: {name} {v} is outside [-2**63, 2**64)",
                                   fix=f"pass a 64-bit {name}")
    return v % _U64


def key(seed: int, *, device: Backend | None = None) -> Array:
    """A new key from an integer seed in [-2**63, 2**64): the uint32 words ``(seed mod 2**64) & 0xFFFFFFFF``
    and ``(seed mod 2**64) >> 32`` as Philox's key (so every 64-bit seed is a distinct key), on ``device``
    (default: the innermost ``vyre.use`` block, else the default backend)."""
    s = _int64ish(seed, "key", "seed")
    return upload(np.array([s & 0xFFFFFFFF, s >> 32], dtype=np.uint32), current_backend(device))


def _key_source(k: Array) -> tuple[Node, int]:
    """The node the generator reads the key through and the key's first word in it: a key sliced out of
    a buffer (``keys[i]`` of split's result) is read from that buffer at a runtime offset, so one program
    serves every slice; another pending key is fused whole (offset 0)."""
    expr = k._expr
    if isinstance(expr, Strided) and isinstance(expr.child, Leaf) and expr.strides == (1,):
        return expr.child, expr.offset
    node = k._node()
    c = collect(node)
    if len(c.leaves) + (1 if c.scalars else 0) > _MAX_KEY_BUFFERS:
        node = Leaf(k.evaluate())
    return node, 0


def generate(k: Array, shape: tuple[int, ...], mode: str, what: str,
             base: tuple[int, int, int, int] = (0, 0, 0, DOMAIN_SAMPLE)) -> Array:
    """A new (deferred) array of ``shape``: the first ``prod(shape)`` words of the Philox stream of key
    ``k`` whose block ``j`` encrypts the 128-bit counter ``base + j`` (``mode`` "bits": uint32; "normal":
    their Box-Muller transform, float32). Runs in the submission of its consumer."""
    dt: DType = D.uint32 if mode == "bits" else D.float32
    n = math.prod(shape)
    check_size(n, dt, k.device, what)
    out = Array(shape, dt, k.device)
    if n == 0:
        out._allocate()
        return out
    node, offset = _key_source(k)
    prog = _philox.program(node, mode)
    words = np.array([*base, n, offset], dtype=np.uint32)
    nblocks = -(-n // 4)
    grid = (-(-nblocks // _philox.WORKGROUP), 1, 1)

    def build(p: Plan, handle: Any) -> None:
        p.steps.append((prog, [*p.bind(node), p.backend.params_handle(words), handle], grid))

    return defer(out, [node], build, zeroed=False)  # every word of out is written


def split(key: Array, num: int = 2) -> Array:
    """``num`` new keys from ``key``, as a ``(num, 2)`` uint32 array (row ``i`` is key ``i``): words
    ``2i, 2i + 1`` of ``key``'s Philox stream in the split domain. The keys are independent of each other
    and of ``key``'s own samples; use ``key`` itself no more after splitting it."""
    k = check_key(key, "split")
    n = operator.index(num) if isinstance(num, (int, np.integer)) and not isinstance(num, bool) else None
    if n is None:
        raise ArgumentTypeError(f"split: num must be an int, not {type(num).__name__} {num!r}", fix="split(key, 2)")
    if n < 0:
        raise InvalidArgumentError(f"split: num must be non-negative, not {n}", fix="split(key, 2)")
    return generate(k, (n, 2), "bits", "split", (0, 0, 0, DOMAIN_SPLIT))


def fold_in(key: Array, data: int) -> Array:
    """A new key from ``key`` and an integer ``data`` in [-2**63, 2**64) (a step number, a worker id):
    the first two words of the Philox block of ``key`` at counter ``(data low word, data high word, 0, 2)``.
    Different data give independent keys."""
    k = check_key(key, "fold_in")
    d = _int64ish(data, "fold_in", "data")
    return generate(k, (2,), "bits", "fold_in", (d & 0xFFFFFFFF, d >> 32, 0, DOMAIN_FOLD))


def bits(key: Array, shape: Any = (), *, device: Backend | None = None) -> Array:
    """Raw uint32 words of ``shape``: element ``i`` (row-major) is word ``i`` of ``key``'s sample stream
    (word ``i % 4`` of the Philox block at counter ``(i // 4, 0, 0, 0)``). Every other sampling function
    transforms these words."""
    k = check_key(key, "bits", device)
    return generate(k, check_shape(shape, "bits"), "bits", "bits")


def check_float_dtype(dtype: Any, device: Backend, what: str) -> DType:
    """``dtype`` (None: float32) as a floating dtype available on ``device``."""
    dt: DType = D.float32 if dtype is None else D.as_dtype(dtype, what)
    if dt.kind != "f":
        raise ArgumentTypeError(f"{what}: dtype must be a floating dtype (float32, float16), not {dt}",
                                fix="dtype=vyre.array.float32")
    check_dtype_on(device, dt)
    return dt


__all__ = ["key", "split", "fold_in", "bits", "check_key", "generate", "check_float_dtype",
           "DOMAIN_SAMPLE", "DOMAIN_SPLIT", "DOMAIN_FOLD"]
