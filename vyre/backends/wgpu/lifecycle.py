"""Lifecycle half of WgpuBackend: shared/new, shutdown, flush, device loss and recovery."""

from __future__ import annotations

import threading

from ...errors import BackendError, DeviceLostError, VyreError
from . import adapter as _adapter
from .device import translate_error
from .keys import adapter_identity

SHUT_DOWN_FIX = "create a new backend: vyre.WgpuBackend.new() (WgpuBackend.shared() re-creates the shared one)"


class LifecycleMixin:
    """Needs: _lock, _choice, _cache, _pool, _staging, _layouts, _device, _adapter_limits, _open_device(),
    _wait_idle()."""

    _shared = None
    _shared_lock = threading.Lock()

    @classmethod
    def shared(cls):
        """The process-wide backend (thread-safe; created on first use). A shut-down shared backend is
        replaced by a new one; a lost one is recovered in place (or replaced when that fails)."""
        with cls._shared_lock:
            s = cls._shared
            if s is not None and s._lost and not s._closed:
                try:
                    s.try_recover()
                except VyreError:
                    s = None
            if s is None or s._closed or s._lost:
                s = cls.acquire()
                cls._shared = s
            return s

    @classmethod
    def new(cls, adapter_index: int | None = None, **kwargs):
        """A fresh backend of its own (its own device, caches and pool)."""
        return cls(adapter_index, **kwargs)

    # ---- state checks -------------------------------------------------------------------
    def _check_alive(self) -> None:
        if self._closed:
            raise BackendError("this vyre backend was shut down (backend.shutdown()); it cannot be used any more",
                               fix=SHUT_DOWN_FIX)
        if self._lost:
            raise DeviceLostError("this backend's GPU device was lost",
                                  fix="call backend.try_recover() or create a new backend: vyre.WgpuBackend.new()")

    def _mark_lost(self) -> None:
        """Record a device loss detected from an error: every later use raises DeviceLostError."""
        if not self._lost:
            self._lost = True
            self._generation += 1

    def device_lost(self) -> bool:
        """True after the device was lost (and before a successful :meth:`try_recover`)."""
        return self._lost

    @property
    def is_shut_down(self) -> bool:
        return self._closed

    def _drop_device_state(self) -> None:
        """Forget everything tied to the current device (memory caches, pooled buffers, staging)."""
        self._cache.clear()
        self._pool.clear()
        self._layouts.clear()
        self._staging.reset()
        self._validated.clear()
        self._disk_probed.clear()

    # ---- loss and recovery ----------------------------------------------------------------
    def force_device_lost(self) -> None:
        """Test hook: destroy the device and mark the backend lost (every use then raises DeviceLostError)."""
        with self._lock:
            self._check_open()
            self._mark_lost()
            self._drop_device_state()
            try:
                self._device.destroy()
            except Exception:
                pass

    def try_recover(self) -> None:
        """After a loss: re-acquire the same adapter (same index, same identity and limits), open a new device
        and start with empty memory caches (the disk cache stays: it is keyed by content). Refuses with
        DeviceLostError when the adapter changed. Does nothing when the device is not lost."""
        with self._lock:
            self._check_open()
            if not self._lost:
                return
            old = self._choice
            try:
                choice = _adapter.select_adapter(old.index)
            except VyreError as exc:
                raise DeviceLostError(f"cannot recover the lost device: adapter [{old.index}] is gone: {exc.message}",
                                      fix="create a new backend: vyre.WgpuBackend.new()") from None
            if adapter_identity(choice.info) != adapter_identity(old.info):
                raise DeviceLostError(
                    f"cannot recover the lost device: adapter [{old.index}] is now {_adapter.describe(choice.info)} "
                    f"(driver {choice.info.get('driver')!r}), it was {_adapter.describe(old.info)} "
                    f"(driver {old.info.get('driver')!r})",
                    fix="create a new backend for the new adapter: vyre.WgpuBackend.new()")
            limits = {str(k): v for k, v in dict(choice.adapter.limits).items()}
            if limits != self._adapter_limits:
                changed = sorted(k for k in set(limits) | set(self._adapter_limits)
                                 if limits.get(k) != self._adapter_limits.get(k))
                raise DeviceLostError(
                    f"cannot recover the lost device: adapter [{old.index}] limits changed: "
                    + ", ".join(f"{k}: {self._adapter_limits.get(k)} -> {limits.get(k)}" for k in changed[:8]),
                    fix="create a new backend: vyre.WgpuBackend.new()")
            self._choice = choice
            self._drop_device_state()
            try:
                self._open_device()
            except VyreError:
                raise
            except Exception as exc:
                raise translate_error(exc, stage="device") from None

    # ---- shutdown and flush ---------------------------------------------------------------
    def _check_open(self) -> None:
        if self._closed:
            raise BackendError("this vyre backend was shut down (backend.shutdown()); it cannot be used any more",
                               fix=SHUT_DOWN_FIX)

    def shutdown(self) -> None:
        """Release every device resource (pipelines, pooled and staging buffers, the device). Idempotent;
        any later use raises BackendError ("shut down")."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._drop_device_state()
            self._staging.release()
            try:
                self._device.destroy()
            except Exception:
                pass
            self._generation += 1

    def flush(self) -> None:
        """Wait until all submitted GPU work is done."""
        with self._lock:
            self._check_alive()
            try:
                self._wait_idle()
            except Exception as exc:
                self._staging.reset()
                err = translate_error(exc, stage="dispatch")
                if isinstance(err, DeviceLostError):
                    self._mark_lost()
                raise err from exc

    def clear_cache(self) -> None:
        """Drop compiled pipelines and lowerings, pooled device buffers and staging buffers (memory only)."""
        with self._lock:
            self._cache.clear()
            self._pool.clear()
            self._staging.release()


__all__ = ["LifecycleMixin"]
