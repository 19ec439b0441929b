"""Host <-> GPU transfers and device buffer reuse.

* :class:`Staging` owns one MAP_WRITE upload buffer and one MAP_READ readback buffer per
  device, grown (powers of two) when a submission needs more and reused otherwise (the
  executor decides what goes through them and maps them through its driver), and the rings
  of a few chunk-sized buffers per direction that large transfers cycle through
  (vyre/backends/wgpu/chunked.py: the host copy of one chunk overlaps the device copy of
  another; sized once per chunk size, so a 1 GiB transfer needs no 1 GiB staging buffer).
* :class:`ResourceSet` holds the device buffers of one job slot of a compiled pipeline (one
  per binding, taken from the buffer pool and exchanged for a larger one when too small)
  and the bind groups made from them, keyed by the exact buffer objects, so a repeated
  dispatch creates no buffer and no bind group.

All methods run under the backend's lock.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from .types import BufferUsage, GPUBindGroup, GPUBuffer, GPUDevice

if TYPE_CHECKING:  # why: annotation only; pool.py imports this module (Stats)
    from .pool import BufferPool

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


class Stats(dict[str, int]):
    """Counters (a dict subclass so ``backend.stats()`` can copy it)."""

    def bump(self, key: str, n: int = 1) -> None:
        self[key] = self.get(key, 0) + n


class Staging:
    """The reused upload (MAP_WRITE | COPY_SRC) and readback (MAP_READ | COPY_DST) buffers of one device,
    grown (powers of two) when a submission needs more. Maps go through the executor's driver."""

    def __init__(self, device: GPUDevice, stats: Stats, max_buffer_size: int | None = None) -> None:
        self.device = device
        self.stats = stats
        self.max_buffer_size = max_buffer_size
        self.upload: GPUBuffer = None  # None until the first upload
        self.readback: GPUBuffer = None
        #: "upload" / "readback" -> the chunk ring (all its buffers one size); see :meth:`ring`
        self.rings: dict[str, list[GPUBuffer]] = {}

    def _create(self, size: int, usage: BufferUsage, label: str) -> GPUBuffer:
        self.stats.bump("staging_buffers_created")
        self.stats.bump("buffers_created")
        return self.device.create_buffer(label=label, size=size, usage=usage)

    def ensure_upload(self, nbytes: int) -> GPUBuffer:
        """The upload buffer, grown to at least ``nbytes``."""
        return self._ensure("upload", nbytes)

    def ensure_readback(self, nbytes: int) -> GPUBuffer:
        """The readback buffer, grown to at least ``nbytes``."""
        return self._ensure("readback", nbytes)

    def _ensure(self, kind: str, nbytes: int) -> GPUBuffer:
        """The ``kind`` ("upload" or "readback") buffer when it holds ``nbytes``, else a new power-of-two one
        in its place (the old one destroyed first; None there if creating the new one fails)."""
        buf = getattr(self, kind)
        if buf is not None and buf.size >= nbytes:
            return buf
        import wgpu  # why: lazy, importing vyre must not import wgpu

        if buf is not None:
            buf.destroy()
        setattr(self, kind, None)
        BU = wgpu.BufferUsage
        usage = BU.MAP_WRITE | BU.COPY_SRC if kind == "upload" else BU.MAP_READ | BU.COPY_DST
        buf = self._create(grow_size(nbytes, self.max_buffer_size), usage, f"vyre-{kind}")
        setattr(self, kind, buf)
        return buf

    def ring(self, kind: str, slots: int, size: int) -> list[GPUBuffer]:
        """``slots`` buffers of at least ``size`` bytes for chunked transfers (``kind``: "upload" or "readback"),
        made once and replaced only when a larger chunk is asked for (the old ring destroyed first)."""
        ring = self.rings.get(kind)
        if ring is not None and len(ring) >= slots and int(ring[0].size) >= size:
            return ring
        import wgpu  # why: lazy, importing vyre must not import wgpu

        self.rings.pop(kind, None)
        for buf in ring or ():
            buf.destroy()
        BU = wgpu.BufferUsage
        usage = BU.MAP_WRITE | BU.COPY_SRC if kind == "upload" else BU.MAP_READ | BU.COPY_DST
        ring = []
        for k in range(slots):
            ring.append(self._create(align(size), usage, f"vyre-{kind}-ring-{k}"))
            self.rings[kind] = ring  # kept from the first buffer on: a failed create leaves no orphan
        return ring

    def _all(self) -> list[GPUBuffer]:
        return [b for b in (self.upload, self.readback) if b is not None] + [b for r in self.rings.values() for b in r]

    def bytes(self) -> int:
        return sum(int(b.size) for b in self._all())

    def reset(self) -> None:
        """Drop every buffer (after an error that may have left one mapped)."""
        for buf in self._all():
            try:
                if str(buf.map_state) == "mapped":
                    buf.unmap()
            except Exception:  # noqa: BLE001 - best effort on a failed device
                pass
        self.upload = None
        self.readback = None
        self.rings = {}

    def release(self) -> None:
        for buf in self._all():
            try:
                buf.destroy()
            except Exception:  # noqa: BLE001
                pass
        self.upload = None
        self.readback = None
        self.rings = {}


@dataclass
class ResourceSet:
    """Device buffers and bind groups of one job slot of a compiled pipeline, reused across dispatches.

    The buffers come from the backend's :class:`~.pool.BufferPool` and go back to it on
    :meth:`release`. The bind groups are rebuilt only when a buffer (or, for raw WGSL, a
    bound size) changes, so repeated dispatches of the same shape create nothing.
    """

    buffers: list[GPUBuffer] = field(default_factory=list)  # index = program buffer index; None where unbound
    params: GPUBuffer = None  # the hidden uniform buffer (Bindings.params: shared, not this set's to release)
    # buffer index -> (buffer, bytes) of small read-only inputs
    last_inputs: dict[int, tuple[GPUBuffer, bytes]] = field(default_factory=dict)
    bind_key: tuple[Any, ...] = ()
    bind_groups: list[GPUBindGroup] = field(default_factory=list)
    # (group number, entries) -> bind group made for them: a slot alternating between a few params uniforms
    # (dispatches of a few sizes) finds its groups again (at most GROUPS_KEPT, oldest dropped first)
    group_cache: dict[tuple[Any, ...], GPUBindGroup] = field(default_factory=dict)
    bound: object = None  # (buffers, params, exact sizes) the bind groups were last completed for

    def nbytes(self) -> int:
        return sum(int(b.size) for b in self.buffers if b is not None)

    def release(self, pool: BufferPool | None = None) -> None:
        """Give the buffers back to ``pool`` (or destroy them without one) and forget the bind groups."""
        for b in self.buffers:
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
        self.last_inputs = {}
        self.bind_key = ()
        self.bind_groups = []
        self.group_cache = {}
        self.bound = None


__all__ = ["Staging", "ResourceSet", "Stats", "align", "as_bytes4", "grow_size", "ALIGN", "MIN_STAGING"]
