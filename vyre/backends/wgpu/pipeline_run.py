"""``run_pipeline``: an op pipeline (:class:`vyre.backends.schedule.Pipeline`) run on the device as one Work.

Every pipeline buffer lives in a resident buffer, kept per pipeline shape (buffer names,
dtypes, counts) so repeated calls allocate nothing; the checked steps (their bind groups and
the passes split by clears) are kept per pipeline object, so a repeated call only converts
its inputs and runs. One submission holds the input writes, zeroing of every other buffer,
all steps in compute passes and the copies of the outputs (one readback, converted while
mapped). The host semantics of ``vyre.backends.schedule.run_pipeline`` are kept exactly:
buffers that are not inputs start at zero, and a step's ``write`` buffer is zero-initialised
when an earlier step (or the input) left data in it, which splits the pass there (clears
cannot go inside a pass).

The pipeline is duck-typed (``buffers``, ``inputs``, ``outputs``, ``steps``,
``output_shapes``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...errors import DispatchError
from ...ir.program import BufferDecl
from ...ir.types import Access
from ..config import DispatchConfig
from ..handles import ResidentHandle
from ..host import host_to_storage, pipeline_input, storage_nbytes, storage_to_host
from ..schedule import BufferSpec, Pipeline
from .device import Device
from .executor import Executor
from .resident import PipelineShape, ResidentState, ResidentStore, _pad4
from .types import GPUBuffer
from .work import Dispatch, Pass, Read, Work, Write

SCHEDULE_CAP = 64
#: Inputs up to this size are compared with what their buffer last received from an op pipeline and not
#: written again when equal (and no step writes that buffer): constant weights, tables and scalars.
SKIP_UNCHANGED_MAX = 64 << 10


def _decl(name: str, spec: BufferSpec, access: Access) -> BufferDecl:
    return BufferDecl(name=name, binding=0, dtype=spec.dtype, access=access, count=spec.count)


@dataclass
class Schedule:
    """A pipeline checked on the device: its buffers, passes and reads."""

    pipeline: Pipeline
    shape: PipelineShape
    handles: dict[str, ResidentHandle]
    inputs: list[tuple[GPUBuffer, BufferDecl]]  # (buffer, BufferDecl) per pipeline input
    passes: list[Pass]
    reads: list[Read]
    input_ids: list[int]  # handle id per pipeline input
    written: frozenset[int]  # ids of the handles some step writes (their contents are never assumed)
    volatile: tuple[int, ...]  # ids of every handle this pipeline may change (written or cleared): forgotten each run


class OpPipelines:
    """Runs op pipelines over resident buffers (see the module docstring)."""

    #: Pipeline shapes whose resident buffers are kept (least recently used ones are freed).
    shape_cap = 8

    def __init__(self, dev: Device, resident: ResidentStore, executor: Executor) -> None:
        self._dev = dev
        self._resident = resident
        self._ex = executor

    def run(self, pipeline: Pipeline, inputs: Any) -> list[np.ndarray]:
        if isinstance(inputs, Mapping):
            missing = [n for n in pipeline.inputs if n not in inputs]
            if missing:
                raise DispatchError(f"{pipeline.name}: missing input(s) {missing}")
            inputs = [inputs[n] for n in pipeline.inputs]
        if isinstance(inputs, np.ndarray) or len(inputs) != len(pipeline.inputs):
            got = 1 if isinstance(inputs, np.ndarray) else len(inputs)
            raise DispatchError(f"{pipeline.name} takes {len(pipeline.inputs)} input(s) "
                                f"({', '.join(pipeline.inputs)}), got {got}",
                                fix="pass a list with one array per pipeline input")
        with self._dev.lock:
            st = self._resident.state()
            sched = self._cached(st, pipeline)
            decls = ([d for _, d in sched.inputs] if sched is not None
                     else [_decl(n, pipeline.buffers[n], Access.READ) for n in pipeline.inputs])
            staged: list[np.ndarray] = []  # every input checked before the first call's buffers are made
            for decl, value in zip(decls, inputs):
                data, _ = host_to_storage(decl, pipeline_input(decl.dtype, value))
                staged.append(_pad4(data.reshape(-1).view(np.uint8)))
            if sched is None:
                sched = self._schedule(st, pipeline)
            writes, keep = self._writes(st, sched, staged)
            work = Work(label=f"vyre-pipeline:{pipeline.name}", writes=writes, passes=sched.passes,
                        reads=sched.reads, program=pipeline.name)
            try:
                outs = self._ex.run(work)
            except BaseException:
                for hid in (*sched.input_ids, *sched.written):
                    st.contents.pop(hid, None)
                raise
            for hid in sched.volatile:  # handles are shared by pipelines of one shape: forget what this one changed
                st.contents.pop(hid, None)
            st.contents.update(keep)
            self._resident._stats.bump("resident_dispatches", work.dispatches)
            return outs

    def _writes(self, st: ResidentState, sched: Schedule, staged: list[np.ndarray]
                ) -> tuple[list[Write], dict[int, bytes]]:
        """The input writes, leaving out small inputs their buffer already holds; and what to remember after."""
        contents = st.contents
        writes: list[Write] = []
        keep: dict[int, bytes] = {}
        skipped = 0
        for (buf, _), hid, d in zip(sched.inputs, sched.input_ids, staged):
            if not d.nbytes:
                continue
            if hid not in sched.written and d.nbytes <= SKIP_UNCHANGED_MAX:
                raw = d.tobytes()
                if contents.get(hid) == raw:
                    skipped += 1
                    continue
                contents.pop(hid, None)
                keep[hid] = raw
            writes.append(Write(buf, 0, d))
        if skipped:
            self._resident._stats.bump("uploads_skipped", skipped)
        return writes, keep

    @staticmethod
    def _cached(st: ResidentState, pipeline: Pipeline) -> Schedule | None:
        hit = st.schedules.get(id(pipeline))
        if hit is not None and hit.pipeline is pipeline and st.pipelines.get(hit.shape) is hit.handles:
            st.schedules.move_to_end(id(pipeline))
            return hit
        return None

    def _schedule(self, st: ResidentState, pipeline: Pipeline) -> Schedule:
        shape, handles = self._handles(st, pipeline)
        bufs = {n: self._resident.buffer(st, h, pipeline.name) for n, h in handles.items()}
        written = frozenset(handles[n].id for step in pipeline.steps
                            for d, n in zip(step.program.sorted_buffers, step.bind) if d.access.writable)
        stable = {n for n in pipeline.inputs if handles[n].id not in written}  # inputs no step changes
        sched = Schedule(pipeline, shape, handles,
                         inputs=[(bufs[n], _decl(n, pipeline.buffers[n], Access.READ)) for n in pipeline.inputs],
                         passes=self._passes(st, pipeline, handles, bufs),
                         reads=[self._read(pipeline, n, bufs[n], handles[n].nbytes) for n in pipeline.outputs],
                         input_ids=[handles[n].id for n in pipeline.inputs],
                         written=written,
                         volatile=tuple(h.id for n, h in handles.items() if n not in stable))
        st.schedules[id(pipeline)] = sched
        while len(st.schedules) > SCHEDULE_CAP:
            st.schedules.popitem(last=False)
        return sched

    @staticmethod
    def _read(pipeline: Pipeline, name: str, buf: GPUBuffer, nbytes: int) -> Read:
        spec = pipeline.buffers[name]
        decl = _decl(name, spec, Access.READ_WRITE)
        shape = pipeline.output_shapes.get(name)

        def convert(view: np.ndarray) -> np.ndarray:
            a = storage_to_host(decl, view, spec.count)
            return a.reshape(shape) if shape is not None else a

        return Read(buf, 0, nbytes, convert=convert)

    def _passes(self, st: ResidentState, pipeline: Pipeline, handles: dict[str, ResidentHandle],
                bufs: dict[str, GPUBuffer]) -> list[Pass]:
        """Prepare every step; group them into passes separated by the clears host semantics need."""
        dirty = set(pipeline.inputs)  # buffers holding data (not all zero) at this point
        clears = [(bufs[n], 0, handles[n].nbytes) for n in pipeline.buffers if n not in dirty]
        passes: list[Pass] = []
        steps: list[Dispatch] = []
        for k, step in enumerate(pipeline.steps):
            decls = step.program.sorted_buffers
            if len(decls) != len(step.bind):
                raise DispatchError(f"{pipeline.name} step {k}: program {step.program.name!r} has {len(decls)} "
                                    f"buffer(s), the step binds {len(step.bind)}")
            unknown = [n for n in step.bind if n not in handles]
            if unknown:
                raise DispatchError(f"{pipeline.name} step {k} binds unknown buffer(s) {unknown}")
            counts = {d.name: pipeline.buffers[n].count for d, n in zip(decls, step.bind) if d.count is None}
            config = DispatchConfig(grid=step.grid, counts=counts)
            prepared = self._resident.step(st, step.program, [handles[n] for n in step.bind], config,
                                           f"{pipeline.name} step {k}")
            stale = list(dict.fromkeys(n for d, n in zip(decls, step.bind) if d.access is Access.WRITE and n in dirty))
            if stale:
                passes.append(Pass(steps, clears))
                clears, steps = [(bufs[n], 0, handles[n].nbytes) for n in stale], []
                dirty.difference_update(stale)
            steps.append(prepared)
            if prepared.total:
                dirty.update(n for d, n in zip(decls, step.bind) if d.access.writable)
        passes.append(Pass(steps, clears))
        return passes

    def _handles(self, st: ResidentState, pipeline: Pipeline) -> tuple[PipelineShape, dict[str, ResidentHandle]]:
        """Resident buffers for every pipeline buffer, shared by calls with the same shape."""
        key = tuple(sorted((n, s.dtype.value, int(s.count)) for n, s in pipeline.buffers.items()))
        hit = st.pipelines.get(key)
        if hit is not None:
            st.pipelines.move_to_end(key)
            return key, hit
        handles: dict[str, ResidentHandle] = {}
        resident = self._resident
        try:
            for name, spec in pipeline.buffers.items():
                handles[name] = resident.allocate(storage_nbytes(spec.dtype, spec.count),
                                                  label=f"vyre-pipeline:{pipeline.name}.{name}")
        except BaseException:
            for h in handles.values():
                resident.free(h)
            raise
        st.pipelines[key] = handles
        while len(st.pipelines) > self.shape_cap:
            _, old = st.pipelines.popitem(last=False)
            for h in old.values():
                resident.free(h)
        return key, handles


__all__ = ["OpPipelines"]
