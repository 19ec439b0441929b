"""wgpu-native's C entry points for the per-dispatch hot path (wgpu-py 0.32, ``wgpu_native`` backend).

wgpu-py's wrappers cost Python time on every call (a descriptor struct and a wrapper object
per encoder, pass and command buffer, an error-capture proxy, an offsets array per
``set_bind_group``), and its ``map_async`` builds a promise and a C callback per map and
wakes the device's poll thread, which then polls concurrently with the thread that waits
(a thread hand-off per readback). This module does the same work with fewer layers:

* :class:`NativeEncoder` / :class:`NativePass`: a command encoder and compute pass with the
  few methods the executor uses, calling wgpu-native directly. Calls whose errors wgpu-native
  reports immediately (creating the encoder, ``finish``, ``submit``, ``write_buffer``) go
  through wgpu-py's error-capturing ``libf`` and raise like wgpu-py does; recording calls
  (pass commands, copies, clears) are checked by wgpu-native when the encoder is finished,
  which raises. Handles are released as soon as they are no longer needed.
* :class:`NativeMapper`: ``wgpuBufferMapAsync`` with one reused C callback, then one blocking
  ``wgpuDevicePoll`` in the calling thread (no promise, no poll thread). The buffer's
  wgpu-py state is then set exactly as wgpu-py's own map handler sets it, so
  ``read_mapped`` / ``write_mapped`` / ``unmap`` work unchanged.

:func:`native_calls` returns None when the wgpu-py build is not the one this was written
for, or when the device or queue is not a plain wgpu-native object (a test double, say):
callers then use the wgpu-py methods.
"""

from __future__ import annotations

import time

_NATIVE: list = []

#: How long a map may wait for its callback before it is declared failed (a lost device).
MAP_TIMEOUT_S = 120.0


class NativeCalls:
    """The entry points, descriptor structs and wgpu-py types the fast path needs (one per process)."""

    def __init__(self):
        from wgpu.backends.wgpu_native import _api
        from wgpu.backends.wgpu_native._ffi import ffi, lib

        self.ffi, self.lib, self.libf = ffi, lib, _api.libf
        self.null = ffi.NULL
        self.device_type, self.queue_type, self.buffer_type = _api.GPUDevice, _api.GPUQueue, _api.GPUBuffer
        self.from_c_string_view = _api.from_c_string_view
        self._methods = (_api.GPUDevice.create_command_encoder, _api.GPUQueue.submit, _api.GPUQueue.write_buffer,
                         _api.GPUBuffer.map_async)
        self.mapped = _api.enums.BufferMapState.mapped
        self.unmapped = _api.enums.BufferMapState.unmapped
        self.pending = _api.enums.BufferMapState.pending
        self.map_success = int(lib.WGPUMapAsyncStatus_Success)
        self.allow_process_events = int(lib.WGPUCallbackMode_AllowProcessEvents)
        self.strlen = lib.WGPU_STRLEN
        # entry points (the recording ones unwrapped; see the module docstring)
        self.create_encoder = _api.libf.wgpuDeviceCreateCommandEncoder
        self.finish = _api.libf.wgpuCommandEncoderFinish
        self.submit = _api.libf.wgpuQueueSubmit
        self.write = _api.libf.wgpuQueueWriteBuffer
        self.poll = _api.libf.wgpuDevicePoll
        self.map_async = _api.libf.wgpuBufferMapAsync
        self.mapped_range = _api.libf.wgpuBufferGetConstMappedRange
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
        return (dt is self.device_type and qt is self.queue_type and bool(device._internal)
                and dt.create_command_encoder is self._methods[0] and qt.submit is self._methods[1]
                and qt.write_buffer is self._methods[2])

    def can_map(self, buf) -> bool:
        """``buf`` is a plain wgpu-native buffer whose map_async nobody replaced."""
        return type(buf) is self.buffer_type and type(buf).map_async is self._methods[3]


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
    """A command encoder with the methods the executor uses. ``finish()`` returns a :class:`NativeCommands`.
    Use it as a context manager (or call :meth:`release`) so the handle is released on errors too."""

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
    """A finished command buffer; :meth:`submit` submits and releases it."""

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


def write_buffer(nat: NativeCalls, queue, buffer, data, nbytes: int) -> None:
    """``queue.write_buffer(buffer, 0, data)`` of a contiguous array of ``nbytes`` bytes (> 0)."""
    nat.write(queue._internal, buffer._internal, 0, nat.from_buffer(data), nbytes)


class NativeMapper:
    """Maps buffers with wgpuBufferMapAsync and one blocking wgpuDevicePoll in the calling thread.

    One C callback serves every map; each map has a token (the callback's userdata), so a
    late callback of an abandoned map cannot be taken for the current one.
    """

    def __init__(self, nat: NativeCalls):
        self._nat = nat
        self._done: dict[int, tuple[int, str]] = {}
        self._seq = 0
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
            nat.map_async(buf._internal, mode, 0, size, info[0])
            issued = True
            if token not in done:
                nat.poll(device._internal, 1, nat.null)
            if token not in done:  # the callback ran in another thread (wgpu-py's poller) or has not yet
                self._wait(device, token)
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
        """A uint8 numpy view of the first ``size`` bytes of ``buf``, mapped by :meth:`map` (valid until unmapped:
        copy what you keep)."""
        import numpy as np

        nat = self._nat
        if buf._map_state != nat.mapped or size > buf._mapped_status[1]:
            raise RuntimeError("Can only read from a buffer if its mapped (over the range read).")
        ptr = nat.mapped_range(buf._internal, 0, size)
        if ptr == nat.null:
            raise RuntimeError("wgpuBufferGetConstMappedRange returned NULL")
        return np.frombuffer(nat.ffi.buffer(ptr, size), dtype=np.uint8)

    def _set_mapped(self, buf, size: int, mode: int) -> None:
        """What wgpu-py's own map handler sets (wgpu/backends/wgpu_native/_api.py, GPUBuffer.map_async)."""
        buf._map_state = self._nat.mapped
        buf._mapped_status = (0, size, mode)
        buf._mapped_memoryviews = []

    def _wait(self, device, token: int) -> None:
        nat, done = self._nat, self._done
        deadline = time.monotonic() + MAP_TIMEOUT_S
        delay = 0.0
        while token not in done:
            if time.monotonic() > deadline:
                raise RuntimeError(f"mapping a buffer did not complete in {MAP_TIMEOUT_S:.0f} s: device lost?")
            time.sleep(delay)
            delay = min(0.001, delay * 2 + 1e-5)
            nat.poll(device._internal, 1, nat.null)


__all__ = ["NativeCalls", "NativeEncoder", "NativePass", "NativeCommands", "NativeMapper", "native_calls",
           "native_for", "write_buffer", "MAP_TIMEOUT_S"]
