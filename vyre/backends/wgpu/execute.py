"""Running jobs: one or many (pipeline, buffers, grid) in a single submission.

A :class:`Job` is what a dispatch, one element of a batch, or a raw WGSL dispatch needs on
the GPU: its compiled pipeline, its bindings (bytes to upload, bytes to zero, outputs to
read back), the hidden params words and the workgroup counts. :meth:`ExecutorMixin._run_jobs`
gives each job a :class:`~.transfer.ResourceSet` of its pipeline (job slot k for the k-th job
of that pipeline in the submission), takes missing buffers from the pool, and then encodes:

    uploads (queue.write_buffer, or one mapped staging buffer for large inputs)
    → one command encoder: staging copies, clears of write-only outputs,
      one compute pass holding every job's dispatch, the copies of every output into the
      one MAP_READ readback buffer → one submit → one map → numpy.

Called under the backend's lock. Every wgpu exception is translated into a vyre error.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from ...errors import DeviceLostError
from ...ir.types import Access
from ..host import DispatchPlan, params_words, storage_to_host
from .device import translate_error
from .native import NativeEncoder, native_for
from .pipelines import CompiledPipeline
from .transfer import ALIGN, ResourceSet, align, as_bytes4


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
    to_host: Callable[[int, memoryview], np.ndarray]  # (output number, raw bytes) -> host array
    words: np.ndarray | None = None  # the hidden params uniform (None: the shader has none)
    exact: bool = False  # bind exactly nbytes (raw WGSL may use arrayLength) instead of the whole buffer
    label: str = "vyre"
    reuse: bool = False  # run again with new input data (a remembered repeat dispatch): keep it `prepared`
    prepared: "Prepared | None" = None
    outputs: list[Bind] = field(init=False)

    def __post_init__(self):
        self.outputs = [b for b in self.binds if b.output]

    @property
    def in_bytes(self) -> int:
        return sum(b.data.nbytes for b in self.binds if b.data is not None)

    @property
    def out_bytes(self) -> int:
        return sum(align(b.nbytes, ALIGN) for b in self.outputs)


@dataclass(slots=True)
class Prepared:
    """A reused single job in encoded form (wgpu-native handles): everything but the input data. Valid while
    its job slot's buffers and bind groups (``rset.bound``) and the readback buffer are the ones it was made
    from; ``keep`` holds the objects whose handles it uses."""

    rset: ResourceSet
    bound: object
    readback: object
    keep: tuple
    writes: tuple  # (bind, buffer handle) of each bind that had data
    params: object  # params buffer handle (None: no params)
    clears: tuple  # (buffer handle, bytes)
    pipeline: object
    groups: tuple  # bind group handles, by group number
    copies: tuple  # (buffer handle, readback offset, bytes)
    outputs: tuple  # (output number, readback offset, bytes)
    total_in: int
    total_out: int
    read_back: int


#: Read-only inputs up to this size are compared with what their buffer last received, and not written again
#: when equal (constant weights, scalars, tables: the buffer is this job slot's alone and the shader cannot
#: write a read-only binding, so it still holds them).
SKIP_UNCHANGED_MAX = 64 << 10


def unchanged_input(rset: ResourceSet, b: Bind, buf, d) -> bool:
    """``d`` is what read-only binding ``b`` of ``rset`` last received in this very buffer."""
    if b.output or d.nbytes > SKIP_UNCHANGED_MAX:
        return False
    last = rset.last_inputs.get(b.index)
    return last is not None and last[0] is buf and last[1] == d.tobytes()


def remember_input(rset: ResourceSet, b: Bind, buf, d) -> None:
    """Record what ``buf`` received (after the write was issued)."""
    if b.output or d.nbytes > SKIP_UNCHANGED_MAX:
        return
    rset.last_inputs[b.index] = (buf, d.tobytes())


def job_from_plan(compiled: CompiledPipeline, plan: DispatchPlan, workgroups, label: str) -> Job:
    """The job of a planned program dispatch."""
    binds = []
    outs = []
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

    def to_host(k: int, raw) -> np.ndarray:
        return storage_to_host(outs[k].decl, raw, outs[k].count)

    return Job(compiled=compiled, binds=binds, workgroups=tuple(workgroups), to_host=to_host,
               words=params_words(plan), label=label)


class ExecutorMixin:
    """The encode/submit/readback half of WgpuBackend (needs _device, _queue, _staging, _pool, _stats...)."""

    #: Inputs of one submission totalling more bytes than this go through the mapped staging
    #: buffer; smaller ones use queue.write_buffer (cheaper than a map round trip).
    upload_map_threshold = 512 << 10
    #: With the mapped path on, buffers smaller than this still use queue.write_buffer.
    upload_small_buffer = 64 << 10

    def _run_jobs(self, jobs: list[Job]) -> list[list[np.ndarray]]:
        """Run ``jobs`` in one submission; one list of outputs per job. Caller holds the lock."""
        if len(jobs) == 1 and jobs[0].prepared is not None:
            out = self._run_prepared(jobs[0])
            if out is not None:
                return out
        rsets: list[ResourceSet] = []
        try:
            slots: dict[int, int] = {}
            for job in jobs:
                k = slots.get(id(job.compiled), 0)
                slots[id(job.compiled)] = k + 1
                rset = job.compiled.resource_set(k)
                rsets.append(rset)
                self._ensure_resources(job, rset)
            self._trim_pool(keep={id(j.compiled) for j in jobs})
            results = self._submit(jobs, rsets)
            self._return_orphans(jobs)
        except BaseException as exc:
            self._job_failure(jobs, rsets, exc)
        if len(jobs) == 1 and jobs[0].reuse:
            jobs[0].prepared = self._prepare_job(jobs[0], rsets[0])
        return results

    def _job_failure(self, jobs: list[Job], rsets: list[ResourceSet], exc: BaseException):
        """Clean up after a failed submission and raise ``exc`` as a vyre error."""
        self._return_orphans(jobs)
        self._staging.reset()  # a failure (or ^C) may have left a staging buffer mapped
        for r in rsets:
            r.last_words = None
            r.last_inputs.clear()
        for job in jobs:
            job.prepared = None
        if not isinstance(exc, Exception):
            raise exc
        one = jobs[0].compiled if len(jobs) == 1 else None
        err = translate_error(exc, stage="dispatch", wgsl=one.wgsl if one else None,
                              program=one.program_name if one else None)
        if isinstance(err, DeviceLostError):
            self._mark_lost()
        if err is exc:
            raise exc
        raise err from exc

    def _prepare_job(self, job: Job, rset: ResourceSet) -> Prepared | None:
        """The :class:`Prepared` form of ``job`` after it ran on ``rset`` (None: it needs the general path)."""
        rb = self._staging.readback
        total_in = sum(b.data.nbytes for b in job.binds if b.data is not None)
        if (native_for(self._device, self._queue) is None or rset.bound is None or job.exact
                or total_in > self.upload_map_threshold or job.compiled.rsets[0] is not rset):
            return None
        bufs = rset.buffers
        writes = tuple((b, bufs[b.index]._internal) for b in job.binds if b.data is not None)
        clears = tuple((bufs[b.index]._internal, max(4, align(b.nbytes, 4))) for b in job.binds if b.clear)
        copies, outputs, off = [], [], 0
        for k, b in enumerate(job.outputs):
            if b.nbytes:
                copies.append((bufs[b.index]._internal, off, b.nbytes))
            outputs.append((k, off, b.nbytes))
            off += align(b.nbytes, ALIGN)
        if off and (rb is None or rb.size < off):
            return None
        params = rset.params._internal if job.words is not None and rset.params is not None else None
        if job.words is not None and params is None:
            return None
        keep = (tuple(bufs), rset.params, tuple(rset.bind_groups), job.compiled.pipeline, rb)
        return Prepared(rset=rset, bound=rset.bound, readback=rb, keep=keep, writes=writes, params=params,
                        clears=clears, pipeline=job.compiled.pipeline._internal,
                        groups=tuple(bg._internal for bg in rset.bind_groups), copies=tuple(copies),
                        outputs=tuple(outputs), total_in=total_in, total_out=off,
                        read_back=sum(b.nbytes for b in job.outputs))

    def _encode_prepared(self, nat, job: Job, prep: Prepared):
        """The writes and the encoder of a prepared job; returns (writes made, writes skipped, finished command
        buffer handle).
        Runs inside a ``nat.checked()`` region."""
        write, from_buffer, q, null = nat.write, nat.from_buffer, self._queue._internal, nat.null
        rset = prep.rset
        n_writes = skipped = 0
        bufs = rset.buffers
        for b, handle in prep.writes:
            d = b.data
            if d is not None:
                buf = bufs[b.index]
                if unchanged_input(rset, b, buf, d):
                    skipped += 1
                    continue
                write(q, handle, 0, from_buffer(d), d.nbytes)
                remember_input(rset, b, buf, d)
                n_writes += 1
        words = job.words
        if words is not None:
            key = words.tobytes()
            if rset.last_words != key:
                rset.last_words = None
                write(q, prep.params, 0, from_buffer(words), words.nbytes)
                rset.last_words = key
        desc = nat.descriptors(job.label)
        enc = nat.create_encoder(self._device._internal, desc[0])
        try:
            for handle, size in prep.clears:
                nat.clear(enc, handle, 0, size)
            cpass = nat.begin_pass(enc, desc[1])
            try:
                nat.set_pipeline(cpass, prep.pipeline)
                for g, bg in enumerate(prep.groups):
                    nat.set_bind_group(cpass, g, bg, 0, null)
                x, y, z = job.workgroups
                nat.dispatch(cpass, x, y, z)
                nat.end_pass(cpass)
            finally:
                nat.release_pass(cpass)
            rb = prep.readback._internal
            for handle, off, n in prep.copies:
                nat.copy(enc, handle, 0, rb, off, n)
            return n_writes, skipped, nat.finish(enc, desc[2])
        finally:
            nat.release_encoder(enc)

    def _run_prepared(self, job: Job) -> list[list[np.ndarray]] | None:
        """Run a :class:`Prepared` job: the general path's calls for one job, straight through wgpu-native.
        None (nothing done) when it went stale."""
        prep = job.prepared
        rset = prep.rset
        nat = native_for(self._device, self._queue)
        if (nat is None or rset.bound is not prep.bound or self._staging.readback is not prep.readback
                or job.compiled.rsets[0] is not rset or prep.total_in > self.upload_map_threshold):
            job.prepared = None
            return None
        try:
            self._trim_pool(keep={id(job.compiled)})
            if rset.bound is not prep.bound:  # the trim took this job's buffers
                job.prepared = None
                return None
            words = job.words
            commands = None
            try:
                with nat.checked():  # direct calls: a wgpu error they reported is raised at the end of the block
                    n_writes, skipped, commands = self._encode_prepared(nat, job, prep)
            except BaseException:
                if commands is not None:
                    nat.release_commands(commands)
                raise
            q = self._queue._internal
            with nat.checked():
                try:
                    nat.submit(q, 1, nat.ffi.new("WGPUCommandBuffer[1]", [commands]))
                finally:
                    nat.release_commands(commands)
            stats = self._stats
            stats.bump("uploads_direct", n_writes)
            stats.bump("uploads_skipped", skipped)
            stats.bump("uploads_mapped", 0)
            stats.bump("bytes_uploaded", prep.total_in + (words.nbytes if words is not None else 0))
            stats.bump("dispatches")
            stats.bump("submits")
            job.compiled.uses += 1
            self._use_clock += 1
            job.compiled.last_used = self._use_clock
            if not prep.total_out:
                self._wait_idle()
                results = [[job.to_host(k, b"") for k, _, _ in prep.outputs]]
            else:
                staging = self._staging
                rb = staging.map_readback(prep.total_out)
                try:
                    mem = staging.mapped_view(rb, prep.total_out)
                    outs = []
                    for k, off, n in prep.outputs:
                        if not n:
                            mv = b""
                        elif mem is not None:
                            mv = mem[off:off + n]
                        else:
                            mv = rb.read_mapped(off, n, copy=False)
                        outs.append(job.to_host(k, mv))  # copies: the mapping goes away below
                        del mv
                    del mem
                finally:
                    staging.unmap(rb)
                stats.bump("bytes_read_back", prep.read_back)
                results = [outs]
            self._return_orphans([job])
            return results
        except BaseException as exc:
            self._job_failure([job], [rset], exc)

    def _return_orphans(self, jobs: list[Job]) -> None:
        """Give back the buffers of pipelines that left the cache while their job ran (evicted or
        invalidated meanwhile): nothing else would ever return them to the pool."""
        for job in jobs:
            p = job.compiled
            if self._cache.get(p.key) is not p:
                p.release_resources(self._pool)

    def _ensure_resources(self, job: Job, rset: ResourceSet) -> None:
        """Give every binding of ``job`` a large enough pooled buffer; rebuild bind groups on change."""
        bufs = rset.buffers
        top = 1 + max((b.index for b in job.binds), default=-1)
        if len(bufs) < top:
            bufs.extend([None] * (top - len(bufs)))
        name = job.compiled.program_name
        for b in job.binds:
            cur = bufs[b.index]
            if cur is not None and cur.size >= max(16, align(b.nbytes, 16)):
                continue
            pool = self._pool
            if cur is not None:
                pool.release(cur)
                bufs[b.index] = None
            if b.uniform:
                cap = int(self._limits.get("max-uniform-buffer-binding-size", 65536))
            else:
                cap = int(self._limits["max-storage-buffer-binding-size"])
            bufs[b.index] = pool.acquire("uniform" if b.uniform else "storage", b.nbytes, cap,
                                         label=f"{name}.{b.index}")
        if job.words is not None and (rset.params is None or rset.params.size < job.words.nbytes):
            pool = self._pool
            if rset.params is not None:
                pool.release(rset.params)
                rset.params = None
            rset.params = pool.acquire("uniform", job.words.nbytes,
                                       int(self._limits.get("max-uniform-buffer-binding-size", 65536)),
                                       label=f"{name}._vyre")
            rset.last_words = None
        sizes = tuple(max(4, align(b.nbytes, 4)) for b in job.binds) if job.exact else None
        # the same buffer objects (and bound sizes) as when the bind groups were last built: nothing to do
        signature = (tuple(bufs), rset.params, sizes)
        if rset.bound == signature:
            return
        rset.bound = None
        sizes = {b.index: size for b, size in zip(job.binds, sizes)} if sizes is not None else None
        n_groups = len(job.compiled.groups)
        if len(rset.bind_groups) != n_groups:
            rset.bind_groups = [None] * n_groups
            rset.bind_key = (None,) * n_groups
        keys = list(rset.bind_key)
        for g, slots in enumerate(job.compiled.groups):  # rebuild only the groups whose buffers changed
            entries = []
            for s in slots:
                buf = rset.params if s.index < 0 else bufs[s.index]
                size = sizes[s.index] if sizes else buf.size
                entries.append((s.binding, buf, size))
            key = tuple(entries)  # holds the buffer objects, so their ids cannot be reused meanwhile
            if rset.bind_groups[g] is not None and keys[g] == key:
                continue
            rset.bind_groups[g] = self._device.create_bind_group(
                label=f"{name}:g{g}", layout=job.compiled.group_layouts[g],
                entries=[{"binding": b, "resource": {"buffer": buf, "offset": 0, "size": size}}
                         for b, buf, size in entries])
            self._stats.bump("bind_groups_created")
            keys[g] = key
            rset.bind_key = tuple(keys)
        rset.bound = signature

    def _trim_pool(self, keep: set) -> None:
        """Over the pool's cap: destroy free buffers, then return the buffers of the least recently used
        pipelines (except those in ``keep``, the current submission's) and destroy those."""
        pool = self._pool
        if pool.bytes <= pool.cap_bytes:
            return
        pool.trim()
        if pool.bytes <= pool.cap_bytes:
            return
        for p in sorted(self._cache.pipelines.values(), key=lambda p: p.last_used):
            if id(p) in keep or not p.nbytes():
                continue
            p.release_resources(pool)
            self._stats.bump("pool_releases")
            pool.trim()
            if pool.bytes <= pool.cap_bytes:
                break

    def _upload(self, jobs: list[Job], rsets: list[ResourceSet], encoder, nat=None) -> None:
        """Inputs: small ones by queue.write_buffer, large ones through the mapped staging buffer (copied
        inside ``encoder``); then the params words that changed. ``nat``: write through wgpu-native."""
        queue = self._queue
        if nat is not None:  # inside the caller's nat.checked() region
            qh, write, from_buffer = queue._internal, nat.write, nat.from_buffer

            def write_buffer(buf, _offset, d):
                write(qh, buf._internal, 0, from_buffer(d), d.nbytes)
        else:
            write_buffer = queue.write_buffer
        items = [(rset.buffers[b.index], b.data, b, rset) for job, rset in zip(jobs, rsets) for b in job.binds
                 if b.data is not None]
        total_in = sum(it[1].nbytes for it in items)
        mapped = []
        direct = items
        if total_in > self.upload_map_threshold:
            mapped = [it for it in items if it[1].nbytes >= self.upload_small_buffer]
            direct = [it for it in items if it[1].nbytes < self.upload_small_buffer]
        skipped = 0
        for buf, d, b, rset in direct:
            if unchanged_input(rset, b, buf, d):
                skipped += 1
                continue
            write_buffer(buf, 0, d)
            remember_input(rset, b, buf, d)
        for _, _, b, rset in mapped:
            rset.last_inputs.pop(b.index, None)
        self._stats.bump("uploads_direct", len(direct) - skipped)
        self._stats.bump("uploads_skipped", skipped)
        self._stats.bump("uploads_mapped", len(mapped))
        words_bytes = 0
        for job, rset in zip(jobs, rsets):
            w = job.words
            if w is None:
                continue
            words_bytes += w.nbytes
            key = w.tobytes()
            if rset.last_words != key:
                rset.last_words = None
                write_buffer(rset.params, 0, w)
                rset.last_words = key
        if mapped:
            need = sum(align(it[1].nbytes, ALIGN) for it in mapped)
            st = self._staging.map_upload(need)
            copies, off = [], 0
            try:
                for buf, d, _, _ in mapped:
                    st.write_mapped(d, off)
                    copies.append((off, buf, d.nbytes))
                    off += align(d.nbytes, ALIGN)
            finally:
                st.unmap()
            for off, buf, n in copies:
                encoder.copy_buffer_to_buffer(st, off, buf, 0, n)
        self._stats.bump("bytes_uploaded", total_in + words_bytes)

    def _submit(self, jobs: list[Job], rsets: list[ResourceSet]) -> list[list[np.ndarray]]:
        label = jobs[0].label if len(jobs) == 1 else f"vyre:batch[{len(jobs)}]"
        nat = native_for(self._device, self._queue)
        if nat is None:
            encoder = self._device.create_command_encoder(label=label)
            total_out, offsets = self._encode(jobs, rsets, label, encoder, None)
            self._queue.submit([encoder.finish()])
        else:
            with nat.checked():  # direct calls: a wgpu error they reported is raised at the end of the block
                encoder = NativeEncoder(nat, self._device, label)
                try:
                    total_out, offsets = self._encode(jobs, rsets, label, encoder, nat)
                    commands = encoder.finish()
                finally:
                    encoder.release()
            with nat.checked():
                commands.submit(self._queue)
        self._stats.bump("dispatches", len(jobs))
        self._stats.bump("submits")
        for job in jobs:
            job.compiled.uses += 1
            self._use_clock += 1
            job.compiled.last_used = self._use_clock
        return self._read_results(jobs, total_out, offsets)

    def _encode(self, jobs, rsets, label, encoder, nat) -> tuple[int, list[list[int]]]:
        """Uploads, clears, the pass and the copies of the outputs into the readback buffer.
        Returns (readback bytes, each job's output offsets in it)."""
        self._upload(jobs, rsets, encoder, nat)
        for job, rset in zip(jobs, rsets):
            for b in job.binds:
                if b.clear:  # write-only: zero-initialised (the pooled buffer holds old data)
                    encoder.clear_buffer(rset.buffers[b.index], 0, max(4, align(b.nbytes, 4)))
        cpass = encoder.begin_compute_pass(label=label)
        current = None
        for job, rset in zip(jobs, rsets):
            if job.compiled.pipeline is not current:
                current = job.compiled.pipeline
                cpass.set_pipeline(current)
            for g, bg in enumerate(rset.bind_groups):
                cpass.set_bind_group(g, bg)
            cpass.dispatch_workgroups(*job.workgroups)
        cpass.end()

        total_out = sum(job.out_bytes for job in jobs)
        offsets: list[list[int]] = []
        if total_out:
            rb = self._staging.ensure_readback(total_out)
            off = 0
            for job, rset in zip(jobs, rsets):
                offs = []
                for b in job.outputs:
                    if b.nbytes:
                        encoder.copy_buffer_to_buffer(rset.buffers[b.index], 0, rb, off, b.nbytes)
                    offs.append(off)
                    off += align(b.nbytes, ALIGN)
                offsets.append(offs)
        return total_out, offsets

    def _read_results(self, jobs, total_out: int, offsets) -> list[list[np.ndarray]]:
        """Wait for the submission and turn the readback buffer's bytes into each job's outputs."""
        if not total_out:
            self._wait_idle()
            return [[job.to_host(k, b"") for k in range(len(job.outputs))] for job in jobs]
        rb = self._staging.map_readback(total_out)
        results = []
        try:
            mem = self._staging.mapped_view(rb, total_out)  # one view of everything (None: per output)
            for job, offs in zip(jobs, offsets):
                outs = []
                for k, (b, off) in enumerate(zip(job.outputs, offs)):
                    if not b.nbytes:
                        mv = b""
                    elif mem is not None:
                        mv = mem[off:off + b.nbytes]
                    else:
                        mv = rb.read_mapped(off, b.nbytes, copy=False)
                    outs.append(job.to_host(k, mv))  # copies: the mapping goes away below
                    del mv
                results.append(outs)
            del mem
        finally:
            self._staging.unmap(rb)
        self._stats.bump("bytes_read_back", sum(b.nbytes for job in jobs for b in job.outputs))
        return results

    def _wait_idle(self) -> None:
        """Wait for submitted work (``on_submitted_work_done_sync`` is broken in wgpu-py 0.32). With wgpu-native:
        one blocking device poll (it returns when the queue is empty). Otherwise clear a few bytes of the
        readback buffer in a new submission and map it (mapping waits for that submission)."""
        nat = native_for(self._device, self._queue)
        if nat is not None:
            handle, poll, null = self._device._internal, nat.poll, nat.null
            with nat.checked():
                nat.wait(self._device, lambda: poll(handle, 0, null), self._staging.spin_s)
            return
        rb = self._staging.ensure_readback(16)
        enc = self._device.create_command_encoder(label="vyre-fence")
        enc.clear_buffer(rb, 0, 16)
        self._queue.submit([enc.finish()])
        self._staging.map_readback(16)
        rb.unmap()


__all__ = ["Bind", "Job", "job_from_plan", "ExecutorMixin"]
