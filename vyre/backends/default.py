"""The backend vyre uses when none is given (``@vyre.kernel`` launches): the shared GPU backend when an
adapter exists, else the reference interpreter with a warning. ``VYRE_BACKEND=gpu|reference`` forces one."""

from __future__ import annotations

import logging
import os
import threading

from ..errors import DispatchError, NoAdapterError
from .base import Backend

_log = logging.getLogger("vyre")
_lock = threading.Lock()
_fallback: Backend | None = None


def default_backend() -> Backend:
    """The shared :class:`~vyre.backends.wgpu.WgpuBackend` (``WgpuBackend.shared()``) when an adapter
    exists, else one shared :class:`~vyre.backends.reference.ReferenceBackend` (logging a warning on the
    "vyre" logger). ``VYRE_BACKEND=gpu`` insists on the GPU (NoAdapterError without one),
    ``VYRE_BACKEND=reference`` always picks the reference backend; another value is a DispatchError."""
    global _fallback
    choice = os.environ.get("VYRE_BACKEND", "").strip().lower()
    if choice not in ("", "gpu", "reference"):
        raise DispatchError(f"VYRE_BACKEND={choice!r} names no backend", fix="set VYRE_BACKEND to gpu or reference")
    if choice != "reference":
        from .wgpu import WgpuBackend  # why: the GPU backend's modules load when first asked for
        try:
            return WgpuBackend.shared()
        except NoAdapterError:
            if choice == "gpu":
                raise
            with _lock:
                if _fallback is None:
                    _log.warning("vyre: no GPU adapter found; running on the reference backend (numpy, slow)")
    from .reference import ReferenceBackend  # why: the reference backend loads only when it is the one used
    with _lock:
        if _fallback is None:
            _fallback = ReferenceBackend()
        return _fallback


__all__ = ["default_backend"]
