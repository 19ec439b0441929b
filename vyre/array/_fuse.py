"""The scalar parameters of fused kernels: :func:`scalar_words` packs a tree's scalar nodes into u32
words, :func:`params_handle` gives a resident buffer holding them (shared by evaluations with the same
values). The rest of fusion (programs, plans, evaluation) is vyre/array/_kernels/fused.py.
"""

from __future__ import annotations

import struct
import threading
import weakref
from collections import OrderedDict
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from ..backends.base import Backend

_lock = threading.Lock()

_PARAMS_CACHE = 64
_params: weakref.WeakKeyDictionary[Any, OrderedDict[bytes, Any]] = weakref.WeakKeyDictionary()  # by backend


def scalar_words(scalars: Sequence[Any]) -> bytes:
    """The parameter words of scalar nodes (packed at once: f32 bits for floats (f16 too), 0/1 for bool,
    the two's complement for integers)."""
    kinds = "".join([s.dtype.kind for s in scalars])
    fmt = _WORD_FORMATS.get(kinds)
    if fmt is None:
        fmt = _WORD_FORMATS[kinds] = struct.Struct("<" + "".join(_WORD_CODE[k] for k in kinds))
    return fmt.pack(*[s.value for s in scalars])


_WORD_CODE = {"f": "f", "b": "?3x", "i": "i", "u": "I"}  # bool: one byte and 3 zero bytes, a u32 of 0/1
_WORD_FORMATS: dict[str, struct.Struct] = {}


def params_handle(backend: Backend, words: bytes | np.ndarray) -> Any:
    """A resident buffer holding ``words`` (scalar parameters), shared by evaluations with the same values
    (a per-backend LRU of 64): a loop repeating ``x * 2 + 1`` uploads its scalars once. Never free it."""
    key = words if isinstance(words, bytes) else words.tobytes()
    with _lock:
        cache = _params.get(backend)
        if cache is None:
            cache = _params[backend] = OrderedDict()
        h = cache.get(key)
        if h is not None:
            cache.move_to_end(key)
            return h
    h = backend.allocate_resident(max(4, len(key)))
    backend.upload_resident(h, np.frombuffer(key, np.uint32))
    with _lock:
        cache[key] = h
        old = cache.popitem(last=False)[1] if len(cache) > _PARAMS_CACHE else None
    if old is not None:
        backend.free_resident(old)  # WebGPU keeps a destroyed buffer alive for work already submitted
    return h



__all__ = ["params_handle", "scalar_words"]
