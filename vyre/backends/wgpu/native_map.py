"""wgpu-native buffer maps for the executor's native driver (vyre/backends/wgpu/native.py, whose version gate
covers this module too: it is only reached through native.py's NativeDriver).

:class:`NativeMapper`: ``wgpuBufferMapAsync`` with one reused C callback, then the wait in the calling
thread (non-blocking polls for up to ``spin_s``, then blocking ones; see :meth:`NativeCalls.wait`), the
mapped range read without copies, and wgpu-py's buffer state kept in step so its own methods still work.
"""

from __future__ import annotations

import os
import time
from typing import TYPE_CHECKING

import numpy as np

from .types import CData, GPUBuffer, GPUDevice

if TYPE_CHECKING:  # why: annotations only; native.py imports this module
    from .native import NativeCalls

def _spin_default() -> float:
    """Seconds of non-blocking polling before a wait blocks: ``VYRE_SPIN_WAIT_US`` (default 1000)."""
    try:
        return max(0.0, float(os.environ.get("VYRE_SPIN_WAIT_US", "1000")) * 1e-6)
    except ValueError:
        return 1e-3


class NativeMapper:
    """Maps buffers with wgpuBufferMapAsync, one C callback for every map (see the module docstring).

    Each map has a token (the callback's userdata): a late callback of an abandoned map is
    dropped, never taken for another map, and several maps may be in flight (async dispatch).
    """

    def __init__(self, nat: NativeCalls, spin_s: float | None = None) -> None:
        self._nat = nat
        #: Seconds of non-blocking polling before a wait blocks (``VYRE_SPIN_WAIT_US``, default 1000 µs).
        self.spin_s = _spin_default() if spin_s is None else spin_s
        self._done: dict[int, tuple[int, str]] = {}
        self._abandoned: set[int] = set()
        self._seq = 0
        #: Seconds the last wait took. Longer than the spin: the next wait blocks at once (a long job is
        #: likely followed by another, and spinning through it only takes a core from the device when
        #: the device is the CPU, as with lavapipe).
        self._last_wait = 0.0
        ffi = nat.ffi
        done, abandoned = self._done, self._abandoned
        success = nat.map_success
        from_view = nat.from_c_string_view

        def _mapped(status: int, message: CData, userdata1: CData, userdata2: CData) -> None:
            try:
                msg = "" if status == success else from_view(message)
            except Exception:  # noqa: BLE001 - never raise into C
                msg = "?"
            token = int(ffi.cast("uintptr_t", userdata1))
            if token in abandoned:
                abandoned.discard(token)
            else:
                done[token] = (int(status), msg)

        # the C callback (kept alive here); ffi.callback called, not used as a decorator: cffi is untyped
        callback = ffi.callback("void(WGPUMapAsyncStatus, WGPUStringView, void *, void *)")(_mapped)
        self._callback = callback
        self._info = ffi.new("WGPUBufferMapCallbackInfo *")
        self._info.mode = nat.allow_process_events
        self._info.callback = callback

    def start(self, buf: GPUBuffer, mode: int, size: int, wait_in: GPUDevice | None = None) -> int:
        """Issue the map of ``size`` bytes of ``buf`` from offset 0 (``mode``: 1 read, 2 write); returns its token.
        ``wait_in``: a device to wait on right away, in the same error-capture region (see :meth:`map`)."""
        nat = self._nat
        if buf._map_state != nat.unmapped:
            raise RuntimeError(f"Can only map a buffer if its currently unmapped, not {buf._map_state!r}")
        self._seq += 1
        token = self._seq
        self._info.userdata1 = nat.ffi.cast("void *", token)
        buf._map_state = nat.pending
        issued = False
        try:
            with nat.checked():
                nat.map_async(buf._internal, mode, 0, size, self._info[0])
                issued = True
                if wait_in is not None:
                    self._wait(wait_in, token)
        except BaseException:
            if not issued:
                buf._map_state = nat.unmapped
            else:
                self.abandon(buf, token, size, mode)
            raise
        return token

    def settled(self, device: GPUDevice, token: int, timeout: float) -> bool:
        """Whether map ``token`` completed, polling for at most ``timeout`` seconds (0: one non-blocking poll)."""
        nat = self._nat
        done = self._done
        if token in done:
            return True
        handle, poll, null = device._internal, nat.poll, nat.null
        deadline = time.monotonic() + timeout
        while True:
            with nat.checked():
                poll(handle, 0, null)
            if token in done or time.monotonic() >= deadline:
                return token in done
            time.sleep(0.0002)

    def wait(self, device: GPUDevice, token: int) -> None:
        """Wait for map ``token`` in this thread (spin, then block; see the module docstring)."""
        with self._nat.checked():
            self._wait(device, token)

    def _wait(self, device: GPUDevice, token: int) -> None:
        done = self._done
        if token not in done:
            spin = self.spin_s
            t0 = time.perf_counter()
            self._nat.wait(device, lambda: token in done, spin if self._last_wait <= spin else 0.0)
            self._last_wait = time.perf_counter() - t0

    def finish(self, buf: GPUBuffer, token: int, size: int, mode: int) -> None:
        """After the map completed: raise if it failed, else set the buffer's wgpu-py state to mapped."""
        nat = self._nat
        status, message = self._done.pop(token)
        if status != nat.map_success:
            buf._map_state = nat.unmapped
            raise RuntimeError(f"Could not map buffer ({status} : {message}).")
        self._set_mapped(buf, size, mode)

    def abandon(self, buf: GPUBuffer, token: int, size: int, mode: int) -> None:
        """Give up on map ``token`` (an error or ^C while waiting): a late callback is dropped; a map that
        did complete leaves the buffer mapped, so the caller's cleanup can unmap it."""
        got = self._done.pop(token, None)
        if got is None:
            self._abandoned.add(token)
        elif got[0] == self._nat.map_success:
            self._set_mapped(buf, size, mode)
            return
        buf._map_state = self._nat.unmapped

    def map(self, device: GPUDevice, buf: GPUBuffer, mode: int, size: int) -> None:
        """Map and wait (one error-capture region for both)."""
        token = self.start(buf, mode, size, wait_in=device)
        self.finish(buf, token, size, mode)

    def view(self, buf: GPUBuffer, size: int) -> np.ndarray:
        """A uint8 view of the first ``size`` bytes of mapped ``buf`` (valid until :meth:`unmap`)."""
        nat = self._nat
        if buf._map_state != nat.mapped or size > buf._mapped_status[1]:
            raise RuntimeError("Can only read from a buffer if its mapped (over the range read).")
        ptr = nat.mapped_range(buf._internal, 0, size)
        if ptr == nat.null:
            raise RuntimeError("wgpuBufferGetConstMappedRange returned NULL")
        return np.frombuffer(nat.ffi.buffer(ptr, size), dtype=np.uint8)

    def unmap(self, buf: GPUBuffer) -> None:
        """``buf.unmap()`` (what wgpu-py's unmap does, without its error proxy)."""
        nat = self._nat
        if buf._map_state != nat.mapped:
            raise RuntimeError("Can only unmap a buffer if its currently mapped.")
        with nat.checked():
            nat.unmap(buf._internal)
        buf._map_state = nat.unmapped
        buf._mapped_status = (0, 0, 0)
        buf._release_memoryviews()

    def _set_mapped(self, buf: GPUBuffer, size: int, mode: int) -> None:
        """What wgpu-py's own map handler sets (wgpu/backends/wgpu_native/_api.py, GPUBuffer.map_async)."""
        buf._map_state = self._nat.mapped
        buf._mapped_status = (0, size, mode)
        buf._mapped_memoryviews = []


#: A map in flight (:meth:`NativeDriver.start_map`): the buffer, the bytes mapped and the map's token.
PendingMap = tuple[GPUBuffer, int, int]


__all__ = ["NativeMapper", "PendingMap"]
