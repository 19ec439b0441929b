"""Sharing a wgpu device and buffers with other WebGPU code (pygfx, fastplotlib, a user's own wgpu-py).

* :class:`SharedDevice`: the :class:`~.device.Device` part over a ``wgpu.GPUDevice`` someone else created
  (``WgpuBackend.from_device``). vyre uses it with the features and limits it was created with, never
  destroys it (``shutdown`` only stops vyre using it) and cannot recover it after a loss (its owner must).
* :func:`buffer_of`: the ``wgpu.GPUBuffer`` behind a resident handle (usage STORAGE | UNIFORM | COPY_SRC |
  COPY_DST, size rounded up to the backend's alignment).
* :func:`copy_into`: a device-side copy from a foreign ``GPUBuffer`` into a resident handle.

vyre serialises its own use of the device and queue with its lock (``backend.lock``); other code using
the same device from other threads must hold that lock too, or use the device from one thread only.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

from ...errors import DeviceLostError, DispatchError
from ..handles import ResidentHandle
from .adapter import AdapterChoice, adapter_info
from .device import Device
from .failures import gpu_errors
from .keys import adapter_identity
from .types import GPUBuffer, GPUDevice

if TYPE_CHECKING:  # why: annotations only (the backend imports this module)
    from .backend import WgpuBackend


class SharedDevice(Device):
    """A :class:`Device` over an existing ``wgpu.GPUDevice``: not opened, not destroyed, not recovered by vyre."""

    def __init__(self, device: GPUDevice) -> None:
        # Device.__init__ would select an adapter and open a device of its own: set the same state instead
        self.lock = threading.RLock()
        adapter = getattr(device, "adapter", None)
        info = adapter_info(adapter) if adapter is not None else {}
        self.choice = AdapterChoice(-1, adapter, info)
        self.identity = adapter_identity(info)
        self.lost = False
        self.closed = False
        self.generation = 0
        self.features = frozenset()
        self.limits = {}
        self.adapter_limits = {}
        self._shared = device
        self.device = None
        self.queue = None

    def open(self) -> None:
        d = self._shared
        self.device, self.queue = d, d.queue
        self.features = frozenset(str(f) for f in d.features)
        self.limits = {str(k): v for k, v in dict(d.limits).items()}
        adapter = self.choice.adapter
        self.adapter_limits = dict(self.limits) if adapter is None else {
            str(k): v for k, v in dict(adapter.limits).items()}
        self.lost = False
        self.generation += 1

    def destroy(self) -> None:
        pass  # the device belongs to its creator

    def recover(self) -> None:
        raise DeviceLostError("a backend made with WgpuBackend.from_device cannot reopen a device it does not own",
                              fix="let the device's owner create a new device, then call WgpuBackend.from_device "
                                  "with it")


def check_device(device: Any) -> None:
    """A typed error for anything that is not a ``wgpu.GPUDevice`` (before any GPU work)."""
    import wgpu  # why: lazy, importing vyre must not import wgpu

    if not isinstance(device, wgpu.GPUDevice):
        raise DispatchError(f"from_device takes a wgpu.GPUDevice, got {type(device).__name__}",
                            fix="pass the device your WebGPU code created (adapter.request_device_sync(...))")


def buffer_of(backend: WgpuBackend, handle: ResidentHandle) -> GPUBuffer:
    """The ``wgpu.GPUBuffer`` of a live resident handle of ``backend`` (DispatchError otherwise)."""
    with backend.lock:
        store = backend._resident
        return store.buffer(store.state(), handle, "wgpu_buffer")


def copy_into(backend: WgpuBackend, source: Any, handle: ResidentHandle, nbytes: int) -> None:
    """Copy ``nbytes`` from the start of the foreign buffer ``source`` into ``handle`` (on the device)."""
    import wgpu  # why: lazy, importing vyre must not import wgpu

    if not isinstance(source, wgpu.GPUBuffer):
        raise DispatchError(f"expected a wgpu.GPUBuffer, got {type(source).__name__}",
                            fix="pass a buffer created with device.create_buffer(...)")
    if not int(source.usage) & int(wgpu.BufferUsage.COPY_SRC):
        raise DispatchError("the wgpu buffer lacks the COPY_SRC usage vyre copies it with",
                            fix="create it with usage=... | wgpu.BufferUsage.COPY_SRC")
    nbytes = (nbytes + 3) // 4 * 4  # copies move whole words
    if int(source.size) < nbytes:
        raise DispatchError(f"the wgpu buffer has {source.size} bytes, the array needs {nbytes}",
                            fix="give a shape and dtype that fit in the buffer")
    with backend.lock:
        dev = backend._dev
        target = buffer_of(backend, handle)
        with gpu_errors(dev, stage="dispatch"):
            enc = dev.device.create_command_encoder(label="vyre-from-wgpu-buffer")
            enc.copy_buffer_to_buffer(source, 0, target, 0, nbytes)
            dev.queue.submit([enc.finish()])


__all__ = ["SharedDevice", "check_device", "buffer_of", "copy_into"]
