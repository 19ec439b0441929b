"""Captured resident sequences on the GPU (vyre/backends/captured.py describes them): the steps are
checked and their bind groups made once; a replay is one Work whose single pass is an
:class:`~.work.Encoded` (the native driver encodes it from a flat list of entry points worked out
on the first replay). Per replay only the copies, writes and reads are resolved to buffers."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ...errors import DeviceLostError, StaleCaptureError
from ..captured import HandleCopy, check_copies
from ..handles import ResidentHandle
from .device import Device
from .executor import Executor
from .resident import ResidentState, ResidentStore
from .transfer import Stats
from .types import GPUBuffer
from .work import Copy, Dispatch, Encoded, Pass, Read, Work, Write


class Captured:
    """One captured sequence (made by ``WgpuBackend.capture_resident_sequence``)."""

    def __init__(self, dev: Device, resident: ResidentStore, ex: Executor, stats: Stats, st: ResidentState,
                 dispatches: list[Dispatch], handles: Sequence[ResidentHandle], clears: Sequence[ResidentHandle]
                 ) -> None:
        self._dev, self._resident, self._ex, self._stats = dev, resident, ex, stats
        self._st = st
        self._frees = st.frees
        self._encoded = Encoded(tuple(dispatches))
        # the handles the steps bind (params handles left out: their bind groups hold their immutable buffers)
        bound = {h.id: h for h in handles if h.id in st.entries}
        self._bound = [(h, st.entries[h.id][1]) for h in bound.values()]
        self._clears = [(resident.buffer(st, h, f"clear {k}"), 0, h.nbytes) for k, h in enumerate(clears)]
        self._clear_handles = [(h, buf) for h, (buf, _, _) in zip(clears, self._clears)]
        self._count = sum(1 for d in dispatches if d.total)

    @property
    def steps(self) -> int:
        return len(self._encoded.dispatches)

    def _check(self, st: ResidentState) -> None:
        if st is not self._st:
            raise DeviceLostError("captured sequence: the GPU device was lost or replaced since the capture; "
                                  "its buffers are gone", fix="capture the sequence again")
        if st.frees == self._frees:
            return
        entries = st.entries
        for h, buf in (*self._bound, *self._clear_handles):
            entry = entries.get(h.id)
            if entry is None or entry[1] is not buf:
                raise StaleCaptureError(f"captured sequence: resident handle {h.id} it binds was freed after "
                                        "the capture", fix="capture again; keep the handles it binds alive")
        self._frees = st.frees

    def _copies(self, st: ResidentState, copies: Sequence[HandleCopy], what: str) -> list[Copy]:
        out: list[Copy] = []
        buffer = self._resident.buffer
        for k, (src, dst) in enumerate(copies):
            s: GPUBuffer = buffer(st, src, f"{what} copy {k}")
            d: GPUBuffer = buffer(st, dst, f"{what} copy {k}")
            out.append((s, 0, d, 0, src.nbytes))
        return out

    def run(self, *, writes: Sequence[tuple[ResidentHandle, Any]] = (), before: Sequence[HandleCopy] = (),
            after: Sequence[HandleCopy] = (), read: Sequence[Any] | None = None) -> list[np.ndarray]:
        with self._dev.lock:
            st = self._resident.state()
            self._check(st)
            if before:
                check_copies(before, "before")
            if after:
                check_copies(after, "after")
            ws: list[Write] = []
            if writes:
                up = self._resident.upload_work(writes)  # checked like any upload
                ws = list(up.writes)
            reads = [] if read is None else [self._resident.range(st, r, f"read {k}") for k, r in enumerate(read)]
            work = Work(label="vyre-captured-sequence", writes=ws, passes=[Pass(self._encoded, self._clears)],
                        reads=[Read(buf, off, n) for buf, off, n in reads],
                        before=self._copies(st, before, "before") if before else (),
                        after=self._copies(st, after, "after") if after else ())
            out = self._ex.run(work)
            stats = self._stats
            stats.bump("resident_dispatches", self._count)
            stats.bump("resident_sequences")
            stats.bump("captured_replays")
            return out


__all__ = ["Captured"]
