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

import numpy as np

from ..errors import ArgumentTypeError, DeviceMismatchError, UnsupportedDTypeError
from ._kernels.dtypes import DType

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


_f16_cache: weakref.WeakKeyDictionary[Any, bool] = weakref.WeakKeyDictionary()  # never keeps a backend alive


def check_dtype_on(backend: Backend, dtype: DType) -> None:
    """float16 needs ``shader-f16`` on the backend (checked before any GPU work)."""
    if dtype != np.float16:
        return
    ok = _f16_cache.get(backend)
    if ok is None:
        ok = _f16_cache[backend] = bool(backend.capabilities().f16)
    if not ok:
        raise UnsupportedDTypeError(f"float16 arrays need the shader-f16 feature, which {backend!r} lacks",
                                    fix="use float32, or an adapter with shader-f16 (VYRE_ADAPTER)")
