"""Large uploads and readbacks in chunks through a ring of staging buffers (:meth:`Staging.ring`), so the host
copy of one chunk overlaps the device copy of another.

With one staging buffer a transfer is two copies in a row: host -> mapped memory, then the GPU's copy to the
device buffer (a readback: the GPU's copy, then mapped memory -> host). Each is ~as long as the other on a
PCIe GPU, so the transfer runs at about half of either rate. Here a readback of at least
``READBACK_MIN_BYTES`` (an upload of ``UPLOAD_MIN_BYTES``: by default none, measured slower) is cut into
chunks of :func:`chunk_size` bytes cycling through ``SLOTS`` buffers, one submission each:

* upload: map slot k for writing (this waits only for the copy submitted from it ``SLOTS`` chunks ago),
  copy the chunk in (threads, hostcopy.py), unmap, submit the copy slot -> device buffer; the GPU copies
  chunk k while the host fills chunk k + 1;
* readback: submit the copies of the first ``SLOTS`` chunks, each into its slot, and start their maps
  (Executor.launch); then per chunk: wait for its map, copy it out, unmap, and launch the chunk ``SLOTS``
  ahead into the freed slot -- the GPU copies the next chunks while the host copies this one.

A "new array" readback allocates its destination once; its page faults happen in the chunk copies (on
several threads), overlapped with the device copies too. Each chunk readback is an ordinary launched Work:
the loop trap (loop_trap.py) rides along with each chunk as with any readback, and failures go through
the executor's ``_fail`` (staging dropped, device loss marked), abandoning the maps still in flight.

Used where :func:`suits` says so (``Executor.chunked_transfers``: not on CPU adapters). The thresholds and
``CHUNK_MIN``/``CHUNK_MAX`` are module settings (``VYRE_TRANSFER_CHUNK_MIB`` fixes the chunk
size; ``0`` turns chunking off), so benches/transfer.py can compare against the one-buffer path in the same
process.
"""

from __future__ import annotations

import os
from collections import deque
from typing import TYPE_CHECKING, Any

import numpy as np

from . import hostcopy
from .transfer import ALIGN, align
from .work import Read, Work

if TYPE_CHECKING:  # why: annotations only; executor.py imports this module
    from .executor import Executor, Launched

MiB = 1 << 20
SLOTS = 3  # chunks in flight: one being copied by the host, up to two by the GPU
CHUNK_MIN = 4 * MiB
CHUNK_MAX = 32 * MiB
TARGET_CHUNKS = 4  # a transfer is cut into about this many chunks (within CHUNK_MIN..CHUNK_MAX)
SLACK = 4 * ALIGN  # a readback slot also holds an unaligned read's edges and the loop trap's word


def _env_chunk() -> int | None:
    raw = os.environ.get("VYRE_TRANSFER_CHUNK_MIB")
    if raw is None:
        return None
    try:
        return max(0, int(float(raw) * MiB)) // ALIGN * ALIGN
    except ValueError:
        return None


#: ``VYRE_TRANSFER_CHUNK_MIB``: a fixed chunk size (both directions chunked from two chunks on); 0: never chunk.
FIXED_CHUNK = _env_chunk()
# Measured on the H200 (benches/transfer.py, the same process, GB/s one-buffer vs chunked): uploads are faster
# through one buffer at every size (16 MiB 16.2 vs 7.0, 256 MiB 26.3 vs 22.3, 1 GiB 29.5 vs 21.2): the write
# maps of a ring cost more than the overlap wins; readbacks gain from 256 MiB on (16.5 vs 23.3, 1 GiB 20.4 vs
# 23.5) and lose below (64 MiB 20.3 vs 17.3). So by default only large readbacks are chunked.
_INF = float("inf")
#: Readbacks (one Work's total bytes) of at least this size are chunked.
READBACK_MIN_BYTES: float = _INF if FIXED_CHUNK == 0 else 2 * FIXED_CHUNK if FIXED_CHUNK else 128 * MiB
#: Uploads of at least this size are chunked (by default never: see above).
UPLOAD_MIN_BYTES: float = _INF if not FIXED_CHUNK else 2 * FIXED_CHUNK


def chunk_size(total: int) -> int:
    """Bytes per chunk for a transfer of ``total`` bytes: about ``total / TARGET_CHUNKS`` (a multiple of 1 MiB)
    within ``CHUNK_MIN``..``CHUNK_MAX``: small chunks overlap more, large ones pay fewer submissions and maps."""
    if FIXED_CHUNK:
        return FIXED_CHUNK
    want = -(-total // TARGET_CHUNKS)
    return min(CHUNK_MAX, max(CHUNK_MIN, -(-want // MiB) * MiB))


def suits(device_part: Any) -> bool:
    """Whether chunking pays on this device: not on a CPU adapter (lavapipe), whose "device" copies are host
    copies on the same cores (measured there: a little slower chunked, with 2 cores)."""
    info = getattr(getattr(device_part, "choice", None), "info", None) or {}
    return str(info.get("adapter_type", "")).upper() != "CPU"


def upload_eligible(work: Work) -> bool:
    """Only writes (a resident upload), large enough in total."""
    if not work.writes or work.reads or work.passes or work.before or work.after:
        return False
    return sum(w.data.nbytes for w in work.writes) >= UPLOAD_MIN_BYTES


def download_eligible(work: Work) -> bool:
    """Only plain reads (a resident download: no conversions), large enough in total."""
    if not work.reads or work.writes or work.passes or work.before or work.after:
        return False
    if any(r.convert is not None for r in work.reads):
        return False
    return sum(r.nbytes for r in work.reads) >= READBACK_MIN_BYTES


def upload(ex: Executor, work: Work) -> None:
    """Run an upload-only ``work`` chunk by chunk (see the module docstring). Caller: ``Executor.run``'s try."""
    total = sum(w.data.nbytes for w in work.writes)
    chunk = chunk_size(total)
    ring = ex.staging.ring("upload", SLOTS, chunk)
    driver, stats = ex.driver, ex.stats
    k = 0
    for w in work.writes:
        data = w.data
        for a in range(0, data.nbytes, chunk):
            piece = data[a:a + chunk]  # a multiple of 4 bytes: writes are, and so is the chunk
            n = piece.nbytes
            slot = ring[k % len(ring)]
            k += 1
            driver.map(slot, 2, align(n, ALIGN))  # waits for the copy submitted from this slot SLOTS chunks ago
            try:
                view = driver.mapped_range(slot, 0, n)
                if view is not None:
                    dst = np.frombuffer(view, np.uint8, count=n)
                    hostcopy.copy_bytes(dst, piece)
                    del dst, view
                else:
                    driver.write_mapped(slot, piece, 0)
            finally:
                driver.unmap(slot)
            with driver.checked():
                rec = driver.recorder(work.label)
                try:
                    rec.copy(slot, 0, w.buffer, w.offset + a, n)
                    commands = rec.finish()
                finally:
                    rec.release()
                if driver.clean():
                    driver.submit(commands)
                else:
                    driver.discard(commands)
            stats.bump("submits")
    stats.bump("staging_maps", k)
    stats.bump("transfer_chunks", k)
    stats.bump("uploads_mapped", len(work.writes))
    stats.bump("bytes_uploaded", total)


def download(ex: Executor, work: Work) -> list[Any]:
    """Run a read-only ``work`` chunk by chunk; one result per read, as ``Executor.run`` returns them."""
    total = sum(r.nbytes for r in work.reads)
    chunk = chunk_size(total)
    results: list[Any] = []
    pieces: list[Read] = []
    for r in work.reads:
        dst = np.empty(r.nbytes, np.uint8) if r.out is None else r.out.reshape(-1).view(np.uint8)
        results.append(dst if r.out is None else r.out)
        for a in range(0, r.nbytes, chunk):
            pieces.append(Read(r.buffer, r.offset + a, min(chunk, r.nbytes - a), out=dst[a:a + chunk]))
    ring = ex.staging.ring("readback", SLOTS, chunk + SLACK)
    inflight: deque[Launched] = deque()
    try:
        for i, piece in enumerate(pieces):
            if len(inflight) == len(ring):
                inflight.popleft().results()  # copies into the piece's slice of the destination
            inflight.append(ex.launch(Work(label=work.label, reads=[piece]), ring[i % len(ring)]))
        while inflight:
            inflight.popleft().results()
    except BaseException:
        for launched in inflight:  # maps still in flight: a late completion must not touch a reused slot
            try:
                ex.driver.abandon_map(launched._pending)
            except Exception:  # noqa: BLE001 - best effort while raising the first error
                pass
        raise
    ex.stats.bump("transfer_chunks", len(pieces))
    return results


__all__ = ["upload", "download", "suits", "upload_eligible", "download_eligible", "chunk_size",
           "READBACK_MIN_BYTES", "UPLOAD_MIN_BYTES", "SLOTS", "CHUNK_MIN", "CHUNK_MAX"]
