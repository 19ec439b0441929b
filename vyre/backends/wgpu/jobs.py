"""Jobs: program dispatches on pooled buffers, turned into :class:`~.work.Work` for the executor.

A :class:`Job` is what a dispatch, one element of a batch, or a raw WGSL dispatch needs on
the GPU: its compiled pipeline, its bindings (bytes to upload, bytes to zero, outputs to
read back), the hidden params words and the workgroup counts. :meth:`JobRunner.run` gives
each job a :class:`~.transfer.ResourceSet` of its pipeline (job slot k for the k-th job of
that pipeline in the submission), takes missing buffers from the pool and the params uniform
from :class:`~.bindings.Bindings` (written once, shared by every dispatch with the same
words), rebuilds bind groups only when a buffer changed, and hands one Work (writes, one pass
of every job's dispatch, the reads of every output) to the executor.

Writes are skipped for a small read-only input equal to what its (job-slot-owned) buffer
last received; that memory is forgotten on any failure. A job kept for repeats (``reuse``)
also keeps its pass and reads while its slot's bind groups stay the same. Callers hold the
device lock.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial

import numpy as np

from ...ir.types import Access
from ..host import BufferPlan, storage_to_host
from ..planning import Step
from .bindings import Bindings, group_entries
from .device import Device
from .executor import Executor
from .failures import raise_translated
from .pipeline_store import PipelineStore
from .pipelines import CompiledPipeline
from .transfer import ResourceSet, Stats, align, as_bytes4
from .types import GPUBuffer
from .work import Dispatch, Pass, Read, Timed, Work, Write

#: Read-only inputs up to this size are compared with what their buffer last received, and not written again
#: when equal (constant weights, scalars, tables: the buffer is this job slot's alone and the shader cannot
#: write a read-only binding, so it still holds them).
SKIP_UNCHANGED_MAX = 64 << 10
#: Bind groups a job slot keeps for entries it had before (ResourceSet.group_cache).
GROUPS_KEPT = 16

#: What a job keeps for repeats: (rset.bound, pass, reads, program name, wgsl).
Static = tuple[object, Pass, list[Read], str, str]
#: An input write to remember once its submission succeeded: (rset, buffer index, buffer, bytes written).
Done = tuple[ResourceSet, int, GPUBuffer, bytes]


@dataclass(slots=True)
class Bind:
    """One buffer binding of a job."""

    index: int  # buffer index (ResourceSet.buffers position; Slot.index)
    nbytes: int  # bytes the job uses (a multiple of 4)
    data: np.ndarray | None = None  # uint8 bytes to upload (None: nothing)
    clear: bool = False  # zero it before the dispatch (write-only outputs)
    output: bool = False  # read it back
    uniform: bool = False


@dataclass
class Job:
    compiled: CompiledPipeline
    binds: list[Bind]
    workgroups: tuple[int, int, int]
    to_host: Callable[[int, np.ndarray], np.ndarray]  # (output number, raw bytes) -> host array
    words: np.ndarray | None = None  # the hidden params uniform (None: the shader has none)
    exact: bool = False  # bind exactly nbytes (raw WGSL may use arrayLength) instead of the whole buffer
    label: str = "vyre"
    reuse: bool = False  # run again with new input data (a remembered repeat dispatch): keep `static`
    static: Static | None = None  # (rset.bound, pass, reads, program name, wgsl) of a reused job
    outputs: list[Bind] = field(init=False)

    def __post_init__(self) -> None:
        self.outputs = [b for b in self.binds if b.output]


def job_from_step(compiled: CompiledPipeline, step: Step, label: str) -> Job:
    """The job of a planned program dispatch."""
    plan = step.plan
    binds: list[Bind] = []
    outs: list[BufferPlan] = []
    for b in plan.buffers:
        access = b.decl.access
        out = access.writable
        data = b.data
        if data is None:  # write-only: zeroed before the dispatch
            binds.append(Bind(b.index, b.nbytes, None, out, out, access is Access.UNIFORM))
        else:
            binds.append(Bind(b.index, b.nbytes, as_bytes4(data) if data.nbytes else None, False, out,
                              access is Access.UNIFORM))
        if out:
            outs.append(b)

    def to_host(k: int, raw: np.ndarray) -> np.ndarray:
        return storage_to_host(outs[k].decl, raw, outs[k].count)

    return Job(compiled=compiled, binds=binds, workgroups=step.workgroups, to_host=to_host, words=step.words,
               label=label)


class JobRunner:
    """Runs jobs through the executor on buffers of the pool (see the module docstring)."""

    def __init__(self, dev: Device, store: PipelineStore, executor: Executor, bindings: Bindings, stats: Stats
                 ) -> None:
        self._dev = dev
        self._store = store
        self._ex = executor
        self._bindings = bindings
        self.pool = bindings.pool
        self._stats = stats
        self._use_clock = 0

    def run(self, jobs: list[Job]) -> list[list[np.ndarray]]:
        """Run ``jobs`` in one submission; one list of outputs per job."""
        work, done, rsets = self._work(jobs)
        try:
            results = self._ex.run(work)
        except BaseException:
            self._forget(jobs, rsets)
            raise
        self._finish(jobs, done)
        return _split(jobs, results)

    def run_timed(self, job: Job) -> Timed:
        """Run one job and time it (timestamps around its pass where the device has them)."""
        work, done, rsets = self._work([job])
        work.timed = True
        try:
            timed = self._ex.run_timed(work)
        except BaseException:
            self._forget([job], rsets)
            raise
        self._finish([job], done)
        return timed

    # ---- building the Work ------------------------------------------------------------------------
    def _work(self, jobs: list[Job]) -> tuple[Work, list[Done], list[ResourceSet]]:
        if len(jobs) == 1:
            job = jobs[0]
            st = job.static
            if st is not None:
                rset = job.compiled.rsets[0]
                pool = self.pool
                # a repeat of a kept job: same sizes, and its slot still holds the buffers and bind groups it had
                if rset.bound is st[0] and pool.bytes <= pool.cap_bytes:
                    writes: list[Write] = []
                    done: list[Done] = []
                    skipped = self._writes(job, rset, writes, done)
                    if skipped:
                        self._stats.bump("uploads_skipped", skipped)
                    return Work(job.label, writes, [st[1]], st[2], False, st[3], st[4]), done, [rset]
        rsets: list[ResourceSet] = []
        slots: dict[int, int] = {}
        try:
            for job in jobs:
                k = slots.get(id(job.compiled), 0)
                slots[id(job.compiled)] = k + 1
                rset = job.compiled.resource_set(k)
                rsets.append(rset)
                self._ensure_resources(job, rset)
            self._trim_pool(keep={id(j.compiled) for j in jobs})
        except BaseException as exc:
            self._forget(jobs, rsets)
            if not isinstance(exc, Exception):
                raise
            one = jobs[0].compiled if len(jobs) == 1 else None
            raise_translated(exc, self._dev, one.program_name if one else None)
        writes = []
        done = []  # (rset, buffer index, buffer, bytes) to remember once the submission succeeded
        skipped = 0
        for job, rset in zip(jobs, rsets):
            skipped += self._writes(job, rset, writes, done)
        if skipped:
            self._stats.bump("uploads_skipped", skipped)
        if len(jobs) == 1:
            job = jobs[0]
            st = job.static
            if st is None or st[0] is not rsets[0].bound:
                st = (rsets[0].bound, *_static(job, rsets[0]), job.compiled.program_name, job.compiled.wgsl)
                if job.reuse:
                    job.static = st
            passes, reads = [st[1]], st[2]
        else:
            dispatches: list[Dispatch] = []
            clears: list[tuple[GPUBuffer, int, int]] = []
            reads = []
            for job, rset in zip(jobs, rsets):
                p, r = _static(job, rset)
                clears.extend(p.clears)
                dispatches.extend(p.dispatches)
                reads.extend(r)
            passes = [Pass(dispatches, clears)]
        label = jobs[0].label if len(jobs) == 1 else f"vyre:batch[{len(jobs)}]"
        one = jobs[0].compiled if len(jobs) == 1 else None
        work = Work(label=label, writes=writes, passes=passes, reads=reads,
                    program=one.program_name if one else None, wgsl=one.wgsl if one else None)
        return work, done, rsets

    @staticmethod
    def _writes(job: Job, rset: ResourceSet, writes: list[Write], done: list[Done]) -> int:
        """Append the writes ``job`` needs on ``rset`` (skipping unchanged ones); returns how many were skipped."""
        bufs = rset.buffers
        last = rset.last_inputs
        skipped = 0
        for b in job.binds:
            d = b.data
            if d is None:
                continue
            buf = bufs[b.index]
            small = not b.output and d.nbytes <= SKIP_UNCHANGED_MAX
            if small:
                raw = d.tobytes()
                prev = last.get(b.index)
                if prev is not None and prev[0] is buf and prev[1] == raw:
                    skipped += 1
                    continue
                last.pop(b.index, None)
                done.append((rset, b.index, buf, raw))
            writes.append(Write(buf, 0, d))
        return skipped

    def _finish(self, jobs: list[Job], done: list[Done]) -> None:
        """After a successful submission: remember what the buffers hold, count uses, return orphans."""
        for rset, index, buf, raw in done:
            rset.last_inputs[index] = (buf, raw)
        self._stats.bump("dispatches", len(jobs))
        for job in jobs:
            p = job.compiled
            p.uses += 1
            self._use_clock += 1
            p.last_used = self._use_clock
        self._return_orphans(jobs)

    def _forget(self, jobs: list[Job], rsets: list[ResourceSet]) -> None:
        """After a failure: the buffers' contents are unknown."""
        self._return_orphans(jobs)
        for r in rsets:
            r.last_inputs.clear()
        for job in jobs:
            job.static = None

    def _return_orphans(self, jobs: list[Job]) -> None:
        """Give back the buffers of pipelines that left the cache while their job ran (evicted or
        invalidated meanwhile): nothing else would ever return them to the pool."""
        cache = self._store.cache
        for job in jobs:
            p = job.compiled
            if cache.get(p.key) is not p:
                p.release_resources(self.pool)

    # ---- resources --------------------------------------------------------------------------------
    def _ensure_resources(self, job: Job, rset: ResourceSet) -> None:
        """Give every binding of ``job`` a large enough pooled buffer; rebuild bind groups on change."""
        bufs = rset.buffers
        top = 1 + max((b.index for b in job.binds), default=-1)
        if len(bufs) < top:
            bufs.extend([None] * (top - len(bufs)))
        name = job.compiled.program_name
        limits = self._dev.limits
        pool = self.pool
        for b in job.binds:
            cur = bufs[b.index]
            if cur is not None and cur.size >= max(16, align(b.nbytes, 16)):
                continue
            if cur is not None:
                pool.release(cur)
                bufs[b.index] = None
            if b.uniform:
                cap = int(limits.get("max-uniform-buffer-binding-size", 65536))
            else:
                cap = int(limits["max-storage-buffer-binding-size"])
            bufs[b.index] = pool.acquire("uniform" if b.uniform else "storage", b.nbytes, cap,
                                         label=f"{name}.{b.index}")
        rset.params = None if job.words is None else self._bindings.params(job.words)
        sizes = tuple(max(4, align(b.nbytes, 4)) for b in job.binds) if job.exact else None
        # the same buffer objects (and bound sizes) as when the bind groups were last built: nothing to do
        signature = (tuple(bufs), rset.params, sizes)
        if rset.bound == signature:
            return
        rset.bound = None
        self._bind_groups(job, rset, sizes)
        rset.bound = signature

    def _bind_groups(self, job: Job, rset: ResourceSet, sizes: tuple[int, ...] | None) -> None:
        """Rebuild the bind groups whose buffers (or bound sizes) changed."""
        compiled = job.compiled
        by_index = {b.index: size for b, size in zip(job.binds, sizes)} if sizes is not None else None
        size_of = (lambda k, buf: by_index[k]) if by_index is not None else None
        n_groups = len(compiled.groups)
        if len(rset.bind_groups) != n_groups:
            rset.bind_groups = [None] * n_groups
            rset.bind_key = (None,) * n_groups
        keys = list(rset.bind_key)
        for g in range(n_groups):
            # the key holds the buffer objects, so their ids cannot be reused meanwhile
            key = group_entries(compiled, g, rset.buffers, rset.params, size_of, self._bindings.trap())
            if rset.bind_groups[g] is not None and keys[g] == key:
                continue
            cache = rset.group_cache
            group = cache.get((g, key))
            if group is None:
                group = self._bindings.bind_group(compiled, g, key, compiled.program_name)
                if len(cache) >= GROUPS_KEPT:
                    del cache[next(iter(cache))]
                cache[(g, key)] = group
            rset.bind_groups[g] = group
            keys[g] = key
            rset.bind_key = tuple(keys)

    def _trim_pool(self, keep: set[int]) -> None:
        """Over the pool's cap: destroy free buffers, then return the buffers of the least recently used
        pipelines (except those in ``keep``, the current submission's) and destroy those."""
        pool = self.pool
        if pool.bytes <= pool.cap_bytes:
            return
        pool.trim()
        if pool.bytes <= pool.cap_bytes:
            return
        for p in sorted(self._store.cache.pipelines.values(), key=lambda p: p.last_used):
            if id(p) in keep or not p.nbytes():
                continue
            p.release_resources(pool)
            self._stats.bump("pool_releases")
            pool.trim()
            if pool.bytes <= pool.cap_bytes:
                break


def _static(job: Job, rset: ResourceSet) -> tuple[Pass, list[Read]]:
    """The clears, the dispatch and the reads of ``job`` on ``rset`` (fixed while its bind groups are)."""
    bufs = rset.buffers
    clears = [(bufs[b.index], 0, max(4, align(b.nbytes, 4))) for b in job.binds if b.clear]
    x, y, z = job.workgroups
    dispatch = Dispatch(job.compiled.pipeline, tuple(rset.bind_groups), job.workgroups, x * y * z)
    to_host = job.to_host
    reads = [Read(bufs[b.index], 0, b.nbytes, convert=partial(_output, to_host, k)) for k, b in enumerate(job.outputs)]
    return Pass([dispatch], clears), reads


def _output(to_host: Callable[[int, np.ndarray], np.ndarray], k: int, view: np.ndarray) -> np.ndarray:
    return to_host(k, view)


def _split(jobs: list[Job], results: list[np.ndarray]) -> list[list[np.ndarray]]:
    if len(jobs) == 1:
        return [results]
    out: list[list[np.ndarray]] = []
    pos = 0
    for job in jobs:
        n = len(job.outputs)
        out.append(results[pos:pos + n])
        pos += n
    return out


__all__ = ["Bind", "Job", "JobRunner", "job_from_step", "SKIP_UNCHANGED_MAX"]
