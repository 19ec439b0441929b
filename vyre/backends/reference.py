"""The reference backend: runs any valid Program on the CPU with numpy.

It is the oracle every GPU result is compared with. The interpreter itself (execution model,
value semantics) is :mod:`vyre.backends.interpreter`; its memory is :mod:`vyre.backends.memory`.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from ..errors import DispatchError, VyreError
from ..ir.program import Program
from ..ir.validate import validate
from .artifact import CompiledProgram
from .base import Backend, BatchJob, Capabilities, ResidentRange, ResidentStep, ResidentUpload
from .config import DispatchConfig
from .handles import ResidentHandle
from .host import DispatchPlan, storage_dtype, storage_to_host
from .interpreter import COMPACT_MIN_LANES, DEFAULT_MAX_LOOP_SECONDS
from .interpreter import Chunk as _Chunk
from .interpreter_subgroup import valid_subgroup_size
from .memory import Memory
from .planning import PlanLimits, plan_step
from .recording import recordable
from .reference_protocol import ReferenceCompiler, compiled_program, reference_capabilities, run_batch
from .reference_resident import HostCaptured, HostResidentStore, as_config
from .schedule import Pipeline
from .schedule import run_pipeline as _run_pipeline_on

DEFAULT_CHUNK_LANES = 1 << 20
DEFAULT_MAX_LOOP_ITERATIONS = 10_000_000
DEFAULT_SUBGROUP_SIZE = 32  # simulated subgroup size (NVIDIA's warp)
WORKGROUP_MEMORY_BUDGET = 256 << 20  # bytes of workgroup arrays one chunk may allocate
DEFAULT_MAX_STORAGE_BUFFER_BYTES = 1 << 32  # largest buffer (dispatch binding or resident allocation)


#: Params handles kept per backend (params_handle), least recently used dropped first.
PARAMS_HANDLES = 256


# --------------------------------------------------------------------------- backend
@recordable  # vyre.compile sees the resident work done on it (vyre/backends/recording.py)
class ReferenceBackend(Backend):
    """CPU reference backend (numpy). The oracle for every other backend.

    chunk_lanes:
        at most this many invocations run at once (whole workgroups; at least one).
    max_loop_seconds:
        the loop budget in wall time (10 s by default): a chunk of the dispatch (at most
        ``chunk_lanes`` invocations; a smaller dispatch is one chunk) still running loops after
        this many seconds raises DispatchError naming the program and the loop (its statement
        path, e.g. ``body[2].then[0]``, its text and trips) instead of hanging. Raise it for
        long loops that do end; ``None`` turns the time limit off.
    max_loop_iterations:
        the loop budget in trips: a loop running more trips than this in one chunk raises
        DispatchError the same way (likely an infinite loop), whichever budget is spent first.
    compact_min_lanes:
        a loop running over at least this many lanes continues on a compacted copy of the
        lanes once at most a quarter of them are still active (divergent loops then cost
        about the total number of trips, not lanes x the longest trip count).
    max_storage_buffer_bytes:
        the largest buffer a dispatch may bind or a resident allocation may have.
    subgroup_size:
        the subgroup size simulated for subgroup operations and the ``subgroup_size`` built-in
        (a power of two, 4..128; subgroups are runs of consecutive local invocation indices,
        see :mod:`vyre.backends.interpreter_subgroup`).

    It implements the whole :class:`vyre.backends.base.Backend` protocol on the host: resident
    buffers are numpy byte arrays it owns (vyre/backends/reference_resident.py), ``compile``
    lowers to WGSL like a GPU backend would (vyre/backends/reference_protocol.py) and
    ``run_pipeline`` runs step by step with the host semantics of :mod:`vyre.backends.schedule`.
    """

    name = "reference"

    def __init__(self, chunk_lanes: int = DEFAULT_CHUNK_LANES,
                 max_loop_iterations: int = DEFAULT_MAX_LOOP_ITERATIONS,
                 compact_min_lanes: int = COMPACT_MIN_LANES,
                 max_storage_buffer_bytes: int = DEFAULT_MAX_STORAGE_BUFFER_BYTES,
                 subgroup_size: int = DEFAULT_SUBGROUP_SIZE,
                 max_loop_seconds: float | None = DEFAULT_MAX_LOOP_SECONDS) -> None:
        if chunk_lanes < 1:
            raise ValueError(f"chunk_lanes must be >= 1, got {chunk_lanes}")
        if max_storage_buffer_bytes < 4:
            raise ValueError(f"max_storage_buffer_bytes must be >= 4, got {max_storage_buffer_bytes}")
        if not valid_subgroup_size(subgroup_size):
            raise DispatchError(f"ReferenceBackend: subgroup_size must be a power of two from 4 to 128, got "
                                f"{subgroup_size!r}", fix="pass subgroup_size=32 (the default), 8, 16, 64, ...")
        self.chunk_lanes = int(chunk_lanes)
        self.subgroup_size = int(subgroup_size)
        self.max_loop_iterations = int(max_loop_iterations)
        if max_loop_seconds is not None and not max_loop_seconds > 0:
            raise ValueError(f"max_loop_seconds must be > 0 or None, got {max_loop_seconds!r}")
        self.max_loop_seconds = None if max_loop_seconds is None else float(max_loop_seconds)
        self.compact_min_lanes = max(1, int(compact_min_lanes))
        self.max_storage_buffer_bytes = int(max_storage_buffer_bytes)
        self._validated: OrderedDict[str, None] = OrderedDict()  # fingerprints, bounded LRU
        self._validated_lock = threading.Lock()
        self._resident = HostResidentStore(self._validate, self._run_plan, self.max_storage_buffer_bytes)
        self._compiler = ReferenceCompiler(self._validate)
        # the limits a GPU must honour too: a dispatch refused on every adapter is refused here
        self._limits = PlanLimits(max_storage_bytes=self.max_storage_buffer_bytes)
        self._params: OrderedDict[bytes, ResidentHandle] = OrderedDict()
        self._params_lock = threading.Lock()

    def capabilities(self) -> Capabilities:
        """What the reference backend does (resident buffers on the host, f16, simulated subgroups; no
        native pipelines, timestamps or async dispatch) and the limits it validates against."""
        return reference_capabilities(self.max_storage_buffer_bytes)

    def _validate(self, program: Program) -> None:
        """Validate once per program content (multi-step ops dispatch the same programs many times).
        The fingerprint is taken only after a first validation, so over-deep programs still get the
        validator's clear error rather than a serialisation failure."""
        if not isinstance(program, Program):
            raise DispatchError(f"expected a vyre Program, got {type(program).__name__}",
                                fix="build one with vyre.ProgramBuilder(...).build()")
        fp = program.__dict__.get("fingerprint")
        if fp is not None:
            with self._validated_lock:
                if fp in self._validated:
                    self._validated.move_to_end(fp)
                    return
        validate(program)
        with self._validated_lock:
            self._validated[program.fingerprint] = None
            while len(self._validated) > 4096:
                self._validated.popitem(last=False)

    def dispatch(self, program: Program, inputs: Any = None,
                 config: DispatchConfig | None = None) -> list[np.ndarray]:
        """Run ``program`` once over fresh buffers (see :meth:`vyre.backends.base.Backend.dispatch`)."""
        config = as_config(config)
        self._validate(program)
        plan = plan_step(program, inputs, config, self._limits).plan
        arrays: dict[str, np.ndarray] = {}
        for b in plan.buffers:
            sdt = storage_dtype(b.decl.dtype)
            if b.data is not None and not b.is_output:
                data = b.data  # read-only: never written
            else:
                data = np.zeros(b.nbytes // sdt.itemsize, dtype=sdt)
                if b.data is not None:
                    data[: b.data.size] = b.data
            arrays[b.decl.name] = data
        self._run_plan(plan, arrays)
        return [storage_to_host(b.decl, arrays[b.decl.name], b.count) for b in plan.outputs]

    def _run_plan(self, plan: DispatchPlan, arrays: dict[str, np.ndarray]) -> None:
        """Interpret ``plan.program`` over its grid; ``arrays`` (storage layout, one per buffer name,
        at least the plan's bytes) are the buffers' memory and are modified in place."""
        program = plan.program
        buffers = {b.decl.name: Memory(b.decl.name, b.decl.dtype, b.count, arrays[b.decl.name])
                   for b in plan.buffers}
        total = plan.total_workgroups
        per_chunk = max(1, self.chunk_lanes // program.workgroup_invocations)
        wg_bytes = sum(w.count * w.dtype.element_nbytes for w in program.workgroup)
        if wg_bytes:  # every workgroup of a chunk has its own copy of the workgroup arrays
            per_chunk = max(1, min(per_chunk, WORKGROUP_MEMORY_BUDGET // wg_bytes))
        with np.errstate(all="ignore"):
            for start in range(0, total, per_chunk):
                _Chunk(self, program, buffers, plan.grid, start, min(per_chunk, total - start)).run()

    def dispatch_batch(self, jobs: Iterable[BatchJob]) -> list[list[np.ndarray] | VyreError]:
        """Each ``(program, inputs[, config])`` job's outputs, or the VyreError it raised, in order."""
        return run_batch(self.dispatch, jobs)

    # ---- compiled programs ------------------------------------------------------------
    def compile(self, program: Program, config: DispatchConfig | None = None) -> CompiledProgram:
        """Validate and lower ``program`` (cached); the artifact's key is ("reference", fingerprint, version)."""
        as_config(config)
        return self._compiler.compile(program)

    def dispatch_compiled(self, compiled: CompiledProgram, inputs: Any = None,
                          config: DispatchConfig | None = None) -> list[np.ndarray]:
        """Dispatch the program of a :class:`CompiledProgram` (from any backend's ``compile``)."""
        return self.dispatch(compiled_program(compiled), inputs, config)

    # ---- resident buffers (vyre/backends/reference_resident.py) ---------------------
    def allocate_resident(self, nbytes: int, label: str | None = None, *, zeroed: bool = True) -> ResidentHandle:
        """A new zero-filled host buffer of ``nbytes`` bytes (a positive multiple of 4; always zeroed here)."""
        return self._resident.allocate(nbytes, label)

    def free_resident(self, handle: ResidentHandle) -> None:
        """Release a resident buffer (freeing it twice raises DispatchError)."""
        self._resident.free(handle)

    def params_handle(self, words: bytes | np.ndarray) -> ResidentHandle:
        """A resident handle holding ``words``, shared by every caller with the same words (see
        :meth:`vyre.backends.base.Backend.params_handle`)."""
        key = words if isinstance(words, bytes) else np.ascontiguousarray(words).tobytes()
        if not key or len(key) % 4:
            raise DispatchError(f"params_handle: words must be a non-empty multiple of 4 bytes, got {len(key)}",
                                fix="pack the parameters as 32-bit words")
        with self._params_lock:
            h = self._params.get(key)
            if h is not None:
                self._params.move_to_end(key)
                return h
            h = self._resident.allocate(len(key), "vyre-params")
            self._resident.upload_many([(h, key)])
            self._params[key] = h
            while len(self._params) > PARAMS_HANDLES:
                self._resident.free(self._params.popitem(last=False)[1])
            return h

    def flush(self) -> None:
        """Nothing to wait for: the reference backend runs every dispatch to completion when called."""

    def upload_resident(self, handle: ResidentHandle, data: Any, offset: int = 0) -> None:
        """Write ``data``'s bytes at byte ``offset`` (offset and size multiples of 4)."""
        self._resident.upload_many([(handle, data, offset)])

    def upload_resident_many(self, uploads: Iterable[ResidentUpload]) -> None:
        """Several ``(handle, data[, offset])`` uploads, all checked before any is written."""
        self._resident.upload_many(uploads)

    def download_resident(self, handle: ResidentHandle, out: np.ndarray | None = None) -> np.ndarray:
        """The whole buffer as a new uint8 array, or copied into ``out`` (exactly ``handle.nbytes`` bytes)."""
        return self._resident.download_ranges([handle], None if out is None else [out])[0]

    def download_resident_ranges(self, ranges: Sequence[ResidentRange],
                                 outs: Sequence[np.ndarray | None] | None = None) -> list[np.ndarray]:
        """Each handle or ``(handle, offset, nbytes)`` as a uint8 array (or into ``outs[k]``)."""
        return self._resident.download_ranges(ranges, outs)

    def dispatch_resident(self, program: Program, handles: Sequence[ResidentHandle],
                          config: DispatchConfig | None = None) -> None:
        """Run ``program`` over resident buffers (one handle per buffer, binding order)."""
        self._resident.dispatch(program, handles, config)

    def dispatch_resident_sequence(self, steps: Sequence[ResidentStep],
                                   read: Sequence[ResidentRange] | None = None) -> list[np.ndarray]:
        """Run ``(program, handles[, grid])`` steps in order, then read ``read`` back as uint8 arrays."""
        return self._resident.sequence(steps, read)

    def capture_resident_sequence(self, steps: Sequence[ResidentStep],
                                  clears: Sequence[ResidentHandle] = ()) -> HostCaptured:
        """``steps`` checked once and replayed by ``.run(...)`` (vyre/backends/captured.py)."""
        return self._resident.capture(steps, clears)

    # ---- schedules ------------------------------------------------------------------------
    def run_pipeline(self, pipeline: Pipeline, inputs: Any) -> list[np.ndarray]:
        """Run an op pipeline step by step through :meth:`dispatch` (host semantics of vyre.backends.schedule)."""
        return _run_pipeline_on(self, pipeline, inputs)


__all__ = ["ReferenceBackend", "Memory", "DEFAULT_CHUNK_LANES", "DEFAULT_MAX_LOOP_ITERATIONS",
           "DEFAULT_MAX_LOOP_SECONDS"]
