"""``pool.dispatch_batch``: a batch of ``(program, inputs[, config])`` jobs spread over the workers.

Jobs are grouped by estimated bytes (:func:`~vyre.distributed.sharding.assign`), each worker's group
cut into calls of bounded size, and every result put back at its job's position: the outputs, or the
VyreError that job raised, exactly as ``WgpuBackend.dispatch_batch`` answers (a malformed job is a
DispatchError in its place; a lost device raises DeviceLostError).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import DispatchError
from .gather import Pending, gather
from .sharding import assign, chunks, job_bytes

if TYPE_CHECKING:
    from .pool import Pool


def unpack(job: Any) -> tuple[Any, Any, Any]:
    """``(program, inputs, config)`` of a job, or the DispatchError ``WgpuBackend.dispatch_batch`` gives."""
    if not isinstance(job, (tuple, list)) or len(job) not in (2, 3):
        raise DispatchError(f"a batch job is (program, inputs) or (program, inputs, config), got {type(job).__name__}"
                            + (f" of length {len(job)}" if isinstance(job, (tuple, list)) else ""),
                            fix="pass a list of (program, inputs) or (program, inputs, config) tuples")
    program = job[0]
    if not hasattr(program, "fingerprint") or not hasattr(program, "sorted_buffers"):
        raise DispatchError(f"a batch job's first element must be a vyre Program, got {type(program).__name__}",
                            fix="build programs with vyre.ProgramBuilder")
    return program, job[1], (job[2] if len(job) == 3 else None)


def _writable(out: Any) -> Any:
    # Arrays read from Ray's object store are read-only views; a backend's outputs are the caller's to change.
    if isinstance(out, list):
        return [a if not isinstance(a, np.ndarray) or a.flags.writeable else a.copy() for a in out]
    return out


class BatchRun:
    """A batch submitted to a pool's workers (already running); :meth:`result` waits for it."""

    def __init__(self, pool: Pool, jobs: Any) -> None:
        self._pool = pool
        jobs = list(jobs)
        self._results: list[Any] = [None] * len(jobs)
        self._programs: dict[str, Any] = {}
        self._wire: dict[str, bytes] = {}
        self._entries: dict[int, tuple[int, str, Any, Any]] = {}
        for k, job in enumerate(jobs):
            try:
                program, inputs, config = unpack(job)
                fp = program.fingerprint
            except DispatchError as exc:
                self._results[k] = exc
                continue
            self._programs[fp] = program
            self._entries[k] = (k, fp, inputs, config)
        positions = sorted(self._entries)
        weights = {k: job_bytes(self._entries[k][2]) for k in positions}
        self._pending = Pending(self._submit, pool.size)
        groups = assign([weights[k] for k in positions], pool.size)
        for worker, group in enumerate(groups):
            members = [positions[i] for i in group]
            for run in chunks(members, weights, pool.chunk_bytes, pool.chunk_jobs):
                self._pending.start(run, worker)
        self._done = False

    def _wire_of(self, fp: str) -> bytes:
        if fp not in self._wire:
            self._wire[fp] = self._programs[fp].to_wire()
        return self._wire[fp]

    def _submit(self, run: list[int], worker: int, full: bool) -> Any:
        known = self._pool._known[worker]
        fps = {self._entries[k][1] for k in run}
        send = {fp: self._wire_of(fp) for fp in sorted(fps) if full or fp not in known}
        ref = self._pool._workers[worker].run_batch.remote(send, [self._entries[k] for k in run])
        # The worker runs its calls in order, so later calls may name these by fingerprint only; a
        # restart that forgets them is answered "missing" and the bytes travel again.
        known.update(fps)
        return ref

    def _place(self, run: list[int], answer: list[tuple[int, Any]]) -> None:
        for pos, out in answer:
            self._results[pos] = _writable(out)

    def result(self, timeout_s: float | None = None) -> list:
        """One result per job in the caller's order: its outputs, or the VyreError it raised.
        WorkerTimeoutError when the workers do not answer within ``timeout_s`` (default: the pool's)."""
        if not self._done:
            gather(self._pending, self._place, self._pool.timeout_s if timeout_s is None else timeout_s,
                   f"dispatch_batch of {len(self._results)} job(s)")
            self._done = True
        return list(self._results)
