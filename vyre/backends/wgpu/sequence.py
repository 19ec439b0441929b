"""Resident dispatches and sequences: many dispatches over resident buffers as one Work.

A step is ``(program, handles)`` or ``(program, handles, grid)`` (``grid`` may also be a
DispatchConfig, for ``counts``). Every step is checked before anything is encoded. The
steps go into one compute pass: WebGPU orders the dispatches of a pass and makes the
storage writes of one visible to the next, so a dependent chain is correct. Only the
requested handles or ``(handle, offset, nbytes)`` ranges are read back, with one map.
A plain resident dispatch moves no host data and does not wait.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal, overload

import numpy as np

from ...errors import DispatchError
from ...ir.program import Program
from ..config import DispatchConfig
from .captured import Captured
from .device import Device
from .executor import Executor
from .resident import ResidentState, ResidentStore
from .timestamps import TimedDispatch
from .transfer import Stats
from .work import Dispatch, Pass, Read, Work


def as_config(config: Any) -> DispatchConfig:
    """``config`` as a DispatchConfig (None: the default); anything invalid raises DispatchError."""
    return DispatchConfig.coerce(config) or _DEFAULT_CONFIG


_DEFAULT_CONFIG = DispatchConfig()  # frozen: shared by every step given without a grid


def _step_config(extra: Any, what: str) -> DispatchConfig:
    """The config of a sequence step from its optional third element (a grid or a DispatchConfig)."""
    return DispatchConfig.coerce(extra, what) or _DEFAULT_CONFIG


def _memo_key(step: Sequence[Any]) -> tuple[object, ...] | None:
    """A cheap key for steps that must prepare identically within one call: the program and
    handle objects (alive for the call, so their ids are unique) and the grid or config as
    given. None when the step cannot be keyed (it is then prepared on its own)."""
    try:
        extra = step[2] if len(step) == 3 else None
        key = (id(step[0]), tuple(map(id, step[1])),
               id(extra) if isinstance(extra, DispatchConfig) else extra)
        hash(key)
        return key
    except TypeError:
        return None


@dataclass(slots=True)
class Sequences:
    """``dispatch_resident`` and the resident sequences of WgpuBackend (over the device, the resident
    store, the executor and the counters it is made with)."""

    _dev: Device
    _resident: ResidentStore
    _ex: Executor
    _stats: Stats

    def dispatch_resident(self, program: Program, handles: Any, config: Any) -> None:
        config = as_config(config)
        with self._dev.lock:
            st = self._resident.state()
            step = self._resident.step(st, program, handles, config,
                                       f"dispatch_resident({getattr(program, 'name', type(program).__name__)})")
            if step.total == 0:
                return
            work = Work(label=config.label or f"vyre-resident:{program.name}", passes=[Pass([step])],
                        program=program.name)
            self._ex.run(work)
            self._stats.bump("resident_dispatches", work.dispatches)

    @overload
    def run(self, prefix: Any, repeated: Any, repeat_count: int, read: Any, timed: Literal[False]
            ) -> list[np.ndarray]: ...

    @overload
    def run(self, prefix: Any, repeated: Any, repeat_count: int, read: Any, timed: Literal[True]) -> TimedDispatch: ...

    def run(self, prefix: Any, repeated: Any, repeat_count: int, read: Any, timed: bool
            ) -> list[np.ndarray] | TimedDispatch:
        """``prefix``, then ``repeated`` ``repeat_count`` times, in one pass; the reads of ``read`` (and the
        GPU time, when ``timed``)."""
        if isinstance(repeat_count, bool) or not isinstance(repeat_count, (int, np.integer)) or repeat_count < 0:
            raise DispatchError(f"repeat_count must be an int >= 0, got {repeat_count!r}")
        with self._dev.lock:
            st = self._resident.state()
            pre = self.steps(st, prefix, "step")
            rep = [] if isinstance(repeated, tuple) and not repeated else self.steps(st, repeated, "repeated step")
            reads = [] if read is None else [self._resident.range(st, r, f"read {k}") for k, r in enumerate(read)]
            steps = (itertools.chain(pre, itertools.chain.from_iterable(itertools.repeat(rep, int(repeat_count))))
                     if rep and repeat_count else pre)
            work = Work(label="vyre-resident-sequence", passes=[Pass(steps)],
                        reads=[Read(buf, off, n) for buf, off, n in reads])
            if not timed:
                out = self._ex.run(work)
                self._count(work)
                return out
            t = self._ex.run_timed(work)
            self._count(work)
        return TimedDispatch(t.results, t.gpu_ns, t.source, t.wall_ns)

    def steps(self, st: ResidentState, steps: Any, what: str) -> list[Dispatch]:
        """Check and prepare every step; identical steps are prepared once."""
        if isinstance(steps, tuple) and len(steps) in (2, 3) and not isinstance(steps[0], (tuple, list)):
            raise DispatchError(f"{what}s must be a list of (program, handles[, grid]) steps, got one step",
                                fix="wrap the step in a list: [(program, handles)]")
        if type(steps) is list and len(steps) == 1:  # one step (an array evaluation): nothing to share
            step = steps[0]
            if type(step) is tuple and len(step) == 2:
                return [self._resident.step(st, step[0], step[1], _DEFAULT_CONFIG, f"{what} 0")]
        memo: dict[tuple[object, ...], Dispatch] = {}
        out: list[Dispatch] = []
        append = out.append
        for k, step in enumerate(steps):
            # fast path (per step of long sequences): a (program, handles) step seen earlier in this call
            fast = None
            if (type(step) is tuple or type(step) is list) and len(step) == 2:
                hs = step[1]
                if type(hs) is list or type(hs) is tuple:
                    fast = (id(step[0]), *map(id, hs))  # the objects stay alive for the call: ids are unique
                    prepared = memo.get(fast)
                    if prepared is not None:
                        append(prepared)
                        continue
            where = f"{what} {k}"
            if not isinstance(step, (tuple, list)) or len(step) not in (2, 3):
                raise DispatchError(f"{where}: expected (program, handles) or (program, handles, grid), "
                                    f"got {step!r:.200}")
            key = _memo_key(step)
            prepared = memo.get(key) if key is not None else None
            if prepared is None:
                config = _step_config(step[2] if len(step) == 3 else None, where)
                prepared = self._resident.step(st, step[0], step[1], config, where)
                if key is not None:
                    memo[key] = prepared
            if fast is not None:
                memo[fast] = prepared
            append(prepared)
        return out

    def capture(self, steps: Any, clears: Sequence[Any]) -> Captured:
        """``steps`` checked and prepared once (see vyre/backends/wgpu/captured.py)."""
        with self._dev.lock:
            st = self._resident.state()
            prepared = self.steps(st, steps, "step")
            handles = [h for step in steps for h in step[1]]
            for k, h in enumerate(clears):
                self._resident.buffer(st, h, f"clear {k}")
            return Captured(self._dev, self._resident, self._ex, self._stats, st, prepared, handles, clears)

    def _count(self, work: Work) -> None:
        self._stats.bump("resident_dispatches", work.dispatches)
        self._stats.bump("resident_sequences")


__all__ = ["Sequences", "as_config"]
