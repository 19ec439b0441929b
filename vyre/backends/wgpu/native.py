"""With the native_*.py modules beside it (reached only through it), the only module that touches wgpu-py's
private internals: wgpu-native's C entry points for the hot path.

Behind one version gate (:func:`native_driver`): wgpu-py :data:`KNOWN_WGPU` with the
``wgpu_native`` backend, plain (unpatched) device, queue and buffer objects, and
``VYRE_WGPU_NATIVE`` not ``0``. Otherwise the executor uses :class:`~.public.PublicDriver`,
the same interface on wgpu-py's public API (slower, never wrong). Both drivers do the same
few things for :class:`~.executor.Executor`: write a buffer, record an encoder (clears,
copies, compute passes, timestamp resolves), submit, map (blocking or started and polled),
view and unmap mapped bytes, wait for the queue.

Why direct calls: wgpu-py's wrappers cost Python time on every call (a descriptor struct and
a wrapper object per encoder, pass and command buffer, an error-capture proxy per call, an
offsets array per ``set_bind_group``), and its ``map_async`` builds a promise and a C callback
per map and wakes the device's poll thread (a thread hand-off per readback).

* Errors: wgpu-native reports a validation error through the device's error callback while
  the failing call runs. wgpu-py's ``libf`` brackets every call with its error handler's
  ``capture``/``release``; here one :meth:`NativeCalls.checked` region brackets a run of
  direct calls and raises the same wgpu exception types when it ends (so ``translate_error``
  sees what it always saw). Errors of recorded commands surface when the encoder is
  finished; the executor submits inside that region only when it is still clean (``clean()``).
* :class:`~.native_map.NativeMapper` (native_map.py, reached only through this gate):
  ``wgpuBufferMapAsync`` with one reused C callback, then the wait in
  the calling thread: non-blocking ``wgpuDevicePoll`` calls for up to ``spin_s`` (a small job
  finishes within it, and spinning skips the sleep/wake-up of a blocking wait: 154 -> 114 µs
  for a small round trip on lavapipe), then blocking polls. The buffer's wgpu-py state is set
  exactly as wgpu-py's own map handler sets it, so wgpu-py's methods keep working on it.
* :class:`~.native_record.NativeRecorder` (native_record.py): a command encoder recorded by direct calls.
* :class:`~.native_bind.NativeBindGroups` (native_bind.py, ``NativeCalls.bind_group``): a bind group by one
  direct call instead of wgpu-py's checked descriptor structs (the eager path's largest host cost).

This module and those three are the only places these internals may appear (a test fails when another
module mentions them, or when another module imports the three).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from types import TracebackType
from typing import Literal

import numpy as np

from .native_bind import NativeBindGroups
from .native_map import NativeMapper, PendingMap, _spin_default  # noqa: F401 - re-exported
from .native_record import NativeRecorder
from .types import CData, GPUBuffer, GPUDevice, GPUQuerySet, GPUQueue

#: wgpu-py versions whose internals this module was written against (checked by :func:`native_driver`).
KNOWN_WGPU = ("0.32.0",)
#: ``VYRE_WGPU_NATIVE=0`` forces the public wgpu-py API (the CI runs the GPU tests once that way).
ENV_SWITCH = "VYRE_WGPU_NATIVE"

_NATIVE: list[NativeCalls | None] = []

#: How long a map may wait for its callback before it is declared failed (a lost device).
MAP_TIMEOUT_S = 120.0


def native_enabled() -> bool:
    """The version gate: a known wgpu-py and no ``VYRE_WGPU_NATIVE=0``."""
    if os.environ.get(ENV_SWITCH, "1").strip().lower() in ("0", "false", "no", "off"):
        return False
    try:
        import wgpu  # why: lazy (importing vyre must not import wgpu), and wgpu may be missing
    except Exception:  # noqa: BLE001 - no wgpu at all: nothing native either
        return False
    return str(getattr(wgpu, "__version__", "")) in KNOWN_WGPU


class _Checked:
    """``with nat.checked():`` — direct calls inside; a wgpu error they reported is raised on exit."""

    __slots__ = ("_nat",)

    def __init__(self, nat: NativeCalls) -> None:
        self._nat = nat

    def __enter__(self) -> _Checked:
        self._nat.capture()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> Literal[False]:
        err = self._nat.release()
        if err is not None and (exc is None or isinstance(exc, Exception)):
            raise err from exc
        return False


class NativeCalls:
    """The entry points, descriptor structs and wgpu-py types the fast path needs (one per process)."""

    def __init__(self) -> None:
        # why: lazy (importing vyre must not import wgpu), and only behind the version gate
        from wgpu.backends.wgpu_native import _api, _helpers
        from wgpu.backends.wgpu_native._ffi import ffi, lib

        self.ffi, self.lib = ffi, lib
        self.null = ffi.NULL
        self.device_type, self.queue_type, self.buffer_type = _api.GPUDevice, _api.GPUQueue, _api.GPUBuffer
        self.from_c_string_view = _api.from_c_string_view
        self._methods = (_api.GPUDevice.create_command_encoder, _api.GPUQueue.submit, _api.GPUQueue.write_buffer,
                         _api.GPUBuffer.map_async, _api.GPUBuffer.unmap)
        self._handler = _api.error_handler
        self._error_types = _helpers.ERROR_TYPES
        self._gpu_error = _helpers.ERROR_TYPES[""]
        self._checked = _Checked(self)
        self.mapped = _api.enums.BufferMapState.mapped
        self.unmapped = _api.enums.BufferMapState.unmapped
        self.pending = _api.enums.BufferMapState.pending
        self.map_success = int(lib.WGPUMapAsyncStatus_Success)
        self.allow_process_events = int(lib.WGPUCallbackMode_AllowProcessEvents)
        self.strlen = lib.WGPU_STRLEN
        self.create_encoder = lib.wgpuDeviceCreateCommandEncoder
        self.finish = lib.wgpuCommandEncoderFinish
        self.submit = lib.wgpuQueueSubmit
        self.write = lib.wgpuQueueWriteBuffer
        self.poll = lib.wgpuDevicePoll
        self.map_async = lib.wgpuBufferMapAsync
        self.mapped_range = lib.wgpuBufferGetConstMappedRange
        self.unmap = lib.wgpuBufferUnmap
        self.begin_pass = lib.wgpuCommandEncoderBeginComputePass
        self.set_pipeline = lib.wgpuComputePassEncoderSetPipeline
        self.set_bind_group = lib.wgpuComputePassEncoderSetBindGroup
        self.dispatch = lib.wgpuComputePassEncoderDispatchWorkgroups
        self.end_pass = lib.wgpuComputePassEncoderEnd
        self.copy = lib.wgpuCommandEncoderCopyBufferToBuffer
        self.clear = lib.wgpuCommandEncoderClearBuffer
        self.resolve = lib.wgpuCommandEncoderResolveQuerySet
        self.timestamp_period = lib.wgpuQueueGetTimestampPeriod
        self.undefined_index = 0xFFFFFFFF
        self.release_pass = lib.wgpuComputePassEncoderRelease
        self.release_encoder = lib.wgpuCommandEncoderRelease
        self.release_commands = lib.wgpuCommandBufferRelease
        self.from_buffer = ffi.from_buffer
        #: ``bind_group(device, layout, entries, label)``: a bind group by one direct call (native_bind.py)
        self.bind_group = NativeBindGroups(self, _api, lib)
        self._labels: dict[str, tuple[CData, CData, CData, CData]] = {}
        # smoke test: the struct types exist with the fields used below
        self.descriptors("vyre")
        ffi.new("WGPUBufferMapCallbackInfo *").userdata1 = ffi.NULL
        self.capture()
        if self.release() is not None:  # pragma: no cover - nothing ran
            raise RuntimeError("wgpu-py's error handler does not behave as expected")

    # ---- errors ----------------------------------------------------------------------------
    def capture(self) -> None:
        """Start collecting wgpu errors of this thread's calls (what wgpu-py's ``libf`` does per call)."""
        self._handler.capture("vyre-native")

    def release(self) -> Exception | None:
        """Stop collecting; the wgpu exception (GPUValidationError...) of the error reported meanwhile, or None."""
        err = self._handler.release("vyre-native")
        if err is None:
            return None
        kind, message = err
        exc: Exception = self._error_types.get(kind, self._gpu_error)(message)
        return exc

    def checked(self) -> _Checked:
        """A context manager: a run of direct calls whose reported error is raised at the end."""
        return self._checked

    def clean(self) -> bool:
        """Inside ``checked()``: no error reported so far (peeks at wgpu-py's error slot of this thread)."""
        stack = self._handler._get_proxy_stack()
        return not stack or stack[-1].message is None

    # ---- misc ------------------------------------------------------------------------------
    def descriptors(self, label: str) -> tuple[CData, CData, CData, CData]:
        """(encoder, pass, command buffer) descriptors carrying ``label`` (cached per label)."""
        d = self._labels.get(label)
        if d is None:
            ffi = self.ffi
            text = ffi.new("char[]", label.encode())
            enc = ffi.new("WGPUCommandEncoderDescriptor *")
            cpass = ffi.new("WGPUComputePassDescriptor *")
            done = ffi.new("WGPUCommandBufferDescriptor *")
            for s in (enc, cpass, done):
                s.label.data = text
                s.label.length = self.strlen
            if len(self._labels) >= 512:
                self._labels.clear()
            d = self._labels[label] = (enc, cpass, done, text)
        return d

    def timed_pass_descriptor(self, label: str, query_set: GPUQuerySet, begin: bool,
                              end: bool) -> tuple[CData, tuple[CData, CData]]:
        """A compute pass descriptor writing timestamps 0 (begin) and/or 1 (end) of ``query_set``."""
        ffi = self.ffi
        text = ffi.new("char[]", label.encode())
        tw = ffi.new("WGPUPassTimestampWrites *")
        tw.querySet = query_set._internal
        tw.beginningOfPassWriteIndex = 0 if begin else self.undefined_index
        tw.endOfPassWriteIndex = 1 if end else self.undefined_index
        desc = ffi.new("WGPUComputePassDescriptor *")
        desc.label.data = text
        desc.label.length = self.strlen
        desc.timestampWrites = tw
        return desc, (text, tw)

    def usable(self, device: GPUDevice, queue: GPUQueue) -> bool:
        """``device`` and ``queue`` are plain wgpu-native objects whose wgpu-py methods nobody replaced (a test
        or a profiler patching them sees every call through the wgpu-py path)."""
        dt, qt = type(device), type(queue)
        m = self._methods
        return (dt is self.device_type and qt is self.queue_type and bool(device._internal)
                and dt.create_command_encoder is m[0] and qt.submit is m[1] and qt.write_buffer is m[2])

    def can_map(self, buf: GPUBuffer) -> bool:
        """``buf`` is a plain wgpu-native buffer whose map_async/unmap nobody replaced."""
        bt = type(buf)
        return bt is self.buffer_type and bt.map_async is self._methods[3] and bt.unmap is self._methods[4]

    def wait(self, device: GPUDevice, done: Callable[[], bool], spin_s: float) -> bool:
        """Poll ``device`` until ``done()``: non-blocking polls for up to ``spin_s`` seconds, then blocking ones
        (each returns when the queue is empty; a callback may also run in wgpu-py's poll thread, so
        ``done()`` is checked between them). Raises after :data:`MAP_TIMEOUT_S`. Returns True when the
        spinning was enough (no blocking poll was needed)."""
        poll, handle, null = self.poll, device._internal, self.null
        if spin_s > 0:
            clock = time.perf_counter
            end = clock() + spin_s
            while True:
                poll(handle, 0, null)
                if done():
                    return True
                if clock() > end:
                    break
        poll(handle, 1, null)
        if done():
            return False
        deadline = time.monotonic() + MAP_TIMEOUT_S
        delay = 0.0
        while not done():
            if time.monotonic() > deadline:
                raise RuntimeError(f"waiting for the GPU did not complete in {MAP_TIMEOUT_S:.0f} s: device lost?")
            time.sleep(delay)
            delay = min(0.001, delay * 2 + 1e-5)
            poll(handle, 1, null)
        return False


def native_calls() -> NativeCalls | None:
    """The process's :class:`NativeCalls`, or None when the gate is closed or this wgpu-py build lacks them."""
    if not _NATIVE:
        nat = None
        if native_enabled():
            try:
                nat = NativeCalls()
            except Exception:  # noqa: BLE001 - any other wgpu build: the public methods
                nat = None
        _NATIVE.append(nat)
    return _NATIVE[0]


def native_driver(device: GPUDevice, queue: GPUQueue, spin_s: float | None = None) -> NativeDriver | None:
    """A :class:`NativeDriver` for ``device``/``queue`` when the gate is open and both are plain wgpu-native
    objects whose wgpu-py methods nobody replaced (a test or a profiler patching them sees every call
    through the public path), else None."""
    nat = native_calls()
    if nat is None or not nat.usable(device, queue):
        return None
    return NativeDriver(nat, device, queue, spin_s)


class NativeDriver:
    """The executor's driver on wgpu-native's entry points (interface shared with :class:`~.public.PublicDriver`)."""

    name = "native"

    def __init__(self, nat: NativeCalls, device: GPUDevice, queue: GPUQueue, spin_s: float | None = None) -> None:
        self.nat = nat
        self.device = device
        self.queue = queue
        self.mapper = NativeMapper(nat, spin_s)

    @property
    def spin_s(self) -> float:
        return self.mapper.spin_s

    @spin_s.setter
    def spin_s(self, value: float) -> None:
        self.mapper.spin_s = value

    def checked(self) -> _Checked:
        """A region of direct calls whose reported wgpu error is raised when it ends."""
        return self.nat.checked()

    def clean(self) -> bool:
        return self.nat.clean()

    def usable_now(self) -> bool:
        """The device's and queue's wgpu-py methods are still the ones this driver replaces."""
        return self.nat.usable(self.device, self.queue)

    def write(self, buffer: GPUBuffer, offset: int, data: np.ndarray) -> None:
        """``queue.write_buffer`` (inside a ``checked()`` region)."""
        nat = self.nat
        nat.write(self.queue._internal, buffer._internal, offset, nat.from_buffer(data), data.nbytes)

    def recorder(self, label: str) -> NativeRecorder:
        return NativeRecorder(self.nat, self.device, label)

    def submit(self, commands: CData) -> None:
        """Submit and release a finished command buffer handle (inside a ``checked()`` region)."""
        nat = self.nat
        try:
            nat.submit(self.queue._internal, 1, nat.ffi.new("WGPUCommandBuffer[1]", [commands]))
        finally:
            nat.release_commands(commands)

    def discard(self, commands: CData) -> None:
        self.nat.release_commands(commands)

    def usable(self, buf: GPUBuffer) -> bool:
        return self.nat.can_map(buf)

    def map(self, buf: GPUBuffer, mode: int, size: int) -> None:
        self.mapper.map(self.device, buf, mode, size)

    def view(self, buf: GPUBuffer, size: int) -> np.ndarray:
        return self.mapper.view(buf, size)

    def unmap(self, buf: GPUBuffer) -> None:
        self.mapper.unmap(buf)

    def mapped_range(self, buf: GPUBuffer, offset: int, size: int) -> memoryview | None:
        """A writable memoryview of a range of a buffer mapped for writing (for threaded copies), or None."""
        get_range = getattr(buf, "_experimental_get_mapped_range", None)
        view: memoryview | None = get_range(offset, size) if get_range is not None else None
        return view

    def write_mapped(self, buf: GPUBuffer, data: np.ndarray, offset: int) -> None:
        buf.write_mapped(data, offset)

    # ---- maps in flight (async dispatch) --------------------------------------------------------
    def start_map(self, buf: GPUBuffer, size: int) -> PendingMap:
        return (buf, size, self.mapper.start(buf, 1, size))

    def settled(self, pending: PendingMap, timeout: float) -> bool:
        return self.mapper.settled(self.device, pending[2], timeout)

    def finish_map(self, pending: PendingMap) -> None:
        buf, size, token = pending
        self.mapper.wait(self.device, token)
        self.mapper.finish(buf, token, size, 1)

    def abandon_map(self, pending: PendingMap) -> None:
        buf, size, token = pending
        self.mapper.abandon(buf, token, size, 1)

    # ---- the queue --------------------------------------------------------------------------------
    def timestamp_period(self) -> float:
        """Nanoseconds per timestamp tick (1.0 when wgpu-native cannot tell)."""
        try:
            period = float(self.nat.timestamp_period(self.queue._internal))
        except Exception:  # noqa: BLE001
            return 1.0
        return period if period > 0 else 1.0


__all__ = ["KNOWN_WGPU", "ENV_SWITCH", "MAP_TIMEOUT_S", "NativeCalls", "NativeDriver", "NativeMapper",
           "NativeRecorder", "native_calls", "native_driver", "native_enabled"]
