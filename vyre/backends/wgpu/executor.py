"""The Executor: the one path from a :class:`~.work.Work` to results.

    writes (queue.write_buffer; large totals through the mapped upload staging buffer; a large upload
    or download on its own goes in overlapped chunks instead: chunked.py)
    -> one command encoder: staging copies, then per pass its clears and one compute pass
       (timestamps around the passes of a timed Work), the copies of every read into the
       readback staging buffer -> one submit -> one map -> each read converted -> unmap.

:meth:`Executor.run` waits (when there is anything to read or time) and returns the reads'
results; :meth:`Executor.launch` submits and starts mapping a caller-owned readback buffer,
returning a :class:`Launched` to poll or wait (async dispatch). Every wgpu failure becomes a
vyre error here (a lost device is marked lost on the :class:`~.device.Device`), and the
staging buffers are dropped after a failure, which may have left one mapped.

The executor holds no meaning: builders (dispatch, batch, resident, sequences, op pipelines)
make the Work. It calls the device only through its driver: :class:`~.native.NativeDriver`
(wgpu-native entry points) or :class:`~.public.PublicDriver` (wgpu-py's public API).
Callers hold the device lock.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, NoReturn

import numpy as np

from . import chunked, hostcopy
from .device import Device
from .driver import Driver
from .failures import raise_translated
from .loop_trap import TRAP_NBYTES, LoopTrap
from .native import NativeDriver, native_driver
from .public import PublicDriver
from .timestamps import FEATURE, QueryPair, elapsed_ns
from .transfer import ALIGN, Staging, Stats, align
from .types import GPUBuffer
from .work import Copy, Read, Timed, Work, Write

#: Per read of a Work, where its bytes lie in the readback buffer: ``(pos, lead, span)``, None for an empty read.
Layout = list[tuple[int, int, int] | None]


def _layout(reads: Sequence[Read], start: int = 0) -> tuple[Layout, int]:
    """Readback positions: per read ``(pos, lead, span)`` (4-byte aligned spans around any offset) or None
    for an empty read; and the total bytes."""
    layout: Layout = []
    pos = start
    for r in reads:
        if not r.nbytes:
            layout.append(None)
            continue
        lo = r.offset & ~3
        span = align(r.offset + r.nbytes, 4) - lo
        layout.append((pos, r.offset - lo, span))
        pos += align(span, ALIGN)
    return layout, pos


def _convert(r: Read, view: np.ndarray) -> Any:
    if r.convert is not None:
        return r.convert(view)
    dst = np.empty(r.nbytes, np.uint8) if r.out is None else r.out.reshape(-1).view(np.uint8)
    hostcopy.copy_bytes(dst, view)
    return dst if r.out is None else r.out


def _empty(r: Read) -> Any:
    if r.convert is not None:
        return r.convert(np.zeros(0, np.uint8))
    return np.zeros(0, np.uint8) if r.out is None else r.out


class Executor:
    """Runs Work on one device (re-attached by :meth:`attach` when the device is replaced)."""

    #: Writes of one Work totalling more bytes than this go through the mapped staging buffer;
    #: smaller totals use queue.write_buffer (cheaper than a map round trip).
    upload_map_threshold = 512 << 10
    #: With the mapped path on, writes smaller than this still use queue.write_buffer.
    upload_small_buffer = 64 << 10

    def __init__(self, device_part: Device, stats: Stats) -> None:
        self._dev = device_part
        self.stats = stats
        self.staging = Staging(device_part.device, stats, device_part.limits.get("max-buffer-size"))
        self._public = PublicDriver(device_part.device, device_part.queue)
        self._fence: GPUBuffer | None = None  # the MAP_READ buffer of wait_idle
        self._native: NativeDriver | None = None
        self.driver: Driver = self._public
        self._timer: QueryPair | None = None
        #: the loop trap, on adapters that cut loops short (set by the backend); None elsewhere
        self.trap: LoopTrap | None = None
        #: large transfers in overlapped chunks (chunked.py): not on a CPU adapter, whose device copies are
        #: host copies too (lavapipe on 2 cores: a little slower chunked)
        self.chunked_transfers = chunked.suits(device_part)

    def attach(self) -> None:
        """Use the device part's current device (after it was opened or recovered)."""
        d = self._dev
        self._public = PublicDriver(d.device, d.queue)
        self._native = native_driver(d.device, d.queue)
        self.driver = self._native or self._public
        self.staging.reset()
        self.staging = Staging(d.device, self.stats, d.limits.get("max-buffer-size"))
        self._timer = None
        self._fence = None

    # ---- running ----------------------------------------------------------------------------------
    def run(self, work: Work) -> list[Any]:
        """Submit ``work``; when it reads anything, wait and return one result per read (else ``[]`` at once)."""
        try:
            if self.chunked_transfers and chunked.upload_eligible(work):  # alone and large: chunked.py
                self._check_driver()
                chunked.upload(self, work)
                return []
            if self.chunked_transfers and chunked.download_eligible(work):
                self._check_driver()
                return chunked.download(self, work)
            layout, total, _ = self._submit(work, None, timer=None)
            if not work.reads:
                return []
            return self._collect(work, layout, total, self.staging.readback, None)
        except BaseException as exc:
            self._fail(exc, work)

    def run_timed(self, work: Work) -> Timed:
        """Submit ``work``, wait, and time it: timestamps around its passes when the device has them."""
        t0 = time.perf_counter_ns()
        try:
            timer = None
            if FEATURE in self._dev.features and work.passes:
                if self._timer is None:
                    self._timer = QueryPair(self._dev.device)
                timer = self._timer
            layout, total, stamp_at = self._submit(work, None, timer)
            if total:
                results = self._collect(work, layout, total, self.staging.readback, stamp_at)
            else:
                self._wait_fence()
                results = [_empty(r) for r in work.reads]
        except BaseException as exc:
            self._fail(exc, work)
        wall = time.perf_counter_ns() - t0
        if stamp_at is not None:
            stamps = results.pop()
            return Timed(results, elapsed_ns(stamps, self.driver.timestamp_period()), "timestamp", wall)
        return Timed(results, wall, "wall-clock", wall)

    def launch(self, work: Work, readback: GPUBuffer) -> Launched:
        """Submit ``work`` with its reads copied into ``readback`` (a MAP_READ buffer the caller owns) and start
        mapping it; the :class:`Launched` gives the results."""
        try:
            layout, total, _ = self._submit(work, readback, timer=None)
            if not total:  # nothing to read: clear a few bytes so the map waits for this submission
                with self.driver.checked():
                    rec = self.driver.recorder("vyre-fence")
                    try:
                        rec.clear(readback, 0, 16)
                        commands = rec.finish()
                    finally:
                        rec.release()
                with self.driver.checked():
                    self.driver.submit(commands)
                total = 16
            pending = self.driver.start_map(readback, total)
        except BaseException as exc:
            self._fail(exc, work)
        return Launched(self, work, layout, total, readback, pending)

    def wait_idle(self) -> None:
        """Wait until all submitted work is done."""
        self._check_driver()
        try:
            self._wait_fence()
        except BaseException as exc:
            self._fail(exc, None)

    def _wait_fence(self) -> None:
        """Clear a small MAP_READ buffer in a new submission and map it: the map waits for every earlier
        submission (queue order). Polling until wgpu-native reports an empty queue is no wait: it says so
        while work still runs (on the H200, evaluate() and such a wait looped in 204 µs around a 244 µs
        kernel)."""
        import wgpu  # why: import time (the backend imports wgpu lazily: `import vyre` stays light)

        driver = self.driver
        if self._fence is None:
            self._fence = self._dev.device.create_buffer(
                label="vyre-fence", size=16, usage=wgpu.BufferUsage.MAP_READ | wgpu.BufferUsage.COPY_DST)
        with driver.checked():
            rec = driver.recorder("vyre-fence")
            try:
                rec.clear(self._fence, 0, 16)
                commands = rec.finish()
            finally:
                rec.release()
        with driver.checked():
            driver.submit(commands)
        driver.map(self._fence, 1, 16)
        driver.unmap(self._fence)

    # ---- the one encode/submit path ----------------------------------------------------------------
    def _check_driver(self) -> None:
        """The native driver while the device's and queue's wgpu-py methods are the originals (a test or a
        profiler that patches them sees every call through the public API)."""
        nat = self._native
        if nat is not None and (self.driver is nat or self.driver is self._public):  # not a test's stand-in
            self.driver = nat if nat.usable_now() else self._public

    def _submit(self, work: Work, readback: GPUBuffer | None, timer: QueryPair | None
                ) -> tuple[Layout, int, int | None]:
        """Writes, encoder, submit. Returns (read layout, readback bytes used, offset of the timestamps)."""
        self._check_driver()
        driver, stats = self.driver, self.stats
        direct, staged, nbytes = self._split_writes(work.writes)
        reads = work.reads
        layout, total = _layout(reads)
        stamp_at = None
        if timer is not None:
            stamp_at, total = total, total + ALIGN
        trap = self.trap.buffer() if self.trap is not None and total else None
        work.trap_at = None
        if trap is not None:  # the loop trap rides along with any readback (vyre/lower/trap.py)
            work.trap_at, total = total, total + ALIGN
        passes = work.passes
        need_encoder = bool(staged or passes or total or work.before or work.after)
        with driver.checked():  # direct calls: a wgpu error they reported is raised at the end of the block
            for w in direct:
                driver.write(w.buffer, w.offset, w.data)
            if not need_encoder:
                commands = None
            else:
                copies = self._stage(staged) if staged else ()
                if total and readback is None:
                    readback = self.staging.ensure_readback(total)
                rec = driver.recorder(work.label)
                try:
                    for src, pos, buf, offset, n in copies:
                        rec.copy(src, pos, buf, offset, n)
                    for src, pos, buf, offset, n in work.before:
                        rec.copy(src, pos, buf, offset, n)
                    n_dispatch, last = 0, len(passes) - 1
                    for i, p in enumerate(passes):
                        for buf, offset, size in p.clears:
                            rec.clear(buf, offset, size)
                        t = (timer.query_set, i == 0, i == last) if timer is not None else None
                        n_dispatch += rec.compute_pass(p.dispatches, t)
                    for src, pos, buf, offset, n in work.after:
                        rec.copy(src, pos, buf, offset, n)
                    for r, item in zip(reads, layout):
                        if item is not None:
                            rec.copy(r.buffer, r.offset & ~3, readback, item[0], item[2])
                    if timer is not None:
                        assert stamp_at is not None  # set with the timer above
                        rec.resolve(timer.query_set, 2, timer.resolved, 0)
                        rec.copy(timer.resolved, 0, readback, stamp_at, QueryPair.nbytes)
                    if trap is not None:
                        assert work.trap_at is not None  # set with the trap above
                        rec.copy(trap, 0, readback, work.trap_at, TRAP_NBYTES)
                        rec.clear(trap, 0, TRAP_NBYTES)  # read once: the next submission starts clear
                    commands = rec.finish()
                finally:
                    rec.release()
                work.dispatches = n_dispatch
            if commands is not None:
                # submitted in the block that encoded (one error scope per submission); after an error the
                # block raises it at its end and the commands are dropped unsubmitted
                if driver.clean():
                    driver.submit(commands)
                else:
                    driver.discard(commands)
                    commands = None
        if commands is not None:
            stats.bump("submits")
        if direct:
            stats.bump("uploads_direct", len(direct))
        if staged:
            stats.bump("uploads_mapped", len(staged))
        if nbytes:
            stats.bump("bytes_uploaded", nbytes)
        return layout, total, stamp_at

    def _split_writes(self, writes: Sequence[Write]) -> tuple[Sequence[Write], list[Write], int]:
        """(written by queue.write_buffer, staged through the mapped upload buffer, total bytes)."""
        if not writes:
            return (), [], 0
        total = 0
        for w in writes:
            total += w.data.nbytes
        if total <= self.upload_map_threshold:
            return writes, [], total
        small = self.upload_small_buffer
        return [w for w in writes if w.data.nbytes < small], [w for w in writes if w.data.nbytes >= small], total

    def _stage(self, staged: list[Write]) -> list[Copy]:
        """Copy ``staged`` writes into the mapped upload buffer; returns the copies to record."""
        driver = self.driver
        need = sum(align(w.data.nbytes, ALIGN) for w in staged)
        up = self.staging.ensure_upload(need)
        driver.map(up, 2, align(need, ALIGN))
        copies: list[Copy] = []
        pos = 0
        try:
            for w in staged:
                n = w.data.nbytes
                view = driver.mapped_range(up, pos, n) if n >= hostcopy.PARALLEL_MIN_BYTES else None
                if view is not None:
                    dst = np.frombuffer(view, np.uint8, count=n)
                    hostcopy.copy_bytes(dst, w.data)
                    del dst, view
                else:
                    driver.write_mapped(up, w.data, pos)
                copies.append((up, pos, w.buffer, w.offset, n))
                pos += align(n, ALIGN)
        finally:
            driver.unmap(up)
        self.stats.bump("staging_maps")
        return copies

    def _collect(self, work: Work, layout: Layout, total: int, readback: GPUBuffer, stamp_at: int | None
                 ) -> list[Any]:
        """Map ``readback`` (waits for the submission) and convert every read (and the timestamps) while mapped."""
        driver = self.driver
        driver.map(readback, 1, align(total, ALIGN))
        return self._read_mapped(work, layout, total, readback, stamp_at)

    def _read_mapped(self, work: Work, layout: Layout, total: int, readback: GPUBuffer, stamp_at: int | None
                     ) -> list[Any]:
        driver = self.driver
        results: list[Any] = []
        try:
            mem = driver.view(readback, total)
            nbytes = 0
            for r, item in zip(work.reads, layout):
                if item is None:
                    results.append(_empty(r))
                    continue
                pos, lead, _ = item
                view = mem[pos + lead:pos + lead + r.nbytes]
                results.append(_convert(r, view))  # copies: the mapping goes away below
                del view
                nbytes += r.nbytes
            if stamp_at is not None:
                results.append(mem[stamp_at:stamp_at + QueryPair.nbytes].copy())
            code = 0 if work.trap_at is None else int(mem[work.trap_at:work.trap_at + 4].view(np.uint32)[0])
            del mem
        finally:
            driver.unmap(readback)
        self.stats.bump("bytes_read_back", nbytes)
        if code and self.trap is not None:
            raise self.trap.error(code)
        return results

    def _fail(self, exc: BaseException, work: Work | None) -> NoReturn:
        """Raise the vyre error for ``exc`` (a lost device is marked lost); staging buffers are dropped."""
        self.staging.reset()  # a failure (or ^C) may have left a staging buffer mapped
        raise_translated(exc, self._dev, work.program if work else None, wgsl=work.wgsl if work else None)


@dataclass(slots=True)
class Launched:
    """A submitted Work whose readback buffer is being mapped (see :meth:`Executor.launch`)."""

    _ex: Executor
    _work: Work
    _layout: Layout
    _total: int
    _readback: GPUBuffer
    _pending: Any  # the driver's map in flight

    def settled(self, timeout: float = 0.0) -> bool:
        """Whether the results are ready, waiting at most ``timeout`` seconds."""
        try:
            return self._ex.driver.settled(self._pending, timeout)
        except BaseException as exc:
            self._ex._fail(exc, self._work)

    def results(self) -> list[Any]:
        """Wait for the map and convert every read."""
        ex = self._ex
        try:
            ex.driver.finish_map(self._pending)
        except BaseException as exc:
            ex.driver.abandon_map(self._pending)
            ex._fail(exc, self._work)
        try:
            return ex._read_mapped(self._work, self._layout, self._total, self._readback, None)
        except BaseException as exc:
            ex._fail(exc, self._work)


__all__ = ["Executor", "Launched"]
