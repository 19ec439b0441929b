"""The reference backend: runs any valid Program on the CPU with numpy.

It is the oracle every GPU result is compared with. The interpreter itself (execution model,
value semantics) is :mod:`vyre.backends.interpreter`; its memory is :mod:`vyre.backends.memory`.
"""

from __future__ import annotations

import threading
from collections import OrderedDict

import numpy as np

from ..ir.program import Program
from .config import DispatchConfig
from .host import plan_dispatch, storage_dtype, storage_to_host
from .interpreter import COMPACT_MIN_LANES
from .interpreter import Chunk as _Chunk
from .memory import Memory

DEFAULT_CHUNK_LANES = 1 << 20
DEFAULT_MAX_LOOP_ITERATIONS = 10_000_000
WORKGROUP_MEMORY_BUDGET = 256 << 20  # bytes of workgroup arrays one chunk may allocate


def _validator():
    try:
        from ..ir.validate import validate
    except ImportError:
        return None
    return validate


# --------------------------------------------------------------------------- backend
class ReferenceBackend:
    """CPU reference backend (numpy). The oracle for every other backend.

    chunk_lanes:
        at most this many invocations run at once (whole workgroups; at least one).
    max_loop_iterations:
        a loop running more trips than this in one chunk raises DispatchError (likely an
        infinite loop) instead of hanging.
    compact_min_lanes:
        a loop running over at least this many lanes continues on a compacted copy of the
        lanes once at most a quarter of them are still active (divergent loops then cost
        about the total number of trips, not lanes x the longest trip count).
    """

    name = "reference"

    def __init__(self, chunk_lanes: int = DEFAULT_CHUNK_LANES,
                 max_loop_iterations: int = DEFAULT_MAX_LOOP_ITERATIONS,
                 compact_min_lanes: int = COMPACT_MIN_LANES):
        if chunk_lanes < 1:
            raise ValueError(f"chunk_lanes must be >= 1, got {chunk_lanes}")
        self.chunk_lanes = int(chunk_lanes)
        self.max_loop_iterations = int(max_loop_iterations)
        self.compact_min_lanes = max(1, int(compact_min_lanes))
        self._validated: OrderedDict[str, None] = OrderedDict()  # fingerprints, bounded LRU
        self._validated_lock = threading.Lock()

    def _validate(self, program: Program) -> None:
        """Validate once per program content (multi-step ops dispatch the same programs many times).
        The fingerprint is taken only after a first validation, so over-deep programs still get the
        validator's clear error rather than a serialisation failure."""
        fp = program.__dict__.get("fingerprint")
        if fp is not None:
            with self._validated_lock:
                if fp in self._validated:
                    self._validated.move_to_end(fp)
                    return
        validate = _validator()
        if validate is not None:
            validate(program)
        with self._validated_lock:
            self._validated[program.fingerprint] = None
            while len(self._validated) > 4096:
                self._validated.popitem(last=False)

    def dispatch(self, program: Program, inputs=None, config: DispatchConfig | None = None) -> list[np.ndarray]:
        self._validate(program)
        plan = plan_dispatch(program, inputs, config)
        buffers: dict[str, Memory] = {}
        for b in plan.buffers:
            sdt = storage_dtype(b.decl.dtype)
            if b.data is not None and not b.is_output:
                data = b.data  # read-only: never written
            else:
                data = np.zeros(b.nbytes // sdt.itemsize, dtype=sdt)
                if b.data is not None:
                    data[: b.data.size] = b.data
            buffers[b.decl.name] = Memory(b.decl.name, b.decl.dtype, b.count, data)
        total = plan.total_workgroups
        per_chunk = max(1, self.chunk_lanes // program.workgroup_invocations)
        wg_bytes = sum(w.count * w.dtype.element_nbytes for w in program.workgroup)
        if wg_bytes:  # every workgroup of a chunk has its own copy of the workgroup arrays
            per_chunk = max(1, min(per_chunk, WORKGROUP_MEMORY_BUDGET // wg_bytes))
        with np.errstate(all="ignore"):
            for start in range(0, total, per_chunk):
                _Chunk(self, program, buffers, plan.grid, start, min(per_chunk, total - start)).run()
        return [storage_to_host(b.decl, buffers[b.decl.name].data, b.count) for b in plan.outputs]


__all__ = ["ReferenceBackend", "Memory", "DEFAULT_CHUNK_LANES", "DEFAULT_MAX_LOOP_ITERATIONS"]
