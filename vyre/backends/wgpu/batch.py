"""dispatch_batch: many independent dispatches, planned first, then encoded into as few submits as possible.

Phase 1 (per job, errors kept per job): unpack ``(program, inputs[, config])``, validate,
plan (every input check), fold the grid, compile. A job that fails here gets its exception
object as its result; the others go on.

Phase 2 (under the lock): the valid jobs go into submissions of at most
``batch_max_jobs`` jobs and ``batch_max_bytes`` input or output bytes; each submission is
one command encoder, one compute pass, one submit and one readback map. Two jobs of the
same program use distinct job slots (buffers and bind groups) of its pipeline, kept for the
next batch of that shape. If a submission fails on the GPU, its jobs are re-run one by one,
so only the culprit gets the error (unless the device was lost: then all of them do).
"""

from __future__ import annotations

from ...errors import DeviceLostError, DispatchError, VyreError
from ..host import fold_grid, plan_dispatch
from .execute import job_from_plan


def _unpack(job):
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


class BatchMixin:
    #: Most jobs in one submission of dispatch_batch.
    batch_max_jobs = 256
    #: Most input (or output) bytes in one submission of dispatch_batch.
    batch_max_bytes = 256 << 20

    def dispatch_batch(self, jobs) -> list:
        """Run independent jobs; returns one result per job, in order: its list of outputs, or the
        exception object (a VyreError) that job raised. A bad job does not fail the others.
        Raises only when the backend itself cannot run (shut down, or the device lost)."""
        self._check_alive()
        jobs = list(jobs)
        results: list = [None] * len(jobs)
        ready = []  # (position, program, plan, groups, config, pipeline)
        for k, job in enumerate(jobs):
            try:
                program, inputs, config = _unpack(job)
                config = self._coerce_config(config)
                self._validate(program)
                plan = plan_dispatch(program, inputs, config, max_storage_bytes=self.max_storage_buffer_bytes())
                self._check_uniform_sizes(plan)
                groups = fold_grid(plan.grid, self.max_compute_workgroups_per_dimension())
                compiled = self._compiled(program, config)
                if plan.total_workgroups == 0:
                    results[k] = self._host_outputs(plan)
                    continue
                ready.append((k, program, plan, groups, config, compiled))
            except DeviceLostError:
                raise
            except VyreError as exc:
                results[k] = exc
            except Exception as exc:  # a malformed job (not a program, odd inputs...)
                results[k] = DispatchError(f"batch job {k} is malformed: {type(exc).__name__}: {exc}",
                                           fix="pass (program, inputs) or (program, inputs, config)")
        self._stats.bump("batches")
        for chunk in self._chunks(ready):
            with self._lock:
                self._check_alive()
                built = []
                for k, program, plan, groups, config, compiled in chunk:
                    try:
                        if compiled.generation != self._generation:  # built on a device since replaced
                            compiled = self._compiled(program, config)
                        label = (config.label if config is not None else None) or f"vyre:{program.name}"
                        built.append((k, job_from_plan(compiled, plan, groups, label)))
                    except DeviceLostError:
                        raise
                    except VyreError as exc:
                        results[k] = exc
                if not built:
                    continue
                try:
                    outs = self._run_jobs([j for _, j in built])
                    for (k, _), out in zip(built, outs):
                        results[k] = out
                except DeviceLostError:
                    raise
                except VyreError:
                    for k, job in built:  # find the culprit: one job per submission
                        try:
                            results[k] = self._run_jobs([job])[0]
                        except DeviceLostError:
                            raise
                        except VyreError as exc:
                            results[k] = exc
        return results

    def _chunks(self, ready):
        chunk, n_in, n_out = [], 0, 0
        for item in ready:
            plan = item[2]
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


__all__ = ["BatchMixin"]
