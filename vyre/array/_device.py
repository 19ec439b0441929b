"""Which backend new arrays live on: ``device=`` on a creation function, else the innermost
``with vyre.use(backend):`` block (a context variable: each thread and asyncio task sees its own), else
:func:`vyre.default_backend` (the GPU when an adapter exists, else the reference interpreter, logged;
``VYRE_BACKEND`` forces one)."""

from __future__ import annotations

import contextlib
import contextvars
import weakref
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

from ..errors import ArgumentTypeError, DeviceMismatchError, UnsupportedDTypeError
from ._kernels.dtypes import FEATURE_DTYPES, DType

if TYPE_CHECKING:
    from ..backends.base import Backend

_current: contextvars.ContextVar[Backend | None] = contextvars.ContextVar("vyre_array_backend", default=None)


@contextlib.contextmanager
def use(backend: Backend) -> Iterator[Backend]:
    """``with vyre.use(backend):`` makes ``backend`` the default of array creation inside the block
    (nested blocks: the innermost wins; other threads and tasks are not affected). Yields the backend."""
    token = _current.set(check_backend(backend, "use"))
    try:
        yield backend
    finally:
        _current.reset(token)


_BACKEND_TYPES: set[type] = set()  # classes already seen to meet the Backend protocol (its isinstance is slow)


def check_backend(device: Any, what: str = "device") -> Backend:
    """``device`` if it is a backend (an object meeting :class:`vyre.backends.base.Backend`), else
    ArgumentTypeError: a string such as ``"cuda"`` or ``"cpu"`` is not one."""
    if type(device) in _BACKEND_TYPES:
        return device  # type: ignore[no-any-return]
    from ..backends.base import Backend  # why: import time (vyre.array does not load the backends)
    if isinstance(device, Backend):
        _BACKEND_TYPES.add(type(device))
        return device
    raise ArgumentTypeError(f"{what}: {device!r} ({type(device).__name__}) is not a vyre backend",
                            fix="pass a backend object (x.device, vyre.WgpuBackend.acquire(), vyre.ReferenceBackend()) "
                                "or None for the default (the innermost vyre.use block, else vyre.default_backend())")


def current_backend(device: Backend | None = None) -> Backend:
    """``device`` when given (checked to be a backend: ArgumentTypeError otherwise), else the backend of the
    innermost ``use`` block, else the default backend."""
    if device is not None:
        return check_backend(device)
    b = _current.get()
    if b is not None:
        return b
    return default_backend()


def default_backend() -> Backend:
    """:func:`vyre.default_backend` (the process-wide GPU backend, else the reference one)."""
    from ..backends import default  # why: it imports the wgpu backend, loaded on first use
    return default.default_backend()


def same_device(arrays: Sequence[Any], what: str) -> Backend:
    """The one backend of ``arrays`` (Array objects); two different ones raise DeviceMismatchError."""
    dev: Backend = arrays[0].device
    for a in arrays[1:]:
        if a.device is not dev:
            raise DeviceMismatchError(f"{what}: arrays on two backends ({dev!r} and {a.device!r})",
                                      fix="move one with x.to_device(y.device)")
    return dev


_feature_cache: weakref.WeakKeyDictionary[Any, frozenset[str]] = weakref.WeakKeyDictionary()  # never keeps one alive

#: Capabilities field -> the adapter feature it stands for
_CAPS = (("f16", "shader-f16"), ("f64", "shader-f64"), ("int64", "shader-int64"))
_FALLBACK = {"shader-f16": "float32", "shader-f64": "float32", "shader-int64": "int32"}


def dtype_features(backend: Backend) -> frozenset[str]:
    """The dtype features (``shader-f16``, ``shader-f64``, ``shader-int64``) ``backend`` offers (cached)."""
    got = _feature_cache.get(backend)
    if got is None:
        caps = backend.capabilities()
        got = _feature_cache[backend] = frozenset(f for field, f in _CAPS if getattr(caps, field, False))
    return got


def supports_dtype(backend: Backend, dtype: DType) -> bool:
    """Whether ``backend`` can hold arrays of ``dtype`` (a supported dtype)."""
    need = FEATURE_DTYPES.get(dtype)
    return need is None or need in dtype_features(backend)


def check_dtype_on(backend: Backend, dtype: DType) -> None:
    """float16 needs ``shader-f16``, float64 ``shader-f64``, int64/uint64 ``shader-int64`` on the backend
    (checked before any GPU work): UnsupportedDTypeError naming the missing feature."""
    need = FEATURE_DTYPES.get(dtype)
    if need is None or need in dtype_features(backend):
        return
    raise UnsupportedDTypeError(
        f"{dtype} arrays need the {need} feature, which {backend!r} lacks"
        + ("" if need == "shader-f16" else " (64-bit types are wgpu-native extensions, not core WebGPU)"),
        fix=f"use {_FALLBACK[need]} (x.astype(np.{_FALLBACK[need]}) on the host), or an adapter with {need} "
            "(VYRE_ADAPTER); __array_namespace_info__().dtypes(device=...) lists what a device holds")
