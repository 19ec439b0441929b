"""The executor's driver on wgpu-py's public API: used when :func:`~.native.native_driver` declines
(an unknown wgpu-py version, ``VYRE_WGPU_NATIVE=0``, or patched device/queue/buffer methods).

Same interface as :class:`~.native.NativeDriver`; every call goes through wgpu-py's own wrappers,
which raise wgpu errors themselves. Maps use ``map_async`` promises (settled by wgpu-py's poll
thread); waiting for the queue maps a small fence buffer after an empty submission.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterable
from typing import Any

import numpy as np

from .native import MAP_TIMEOUT_S
from .types import GPUBuffer, GPUCommandBuffer, GPUDevice, GPUQuerySet, GPUQueue
from .work import Dispatch

#: A map in flight (:meth:`PublicDriver.start_map`): the buffer, its promise, the event set when it
#: settled, and the error it failed with (empty while none).
PendingMap = tuple[GPUBuffer, Any, threading.Event, list[BaseException]]


class PublicRecorder:
    """A wgpu-py command encoder with the recorder interface."""

    __slots__ = ("_enc", "_label")

    def __init__(self, device: GPUDevice, label: str) -> None:
        self._label = label
        self._enc = device.create_command_encoder(label=label)

    def clear(self, buffer: GPUBuffer, offset: int, size: int) -> None:
        self._enc.clear_buffer(buffer, offset, size)

    def copy(self, src: GPUBuffer, src_offset: int, dst: GPUBuffer, dst_offset: int, size: int) -> None:
        self._enc.copy_buffer_to_buffer(src, src_offset, dst, dst_offset, size)

    def resolve(self, query_set: GPUQuerySet, count: int, dst: GPUBuffer, offset: int) -> None:
        self._enc.resolve_query_set(query_set, 0, count, dst, offset)

    def compute_pass(self, dispatches: Iterable[Dispatch], timer: tuple[GPUQuerySet, bool, bool] | None = None) -> int:
        tw: dict[str, Any] | None = None
        if timer is not None:
            query_set, begin, end = timer
            tw = {"query_set": query_set}
            if begin:
                tw["beginning_of_pass_write_index"] = 0
            if end:
                tw["end_of_pass_write_index"] = 1
        cpass = self._enc.begin_compute_pass(label=self._label, timestamp_writes=tw)
        n, pipeline = 0, None
        bound: list[Any] = []
        for d in dispatches:
            if not d.total:
                continue
            if d.pipeline is not pipeline:
                pipeline = d.pipeline
                cpass.set_pipeline(pipeline)
                bound = [None] * len(d.bind_groups)
            for g, bg in enumerate(d.bind_groups):
                if bound[g] is not bg:
                    cpass.set_bind_group(g, bg)
                    bound[g] = bg
            cpass.dispatch_workgroups(*d.workgroups)
            n += 1
        cpass.end()
        return n

    def finish(self) -> GPUCommandBuffer:
        return self._enc.finish()

    def release(self) -> None:
        self._enc = None


def _mode(mode: int) -> Any:
    import wgpu  # why: lazy, importing vyre must not import wgpu

    return wgpu.MapMode.READ if mode == 1 else wgpu.MapMode.WRITE


class PublicDriver:
    """The executor's driver on wgpu-py's public methods."""

    name = "public"
    spin_s = 0.0

    def __init__(self, device: GPUDevice, queue: GPUQueue) -> None:
        self.device = device
        self.queue = queue

    def checked(self) -> contextlib.nullcontext[None]:
        return contextlib.nullcontext()

    def clean(self) -> bool:
        return True  # wgpu-py's public methods raise their errors at the call

    def write(self, buffer: GPUBuffer, offset: int, data: np.ndarray) -> None:
        self.queue.write_buffer(buffer, offset, data)

    def recorder(self, label: str) -> PublicRecorder:
        return PublicRecorder(self.device, label)

    def submit(self, commands: GPUCommandBuffer) -> None:
        self.queue.submit([commands])

    def discard(self, commands: GPUCommandBuffer) -> None:
        pass

    def usable(self, buf: GPUBuffer) -> bool:
        return True

    def map(self, buf: GPUBuffer, mode: int, size: int) -> None:
        buf.map_async(_mode(mode), 0, size).sync_wait()

    def view(self, buf: GPUBuffer, size: int) -> np.ndarray:
        return np.frombuffer(buf.read_mapped(0, size, copy=False), dtype=np.uint8)

    def unmap(self, buf: GPUBuffer) -> None:
        buf.unmap()

    def mapped_range(self, buf: GPUBuffer, offset: int, size: int) -> memoryview | None:
        return None  # the public API offers no writable view of mapped memory: write_mapped copies

    def write_mapped(self, buf: GPUBuffer, data: np.ndarray, offset: int) -> None:
        buf.write_mapped(data, offset)

    # ---- maps in flight ----------------------------------------------------------------------------
    def start_map(self, buf: GPUBuffer, size: int) -> PendingMap:
        """The public API can only wait for a map (``sync_wait``), not ask whether it is done: a small
        thread waits for it and sets an event that :meth:`settled` asks without blocking."""
        promise = buf.map_async(_mode(1), 0, size)
        done = threading.Event()
        failure: list[BaseException] = []

        def wait() -> None:
            try:
                promise.sync_wait()
            except BaseException as exc:  # noqa: BLE001 - handed to finish_map
                failure.append(exc)
            done.set()

        threading.Thread(target=wait, name="vyre-map-wait", daemon=True).start()
        return (buf, promise, done, failure)

    def settled(self, pending: PendingMap, timeout: float) -> bool:
        return pending[2].wait(timeout) if timeout > 0 else pending[2].is_set()

    def finish_map(self, pending: PendingMap) -> None:
        if not pending[2].wait(MAP_TIMEOUT_S):
            raise RuntimeError(f"waiting for the GPU did not complete in {MAP_TIMEOUT_S:.0f} s: device lost?")
        if pending[3]:
            raise pending[3][0]

    def abandon_map(self, pending: PendingMap) -> None:
        pass

    def timestamp_period(self) -> float:
        return 1.0  # the public API does not expose it; 1.0 on lavapipe and NVIDIA


__all__ = ["PublicDriver", "PublicRecorder"]
