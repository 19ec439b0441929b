"""A device buffer pool with power-of-two size classes and a byte cap.

Every device buffer a dispatch binds comes from here. ``acquire(kind, nbytes)`` returns a
free buffer of the request's size class (a hit) or creates one (a miss); ``release(buf)``
puts it back on its class's free list. The pool counts every buffer it created and has not
destroyed (in use or free) against ``cap_bytes``; :meth:`trim` destroys the least recently
released free buffers while the pool is over the cap. Buffers in use are never destroyed
here: the backend returns the buffers of its least recently used pipelines first.

Kinds: ``"storage"`` (STORAGE | COPY_SRC | COPY_DST) and ``"uniform"`` (UNIFORM | COPY_DST).
Size classes are powers of two from :data:`MIN_CLASS` bytes; a request whose class would
exceed the binding limit passed as ``cap`` gets a buffer of its exact (16-byte aligned) size.

All methods run under the backend's lock.
"""

from __future__ import annotations

from collections import OrderedDict

from .transfer import Stats
from .types import BufferUsage, GPUBuffer, GPUDevice

MIN_CLASS = 256
DEFAULT_CAP = 1 << 30


def size_class(nbytes: int, cap: int | None = None) -> int:
    """The allocation size for a request of ``nbytes``: the next power of two (at least MIN_CLASS),
    or the 16-byte aligned request itself when that power of two is above ``cap``."""
    need = max(16, (nbytes + 15) // 16 * 16)
    size = max(MIN_CLASS, 1 << (need - 1).bit_length())
    if cap is not None and size > cap:
        return need
    return size


def _usage(kind: str) -> BufferUsage:
    import wgpu  # why: lazy, importing vyre must not import wgpu

    BU = wgpu.BufferUsage
    if kind == "uniform":
        return BU.UNIFORM | BU.COPY_DST
    return BU.STORAGE | BU.COPY_SRC | BU.COPY_DST


class BufferPool:
    """Free lists per (kind, size class), in release order, plus the bytes of every live buffer."""

    def __init__(self, device: GPUDevice, stats: Stats, cap_bytes: int = DEFAULT_CAP) -> None:
        self.device = device
        self.stats = stats
        self.cap_bytes = int(cap_bytes)
        self._free: OrderedDict[int, tuple[tuple[str, int], GPUBuffer]] = OrderedDict()  # id -> (key, buffer)
        self._by_key: dict[tuple[str, int], list[GPUBuffer]] = {}
        self._live: dict[int, tuple[tuple[str, int], GPUBuffer]] = {}  # every buffer the pool owns
        self.bytes = self.hits = self.misses = self.destroyed = 0

    # ---- accounting ---------------------------------------------------------------
    @property
    def buffers(self) -> int:
        return len(self._live)

    @property
    def free_buffers(self) -> int:
        return len(self._free)

    @property
    def free_bytes(self) -> int:
        return sum(key[1] for key, _ in self._free.values())

    def owns(self, buf: GPUBuffer) -> bool:
        return id(buf) in self._live

    # ---- acquire / release ----------------------------------------------------------
    def acquire(self, kind: str, nbytes: int, cap: int | None = None, label: str = "vyre-pool") -> GPUBuffer:
        key = (kind, size_class(nbytes, cap))
        bucket = self._by_key.get(key)
        if bucket:
            buf = bucket.pop()
            del self._free[id(buf)]
            self.hits += 1
            return buf
        self.misses += 1
        buf = self.device.create_buffer(label=label, size=key[1], usage=_usage(kind))
        self.stats.bump("buffers_created")
        self._live[id(buf)] = (key, buf)
        self.bytes += key[1]
        return buf

    def release(self, buf: GPUBuffer | None) -> None:
        """Return a buffer to its class (buffers the pool did not create are destroyed)."""
        if buf is None:
            return
        entry = self._live.get(id(buf))
        if entry is None:
            _destroy(buf)
            return
        if id(buf) in self._free:
            return
        key = entry[0]
        self._free[id(buf)] = (key, buf)
        self._by_key.setdefault(key, []).append(buf)

    def trim(self, cap: int | None = None) -> None:
        """Destroy free buffers, least recently released first, while the pool holds more than the cap."""
        cap = self.cap_bytes if cap is None else cap
        while self.bytes > cap and self._free:
            _, (key, buf) = self._free.popitem(last=False)
            self._by_key[key].remove(buf)
            self._forget(key, buf)

    def _forget(self, key: tuple[str, int], buf: GPUBuffer) -> None:
        del self._live[id(buf)]
        self.bytes -= key[1]
        self.destroyed += 1
        _destroy(buf)

    def clear(self, device: GPUDevice | None = None) -> None:
        """Destroy every buffer (free or not) and forget them; ``device`` replaces the device."""
        for _, buf in list(self._live.values()):
            _destroy(buf)
        self._free.clear()
        self._by_key.clear()
        self._live.clear()
        self.bytes = 0
        if device is not None:
            self.device = device

    def snapshot(self) -> dict[str, int]:
        return {"bytes": self.bytes, "buffers": self.buffers, "free_buffers": self.free_buffers,
                "free_bytes": self.free_bytes, "cap_bytes": self.cap_bytes, "hits": self.hits,
                "misses": self.misses, "destroyed": self.destroyed}


def _destroy(buf: GPUBuffer) -> None:
    try:
        buf.destroy()
    except Exception:
        pass


__all__ = ["BufferPool", "size_class", "MIN_CLASS", "DEFAULT_CAP"]
