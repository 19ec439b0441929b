"""Planning a dispatch: one function for every path (host-data dispatches, batches, async and timed
dispatches, resident dispatches and sequences, the reference backend), and one memo.

:func:`plan_step` sizes every buffer (:func:`~vyre.backends.host.plan_dispatch` for host data,
:func:`~vyre.backends.host.plan_resident` for resident buffers of given sizes), checks the plan
against the adapter's :class:`PlanLimits` (uniform binding sizes, the workgroup grid, llvmpipe's loop
cut-off) and computes the hidden params words: a :class:`Step`, made before any GPU work, so a
refused dispatch has changed nothing. A resident step depends only on (program, sizes, config):
:class:`StepMemo` keeps them, the one plan memo of a backend.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..ir.program import Program
from .config import DispatchConfig
from .grid import MAX_WORKGROUPS_PER_DIM, fold_grid
from .host import DispatchPlan, params_words, plan_dispatch, plan_resident
from .plan_checks import check_loop_iterations, check_uniform_sizes

#: WebGPU's minimum uniform binding size: what every adapter allows.
UNIFORM_MIN = 65536


@dataclass(frozen=True, slots=True)
class PlanLimits:
    """The adapter limits a plan is checked against (None: unchecked)."""

    max_storage_bytes: int | None = None
    max_uniform_bytes: int = UNIFORM_MIN
    max_workgroups_per_dim: int = MAX_WORKGROUPS_PER_DIM
    loop_cap: int | None = None  # llvmpipe ends an invocation's loops after this many iterations

    @classmethod
    def of(cls, limits: Mapping[str, Any], loop_cap: int | None = None) -> PlanLimits:
        """The plan limits of a device's limits dict (wgpu's names)."""
        storage = limits.get("max-storage-buffer-binding-size")
        return cls(None if storage is None else int(storage),
                   int(limits.get("max-uniform-buffer-binding-size", UNIFORM_MIN)),
                   int(limits.get("max-compute-workgroups-per-dimension", MAX_WORKGROUPS_PER_DIM)), loop_cap)


@dataclass(frozen=True, slots=True)
class Step:
    """A checked dispatch: its plan, the folded workgroup counts and the hidden params words."""

    plan: DispatchPlan
    workgroups: tuple[int, int, int]
    words: np.ndarray  # u32 words of the params uniform
    wbytes: bytes  # the same words as bytes (cache keys)


def plan_step(program: Program, inputs: Any, config: DispatchConfig | None, limits: PlanLimits, *,
              sizes: Sequence[int] | None = None, what: str = "") -> Step:
    """Plan one dispatch of ``program`` over host ``inputs`` or, with ``sizes``, over resident buffers of
    those byte sizes (``inputs`` is then ignored), and check it under ``limits``. Raises a vyre error."""
    if sizes is None:
        plan = plan_dispatch(program, inputs, config, max_storage_bytes=limits.max_storage_bytes)
    else:
        plan = plan_resident(program, sizes, config, max_storage_bytes=limits.max_storage_bytes)
    check_uniform_sizes(plan, limits.max_uniform_bytes, what)
    check_loop_iterations(plan, limits.loop_cap)
    workgroups = fold_grid(plan.grid, limits.max_workgroups_per_dim)
    words = params_words(plan)
    return Step(plan, workgroups, words, words.tobytes())


class StepMemo:
    """Resident steps by (program, sizes, config), least recently used dropped past ``capacity``. The key
    holds the objects' ids and the entry the objects, so an id is not reused while its entry lives."""

    def __init__(self, capacity: int = 256) -> None:
        self.capacity = capacity
        self._steps: OrderedDict[tuple[int, tuple[int, ...], int], tuple[Program, object, Step]] = OrderedDict()

    def __len__(self) -> int:
        return len(self._steps)

    def step(self, program: Program, sizes: tuple[int, ...], config: DispatchConfig | None, limits: PlanLimits,
             what: str = "", validate: Callable[[Program], None] | None = None) -> Step:
        """The step of a resident dispatch, planned on a miss (:func:`plan_step`, after ``validate(program)``)."""
        key = (id(program), sizes, id(config))
        hit = self._steps.get(key)
        if hit is not None and hit[0] is program and hit[1] is config:
            self._steps.move_to_end(key)
            return hit[2]
        if validate is not None:
            validate(program)
        step = plan_step(program, None, config, limits, sizes=sizes, what=what)
        self._steps[key] = (program, config, step)
        while len(self._steps) > self.capacity:
            self._steps.popitem(last=False)
        return step

    def clear(self) -> None:
        self._steps.clear()


__all__ = ["PlanLimits", "Step", "StepMemo", "plan_step", "UNIFORM_MIN"]
