"""wgpu-native's C entry points for the per-dispatch hot path (wgpu-py 0.32, ``wgpu_native`` backend).

wgpu-py's wrappers cost Python time on every call (a descriptor struct and a wrapper object
per encoder, pass and command buffer, an error-capture proxy per call, an offsets array per
``set_bind_group``), and its ``map_async`` builds a promise and a C callback per map and
wakes the device's poll thread, which then polls concurrently with the thread that waits
(a thread hand-off per readback). This module does the same work with fewer layers:

* Errors: wgpu-native reports a validation error through the device's error callback while
  the failing call runs. wgpu-py's ``libf`` brackets every call with its error handler's
  ``capture``/``release`` and raises what was captured; here one :meth:`NativeCalls.checked`
  region brackets a run of direct calls and raises the same wgpu exception types when it
  ends (so ``translate_error`` sees what it always saw). Errors of recorded commands
  surface when the encoder is finished, so a region ends right after ``finish`` and another
  covers ``submit``.
* :class:`NativeEncoder` / :class:`NativePass`: a command encoder and compute pass with the
  few methods the executor uses. Handles are released as soon as they are no longer needed.
* :class:`NativeMapper`: ``wgpuBufferMapAsync`` with one reused C callback, then the wait
  in the calling thread (no promise, no poll thread): non-blocking ``wgpuDevicePoll`` calls
  for up to :attr:`NativeMapper.spin_s` (a small job finishes within it, and spinning
  skips the sleep/wake-up of a blocking wait: 154 -> 114 µs for a small round trip on
  lavapipe), then blocking polls. The buffer's wgpu-py state is then set exactly as
  wgpu-py's own map handler sets it, so ``read_mapped`` / ``write_mapped`` / ``unmap`` work
  unchanged.

:func:`native_for` returns None when the wgpu-py build is not the one this was written for,
or when the device or queue is not a plain wgpu-native object, or one of the wgpu-py methods
the fast path replaces was patched (a test double, a profiler): callers then use wgpu-py.
"""

from __future__ import annotations

import os
import time

_NATIVE: list = []

#: How long a map may wait for its callback before it is declared failed (a lost device).
MAP_TIMEOUT_S = 120.0


def _spin_default() -> float:
    """Seconds of non-blocking polling before a wait blocks: ``VYRE_SPIN_WAIT_US`` (default 1000)."""
    try:
        return max(0.0, float(os.environ.get("VYRE_SPIN_WAIT_US", "1000")) * 1e-6)
    except ValueError:
        return 1e-3


class _Checked:
    """``with nat.checked():`` — direct calls inside; a wgpu error they reported is raised on exit."""

    __slots__ = ("_nat",)

    def __init__(self, nat: "NativeCalls"):
        self._nat = nat

    def __enter__(self):
        self._nat.capture()
        return self

    def __exit__(self, exc_type, exc, tb):
        err = self._nat.release()
        if err is not None and (exc is None or isinstance(exc, Exception)):
            raise err from exc
        return False


class NativeCalls:
    """The entry points, descriptor structs and wgpu-py types the fast path needs (one per process)."""

    def __init__(self):
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
        self.release_pass = lib.wgpuComputePassEncoderRelease
        self.release_encoder = lib.wgpuCommandEncoderRelease
        self.release_commands = lib.wgpuCommandBufferRelease
        self.from_buffer = ffi.from_buffer
        self._labels: dict[str, tuple] = {}
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

    def release(self):
        """Stop collecting; the wgpu exception (GPUValidationError...) of the error reported meanwhile, or None."""
        err = self._handler.release("vyre-native")
        if err is None:
            return None
        kind, message = err
        return self._error_types.get(kind, self._gpu_error)(message)

    def checked(self) -> _Checked:
        """A context manager: a run of direct calls whose reported error is raised at the end."""
        return self._checked

    # ---- misc ------------------------------------------------------------------------------
    def descriptors(self, label: str) -> tuple:
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

    def usable(self, device, queue) -> bool:
        """``device`` and ``queue`` are plain wgpu-native objects whose wgpu-py methods nobody replaced (a test
        or a profiler patching them sees every call through the wgpu-py path)."""
        dt, qt = type(device), type(queue)
        m = self._methods
        return (dt is self.device_type and qt is self.queue_type and bool(device._internal)
                and dt.create_command_encoder is m[0] and qt.submit is m[1] and qt.write_buffer is m[2])

    def can_map(self, buf) -> bool:
        """``buf`` is a plain wgpu-native buffer whose map_async/unmap nobody replaced."""
        bt = type(buf)
        return bt is self.buffer_type and bt.map_async is self._methods[3] and bt.unmap is self._methods[4]

    def wait(self, device, done, spin_s: float) -> bool:
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
    """The process's :class:`NativeCalls`, or None when this wgpu-py build does not have them."""
    if not _NATIVE:
        try:
            _NATIVE.append(NativeCalls())
        except Exception:  # noqa: BLE001 - any other wgpu build: the public methods
            _NATIVE.append(None)
    return _NATIVE[0]


def native_for(device, queue) -> NativeCalls | None:
    """:func:`native_calls` when ``device`` and ``queue`` are plain wgpu-native objects, else None."""
    nat = native_calls()
    if nat is not None and nat.usable(device, queue):
        return nat
    return None


class NativePass:
    """A compute pass being recorded (``set_pipeline``, ``set_bind_group``, ``dispatch_workgroups``, ``end``)."""

    __slots__ = ("_nat", "_h")

    def __init__(self, nat: NativeCalls, handle):
        self._nat = nat
        self._h = handle

    def set_pipeline(self, pipeline) -> None:
        self._nat.set_pipeline(self._h, pipeline._internal)

    def set_bind_group(self, index: int, bind_group) -> None:
        self._nat.set_bind_group(self._h, index, bind_group._internal, 0, self._nat.null)

    def dispatch_workgroups(self, x: int, y: int = 1, z: int = 1) -> None:
        self._nat.dispatch(self._h, x, y, z)

    def end(self) -> None:
        h, self._h = self._h, None
        if h is not None:
            try:
                self._nat.end_pass(h)
            finally:
                self._nat.release_pass(h)


class NativeEncoder:
    """A command encoder with the methods the executor uses. Create it, record and ``finish()`` inside one
    ``nat.checked()`` region; ``finish()`` returns a :class:`NativeCommands`. Use it as a context manager
    (or call :meth:`release`) so the handle is released on errors too."""

    __slots__ = ("_nat", "_h", "_desc")

    def __init__(self, nat: NativeCalls, device, label: str):
        self._nat = nat
        self._desc = nat.descriptors(label)
        self._h = None
        self._h = nat.create_encoder(device._internal, self._desc[0])

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.release()

    def release(self) -> None:
        h, self._h = self._h, None
        if h is not None:
            self._nat.release_encoder(h)

    def begin_compute_pass(self, label: str = "") -> NativePass:
        return NativePass(self._nat, self._nat.begin_pass(self._h, self._desc[1]))

    def copy_buffer_to_buffer(self, src, src_offset: int, dst, dst_offset: int, size: int) -> None:
        self._nat.copy(self._h, src._internal, src_offset, dst._internal, dst_offset, size)

    def clear_buffer(self, buffer, offset: int = 0, size: int | None = None) -> None:
        self._nat.clear(self._h, buffer._internal, offset, buffer.size - offset if size is None else size)

    def finish(self) -> "NativeCommands":
        return NativeCommands(self._nat, self._nat.finish(self._h, self._desc[2]))


class NativeCommands:
    """A finished command buffer; :meth:`submit` submits and releases it (inside a ``nat.checked()`` region)."""

    __slots__ = ("_nat", "_h")

    def __init__(self, nat: NativeCalls, handle):
        self._nat = nat
        self._h = handle

    def submit(self, queue) -> None:
        h, self._h = self._h, None
        nat = self._nat
        try:
            nat.submit(queue._internal, 1, nat.ffi.new("WGPUCommandBuffer[1]", [h]))
        finally:
            nat.release_commands(h)

    def release(self) -> None:
        h, self._h = self._h, None
        if h is not None:
            self._nat.release_commands(h)

    def __del__(self):
        if self._h is not None:
            try:
                self.release()
            except Exception:  # noqa: BLE001 - interpreter shutdown
                pass


class NativeMapper:
    """Maps buffers with wgpuBufferMapAsync and waits in the calling thread (see the module docstring).

    One C callback serves every map; each map has a token (the callback's userdata), so a
    late callback of an abandoned map cannot be taken for the current one.
    """

    def __init__(self, nat: NativeCalls, spin_s: float | None = None):
        self._nat = nat
        #: Seconds of non-blocking polling before a wait blocks (``VYRE_SPIN_WAIT_US``, default 1000 µs).
        self.spin_s = _spin_default() if spin_s is None else spin_s
        self._done: dict[int, tuple[int, str]] = {}
        self._seq = 0
        #: Seconds the last wait took. Longer than the spin: the next wait blocks at once (a long job is
        #: likely followed by another, and spinning through it only takes a core from the device when
        #: the device is the CPU, as with lavapipe).
        self._last_wait = 0.0
        ffi = nat.ffi
        done = self._done
        success = nat.map_success
        from_view = nat.from_c_string_view

        @ffi.callback("void(WGPUMapAsyncStatus, WGPUStringView, void *, void *)")
        def _mapped(status, message, userdata1, userdata2):
            try:
                msg = "" if status == success else from_view(message)
            except Exception:  # noqa: BLE001 - never raise into C
                msg = "?"
            done[int(ffi.cast("uintptr_t", userdata1))] = (int(status), msg)

        self._callback = _mapped
        self._info = ffi.new("WGPUBufferMapCallbackInfo *")
        self._info.mode = nat.allow_process_events
        self._info.callback = _mapped

    def usable(self, buf) -> bool:
        return self._nat.can_map(buf)

    def map(self, device, buf, mode: int, size: int) -> None:
        """Map ``size`` bytes of ``buf`` from offset 0 (``mode``: 1 read, 2 write) and wait for it."""
        nat = self._nat
        if buf._map_state != nat.unmapped:
            raise RuntimeError(f"Can only map a buffer if its currently unmapped, not {buf._map_state!r}")
        self._seq += 1
        token = self._seq
        info = self._info
        info.userdata1 = nat.ffi.cast("void *", token)
        done = self._done
        if done:  # late callbacks of abandoned maps
            done.clear()
        buf._map_state = nat.pending
        issued = False
        try:
            with nat.checked():
                nat.map_async(buf._internal, mode, 0, size, info[0])
                issued = True
                if token not in done:
                    spin = self.spin_s
                    t0 = time.perf_counter()
                    nat.wait(device, lambda: token in done, spin if self._last_wait <= spin else 0.0)
                    self._last_wait = time.perf_counter() - t0
        except BaseException:
            if not issued:
                buf._map_state = nat.unmapped
            elif done.get(token, (None,))[0] == nat.map_success:
                self._set_mapped(buf, size, mode)  # mapped after all: let the caller's cleanup unmap it
            done.pop(token, None)
            raise
        status, message = done.pop(token)
        if status != nat.map_success:
            buf._map_state = nat.unmapped
            raise RuntimeError(f"Could not map buffer ({status} : {message}).")
        self._set_mapped(buf, size, mode)

    def view(self, buf, size: int):
        """A uint8 numpy view of the first ``size`` bytes of ``buf``, mapped by :meth:`map` (valid until
        :meth:`unmap`: copy what you keep)."""
        import numpy as np

        nat = self._nat
        if buf._map_state != nat.mapped or size > buf._mapped_status[1]:
            raise RuntimeError("Can only read from a buffer if its mapped (over the range read).")
        ptr = nat.mapped_range(buf._internal, 0, size)
        if ptr == nat.null:
            raise RuntimeError("wgpuBufferGetConstMappedRange returned NULL")
        return np.frombuffer(nat.ffi.buffer(ptr, size), dtype=np.uint8)

    def unmap(self, buf) -> None:
        """``buf.unmap()`` (what wgpu-py's unmap does, without its error proxy)."""
        nat = self._nat
        if buf._map_state != nat.mapped:
            raise RuntimeError("Can only unmap a buffer if its currently mapped.")
        with nat.checked():
            nat.unmap(buf._internal)
        buf._map_state = nat.unmapped
        buf._mapped_status = (0, 0, 0)
        buf._release_memoryviews()

    def _set_mapped(self, buf, size: int, mode: int) -> None:
        """What wgpu-py's own map handler sets (wgpu/backends/wgpu_native/_api.py, GPUBuffer.map_async)."""
        buf._map_state = self._nat.mapped
        buf._mapped_status = (0, size, mode)
        buf._mapped_memoryviews = []


__all__ = ["NativeCalls", "NativeEncoder", "NativePass", "NativeCommands", "NativeMapper", "native_calls",
           "native_for", "MAP_TIMEOUT_S"]
