"""Program dispatches with host data: ``dispatch``, ``dispatch_compiled``, ``dispatch_timed`` and ``dispatch_batch``.

Each plans (every input check, no GPU work: :func:`~vyre.backends.planning.plan_step`), gets its
pipeline from the store, and runs :class:`~.jobs.Job` s through the :class:`~.jobs.JobRunner`.

A dispatch whose inputs are 1-D contiguous arrays of the same dtypes and lengths (and the same
grid, counts and label) as an earlier successful one of the same program reuses that
dispatch's job: the plan is a function of exactly those, so it is skipped, and the job keeps
its pass and reads while its buffers stay the same.

A batch goes in submissions of at most ``batch_max_jobs`` jobs and ``batch_max_bytes`` input
(or output) bytes; if a submission fails on the GPU, its jobs are re-run one by one, so only
the culprit gets the error (unless the device was lost: then all of them do).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

import numpy as np

from ...errors import DeviceLostError, DispatchError, VyreError
from ...ir.program import Program
from ..config import DispatchConfig
from ..host import DispatchPlan, storage_to_host
from ..planning import PlanLimits, Step, plan_step
from .bindings import Bindings
from .device import Device
from .jobs import Bind, Job, JobRunner, job_from_step
from .pipeline_store import PipelineStore
from .pipelines import CompiledPipeline
from .timestamps import TimedDispatch
from .transfer import Stats, as_bytes4

#: Remembered repeat dispatches per backend.
REPEAT_CAPACITY = 256

#: A remembered repeat dispatch: (job, its input binds, the plan limits it was planned under).
Repeat = tuple[Job, list[Bind], PlanLimits]
#: A batch job ready to run: (position, program, step, config, pipeline).
Ready = tuple[int, Program, Step, DispatchConfig | None, CompiledPipeline]
#: A dispatch result of a batch: the outputs, or the VyreError that job raised.
BatchResult = list[np.ndarray] | VyreError


def coerce_config(config: Any) -> DispatchConfig | None:
    """``config`` as a DispatchConfig or None (see DispatchConfig.coerce: an int or a tuple is a grid)."""
    return DispatchConfig.coerce(config)


def _repeat_key(program: Program, inputs: Any, config: DispatchConfig | None) -> tuple[object, ...] | None:
    """(fingerprint, config fields, dtype, length, ...) of a dispatch whose inputs are all 1-D contiguous numpy
    arrays, else None. Planning is a function of the program, the config and these (on one device)."""
    if type(inputs) is not list and type(inputs) is not tuple:
        return None
    fp = program.__dict__.get("fingerprint")  # the cached property, computed by validation
    if fp is None:
        return None
    key: list[object] = [fp]
    if config is not None:
        counts = config.counts
        key.append((config.grid, tuple(sorted(counts.items())) if counts else (), config.label))
    for v in inputs:
        if type(v) is not np.ndarray or v.ndim != 1 or not v.flags.c_contiguous:
            return None
        key.append(v.dtype)
        key.append(v.shape[0])
    return tuple(key)


def _unpack(job: object) -> tuple[Program, Any, Any]:
    if not isinstance(job, (tuple, list)) or len(job) not in (2, 3):
        raise DispatchError(f"a batch job is (program, inputs) or (program, inputs, config), got {type(job).__name__}"
                            + (f" of length {len(job)}" if isinstance(job, (tuple, list)) else ""),
                            fix="pass a list of (program, inputs) or (program, inputs, config) tuples")
    program, inputs = job[0], job[1]
    config = job[2] if len(job) == 3 else None
    if not hasattr(program, "fingerprint") or not hasattr(program, "sorted_buffers"):
        raise DispatchError(f"a batch job's first element must be a vyre Program, got {type(program).__name__}",
                            fix="build programs with vyre.ProgramBuilder")
    return program, inputs, config


def host_outputs(plan: DispatchPlan) -> list[np.ndarray]:
    """Outputs of a dispatch with zero workgroups: write buffers zero, read_write buffers unchanged."""
    outs: list[np.ndarray] = []
    for b in plan.outputs:
        raw = b.data if b.data is not None else np.zeros(b.nbytes, dtype=np.uint8)
        outs.append(storage_to_host(b.decl, raw, b.count))
    return outs


class Dispatcher:
    """Builds and runs the jobs of host-data dispatches (see the module docstring)."""

    #: Most jobs in one submission of dispatch_batch.
    batch_max_jobs = 256
    #: Most input (or output) bytes in one submission of dispatch_batch.
    batch_max_bytes = 256 << 20

    def __init__(self, dev: Device, store: PipelineStore, bindings: Bindings, runner: JobRunner) -> None:
        self._dev = dev
        self._store = store
        self._bindings = bindings
        self.runner = runner
        #: repeat key -> (job, its input binds, the plan limits it was planned under); a job memo (the plan of
        #: a host-data dispatch holds its data, so it is not memoised itself)
        self.repeats: dict[tuple[object, ...], Repeat] = {}

    def forget(self, pipeline: CompiledPipeline | None = None) -> None:
        """Drop remembered jobs (of ``pipeline``, or all)."""
        if pipeline is None:
            self.repeats.clear()
            return
        for k in [k for k, e in self.repeats.items() if e[0].compiled is pipeline]:
            self.repeats.pop(k, None)

    def plan(self, program: Program, inputs: Any, config: DispatchConfig | None) -> Step:
        """Check everything (no GPU work): the step of the dispatch."""
        return plan_step(program, inputs, config, self._bindings.plan_limits())

    # ---- dispatch -----------------------------------------------------------------------------------
    def dispatch(self, program: Program, inputs: Any, config: Any,
                 get_pipeline: Callable[[DispatchConfig | None], CompiledPipeline]) -> list[np.ndarray]:
        """Plan, get the pipeline with ``get_pipeline(config)``, run (reusing a remembered job when it can)."""
        dev = self._dev
        dev.check_alive()
        config = coerce_config(config)
        key = _repeat_key(program, inputs, config)
        compiled = None
        if key is not None:
            entry = self.repeats.get(key)
            if entry is not None and entry[2] is self._bindings.plan_limits():
                compiled = get_pipeline(config)
                if entry[0].compiled is compiled:
                    out = self._run_repeat(entry, inputs)
                    if out is not None:
                        return out
        step = self.plan(program, inputs, config)
        plan = step.plan
        if compiled is None:
            compiled = get_pipeline(config)
        if plan.total_workgroups == 0:
            return host_outputs(plan)
        label = (config.label if config is not None else None) or f"vyre:{program.name}"
        with dev.lock:
            dev.check_alive()
            if compiled.generation != dev.generation:  # built on a device since replaced
                compiled = get_pipeline(config)
            job = job_from_step(compiled, step, label)
            out = self.runner.run([job])[0]
            if key is not None:
                self._remember(key, job, plan, inputs)
            return out

    def _run_repeat(self, entry: Repeat, inputs: Any) -> list[np.ndarray] | None:
        """Run a remembered job with new input data (None: it went stale, plan again)."""
        job, input_binds, _ = entry
        dev = self._dev
        with dev.lock:
            dev.check_alive()
            if job.compiled.generation != dev.generation:
                return None
            try:
                for bind, value in zip(input_binds, inputs):
                    bind.data = as_bytes4(value) if value.nbytes else None
                return self.runner.run([job])[0]
            finally:
                for bind in input_binds:
                    bind.data = None  # hold no caller array

    def _remember(self, key: tuple[object, ...], job: Job, plan: DispatchPlan, inputs: Any) -> None:
        """Keep ``job`` for dispatches with the same key, when its plan took every input array as it is."""
        plans = [b for b in plan.buffers if b.is_input]
        if len(plans) != len(inputs) or any(b.data is not v for b, v in zip(plans, inputs)):
            return  # an input was converted (bool, vec3, non-contiguous...): plan every time
        input_binds = [job.binds[k] for k, b in enumerate(plan.buffers) if b.is_input]
        for bind in input_binds:
            bind.data = None
        job.reuse = True
        repeats = self.repeats
        if len(repeats) >= REPEAT_CAPACITY:
            for k in list(repeats)[: REPEAT_CAPACITY // 2]:
                repeats.pop(k, None)
        repeats[key] = (job, input_binds, self._bindings.plan_limits())

    def timed(self, program: Program, inputs: Any, config: Any) -> TimedDispatch:
        """One dispatch, waited for and timed."""
        dev = self._dev
        dev.check_alive()
        config = coerce_config(config)
        self._store.validate(program)
        step = self.plan(program, inputs, config)
        compiled = self._store.compiled(program, config)
        if step.plan.total_workgroups == 0:
            return TimedDispatch(host_outputs(step.plan), 0, "none", 0)
        label = (config.label if config is not None else None) or f"vyre-timed:{program.name}"
        with dev.lock:
            dev.check_alive()
            if compiled.generation != dev.generation:
                compiled = self._store.compiled(program, config)
            t = self.runner.run_timed(job_from_step(compiled, step, label))
        return TimedDispatch(t.results, t.gpu_ns, t.source, t.wall_ns)

    # ---- batch --------------------------------------------------------------------------------------
    def batch(self, jobs: Iterable[Any], stats: Stats) -> list[BatchResult]:
        """Run independent jobs; one result per job: its outputs, or the VyreError that job raised."""
        dev, store = self._dev, self._store
        dev.check_alive()
        jobs = list(jobs)
        results: list[Any] = [None] * len(jobs)  # each filled below (a BatchResult)
        ready: list[Ready] = []  # (position, program, step, config, pipeline)
        for k, job in enumerate(jobs):
            try:
                program, inputs, config = _unpack(job)
                config = coerce_config(config)
                store.validate(program)
                step = self.plan(program, inputs, config)
                compiled = store.compiled(program, config)
                if step.plan.total_workgroups == 0:
                    results[k] = host_outputs(step.plan)
                    continue
                ready.append((k, program, step, config, compiled))
            except DeviceLostError:
                raise
            except VyreError as exc:
                results[k] = exc
            except Exception as exc:  # noqa: BLE001 - a malformed job (not a program, odd inputs...)
                results[k] = DispatchError(f"batch job {k} is malformed: {type(exc).__name__}: {exc}",
                                           fix="pass (program, inputs) or (program, inputs, config)")
        stats.bump("batches")
        for chunk in self._chunks(ready):
            with dev.lock:
                dev.check_alive()
                self._run_chunk(chunk, results)
        return results

    def _run_chunk(self, chunk: list[Ready], results: list[Any]) -> None:
        dev, store = self._dev, self._store
        built: list[tuple[int, Job]] = []
        for k, program, step, config, compiled in chunk:
            try:
                if compiled.generation != dev.generation:  # built on a device since replaced
                    compiled = store.compiled(program, config)
                label = (config.label if config is not None else None) or f"vyre:{program.name}"
                built.append((k, job_from_step(compiled, step, label)))
            except DeviceLostError:
                raise
            except VyreError as exc:
                results[k] = exc
        if not built:
            return
        try:
            outs = self.runner.run([j for _, j in built])
            for (k, _), out in zip(built, outs):
                results[k] = out
        except DeviceLostError:
            raise
        except VyreError:
            for k, job in built:  # find the culprit: one job per submission
                try:
                    results[k] = self.runner.run([job])[0]
                except DeviceLostError:
                    raise
                except VyreError as exc:
                    results[k] = exc

    def _chunks(self, ready: list[Ready]) -> Iterator[list[Ready]]:
        chunk: list[Ready] = []
        n_in, n_out = 0, 0
        for item in ready:
            plan = item[2].plan
            b_in = sum(b.nbytes for b in plan.buffers if b.data is not None)
            b_out = sum(b.nbytes for b in plan.outputs)
            if chunk and (len(chunk) >= self.batch_max_jobs or n_in + b_in > self.batch_max_bytes
                          or n_out + b_out > self.batch_max_bytes):
                yield chunk
                chunk, n_in, n_out = [], 0, 0
            chunk.append(item)
            n_in += b_in
            n_out += b_out
        if chunk:
            yield chunk


__all__ = ["Dispatcher", "coerce_config", "host_outputs", "REPEAT_CAPACITY"]
