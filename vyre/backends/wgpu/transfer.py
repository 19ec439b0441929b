"""Host <-> GPU transfers and device buffer reuse.

* :class:`Staging` owns one MAP_WRITE upload buffer and one MAP_READ readback buffer per
  device, grown (powers of two) when a dispatch needs more and reused otherwise.
  Readback copies every output into the readback buffer inside the dispatch's command
  encoder, maps it once and reads it through one mapped view (``read_mapped(copy=False)``
  when maps do not go through wgpu-native). Maps go through :class:`~.native.NativeMapper`
  (no promise, no poll-thread hand-off, a short spin before blocking).
* Uploads: inputs of a dispatch whose total is above ``map_threshold`` bytes go through the
  mapped staging buffer (measured 5x faster than ``queue.write_buffer`` at 64 MiB on
  lavapipe); below it (and for buffers under ``small_buffer`` bytes) ``queue.write_buffer``
  is used: one call per input, where the mapped path needs a map, an unmap and a copy per
  input (mapping an idle staging buffer and unmapping it costs ~7 µs on lavapipe through
  the native mapper, ~70-80 µs through wgpu-py's promise and poll thread).
* :class:`ResourceSet` holds the device buffers of one job slot of a compiled pipeline (one
  per binding, taken from the buffer pool and exchanged for a larger one when too small)
  and the bind groups made from them, keyed by the exact buffer objects, so a repeated
  dispatch creates no buffer and no bind group.

All methods run under the backend's lock.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .native import NativeMapper, native_calls

ALIGN = 16  # offsets inside staging buffers (mapping needs 8, copies 4)
MIN_STAGING = 64 << 10


def align(n: int, a: int = ALIGN) -> int:
    return (n + a - 1) // a * a


def grow_size(need: int, cap: int | None) -> int:
    """Next power of two >= need (at least MIN_STAGING), but not above cap when need fits under it."""
    need = align(max(need, 4), ALIGN)
    size = max(MIN_STAGING, 1 << (need - 1).bit_length())
    if cap is not None and size > cap:
        size = max(need, cap // ALIGN * ALIGN)
    return size


def as_bytes4(data: np.ndarray) -> np.ndarray:
    """A 1-D uint8 view of ``data`` padded with zeros to a multiple of 4 bytes (copy only when padding)."""
    if type(data) is np.ndarray and data.ndim == 1 and data.flags.c_contiguous and not data.nbytes % 4:
        return data.view(np.uint8)
    raw = np.ascontiguousarray(data).reshape(-1).view(np.uint8)
    if raw.nbytes % 4:
        padded = np.zeros(align(raw.nbytes, 4), dtype=np.uint8)
        padded[: raw.nbytes] = raw
        return padded
    return raw


class Stats(dict):
    """Counters (a dict subclass so ``backend.stats()`` can copy it)."""

    def bump(self, key: str, n: int = 1) -> None:
        self[key] = self.get(key, 0) + n


#: MapMode values as wgpu-native takes them.
_MODE_INT = {"READ_NOSYNC": 1, "READ": 1, "WRITE": 2}


def _map_read_mode():
    """``READ_NOSYNC`` skips the empty submit wgpu-py 0.32 adds before mapping for read (a workaround for
    reading buffers never submitted to; we always submit the copy first). Falls back to plain READ."""
    return "READ_NOSYNC"


class Staging:
    """Reused upload (MAP_WRITE | COPY_SRC) and readback (MAP_READ | COPY_DST) buffers of one device."""

    self_poll = True

    def __init__(self, device, stats: Stats, max_buffer_size: int | None = None):
        self.device = device
        self.stats = stats
        self.max_buffer_size = max_buffer_size
        self.upload = None
        self.readback = None
        self._read_mode = None
        self._mapper = None  # NativeMapper, False (use wgpu-py), None (not decided yet)

    def _create(self, size: int, usage, label: str):
        self.stats.bump("staging_buffers_created")
        self.stats.bump("buffers_created")
        return self.device.create_buffer(label=label, size=size, usage=usage)

    def ensure_upload(self, nbytes: int):
        import wgpu

        if self.upload is None or self.upload.size < nbytes:
            if self.upload is not None:
                self.upload.destroy()
            self.upload = None
            size = grow_size(nbytes, self.max_buffer_size)
            self.upload = self._create(size, wgpu.BufferUsage.MAP_WRITE | wgpu.BufferUsage.COPY_SRC, "vyre-upload")
        return self.upload

    def ensure_readback(self, nbytes: int):
        import wgpu

        if self.readback is None or self.readback.size < nbytes:
            if self.readback is not None:
                self.readback.destroy()
            self.readback = None
            size = grow_size(nbytes, self.max_buffer_size)
            self.readback = self._create(size, wgpu.BufferUsage.MAP_READ | wgpu.BufferUsage.COPY_DST, "vyre-readback")
        return self.readback

    def _native_mapper(self):
        if self._mapper is None:
            nat = native_calls()
            self._mapper = NativeMapper(nat) if nat is not None and type(self.device) is nat.device_type else False
        return self._mapper

    def _map(self, buf, mode, size: int) -> None:
        """Map and wait. With wgpu-native: :class:`~.native.NativeMapper` (map_async with a reused callback,
        then polls in this thread, spinning briefly before blocking: no promise, no poll-thread hand-off).
        Otherwise wgpu-py's map_async + a blocking poll here + wait."""
        mapper = self._mapper if self._mapper is not None else self._native_mapper()
        if mapper and mapper.usable(buf):
            mapper.map(self.device, buf, int(_MODE_INT.get(mode, mode)), size)
            return
        promise = buf.map_async(mode, 0, size)
        poll = getattr(self.device, "_poll_wait", None) if self.self_poll else None
        if poll is not None:
            poll()
        promise.sync_wait()

    def map_upload(self, nbytes: int):
        import wgpu

        buf = self.ensure_upload(nbytes)
        self._map(buf, wgpu.MapMode.WRITE, align(nbytes, ALIGN))
        return buf

    def map_readback(self, nbytes: int):
        import wgpu

        buf = self.readback
        size = align(nbytes, ALIGN)
        if self._read_mode is None:
            try:
                self._map(buf, _map_read_mode(), size)
                self._read_mode = _map_read_mode()
                return buf
            except (ValueError, KeyError, TypeError, AttributeError):
                self._read_mode = wgpu.MapMode.READ
        self._map(buf, self._read_mode, size)
        return buf

    def mapped_view(self, buf, nbytes: int):
        """The first ``nbytes`` of ``buf`` (mapped for reading by :meth:`map_readback`) as one uint8 numpy view,
        or None when maps do not go through wgpu-native (then use ``buf.read_mapped``). Valid until unmapped."""
        mapper = self._mapper
        if not mapper or not mapper.usable(buf):
            return None
        return mapper.view(buf, nbytes)

    @property
    def spin_s(self) -> float:
        """Seconds a wait for the GPU polls without blocking first (see :class:`~.native.NativeMapper`)."""
        mapper = self._mapper if self._mapper is not None else self._native_mapper()
        return mapper.spin_s if mapper else 0.0

    def unmap(self, buf) -> None:
        """``buf.unmap()`` (through wgpu-native directly when it was mapped that way)."""
        mapper = self._mapper
        if mapper and mapper.usable(buf):
            mapper.unmap(buf)
        else:
            buf.unmap()

    def reset(self) -> None:
        """Drop both buffers (after an error that may have left one mapped)."""
        for buf in (self.upload, self.readback):
            if buf is None:
                continue
            try:
                if str(buf.map_state) == "mapped":
                    buf.unmap()
            except Exception:
                pass
        self.upload = None
        self.readback = None

    def release(self) -> None:
        for buf in (self.upload, self.readback):
            if buf is not None:
                try:
                    buf.destroy()
                except Exception:
                    pass
        self.upload = None
        self.readback = None


@dataclass
class ResourceSet:
    """Device buffers and bind groups of one job slot of a compiled pipeline, reused across dispatches.

    The buffers come from the backend's :class:`~.pool.BufferPool` and go back to it on
    :meth:`release`. The bind groups are rebuilt only when a buffer (or, for raw WGSL, a
    bound size) changes, so repeated dispatches of the same shape create nothing.
    """

    buffers: list = field(default_factory=list)  # index = program buffer index; GPUBuffer | None
    params: object = None  # the hidden uniform buffer
    last_words: object = None  # bytes of the params last written (skip the write when unchanged)
    last_inputs: dict = field(default_factory=dict)  # buffer index -> (buffer, bytes) of small read-only inputs
    bind_key: tuple = ()
    bind_groups: list = field(default_factory=list)
    bound: object = None  # (buffers, params, exact sizes) the bind groups were last completed for

    def nbytes(self) -> int:
        total = sum(b.size for b in self.buffers if b is not None)
        return total + (self.params.size if self.params is not None else 0)

    def release(self, pool=None) -> None:
        """Give the buffers back to ``pool`` (or destroy them without one) and forget the bind groups."""
        for b in [*self.buffers, self.params]:
            if b is None:
                continue
            if pool is not None:
                pool.release(b)
            else:
                try:
                    b.destroy()
                except Exception:
                    pass
        self.buffers = []
        self.params = None
        self.last_words = None
        self.last_inputs = {}
        self.bind_key = ()
        self.bind_groups = []
        self.bound = None


__all__ = ["Staging", "ResourceSet", "Stats", "align", "as_bytes4", "grow_size"]
