"""The reference backend's side of the Backend protocol that is not the interpreter or resident buffers:
capabilities, compile / dispatch_compiled, and dispatch_batch with per-job errors.

Compiling on the reference backend validates the program and lowers it with
:func:`vyre.lower.lower`, so the artifact carries the same WGSL and binding layout a GPU
backend would build; running it (``dispatch_compiled``) interprets ``artifact.program``.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from ..errors import DispatchError, LoweringError, VyreError
from ..ir.limits import Limits
from ..ir.program import Program
from .artifact import CompiledProgram
from .base import Capabilities
from .host import MAX_WORKGROUPS_PER_DIM

#: Compiled artifacts kept per reference backend (least recently used ones are dropped).
COMPILED_CAPACITY = 256


def reference_capabilities(max_storage_buffer_bytes: int) -> Capabilities:
    """What the reference interpreter does: resident buffers on the host, pipelines step by step,
    f16 (numpy float16), subgroup operations (simulated), no timestamps, no async dispatch. The limits are
    the ones it validates programs and dispatches against (the validator's WebGPU defaults)."""
    lim = Limits()
    return Capabilities(
        backend="reference", device="host (numpy interpreter)", resident=True, native_pipelines=False,
        timestamps=False, f16=True, subgroups=True, async_dispatch=False, f64=True, int64=True,
        max_storage_buffer_bytes=int(max_storage_buffer_bytes),
        max_workgroups_per_dimension=MAX_WORKGROUPS_PER_DIM,
        max_workgroup_size=(lim.max_compute_workgroup_size_x, lim.max_compute_workgroup_size_y,
                            lim.max_compute_workgroup_size_z),
        max_invocations_per_workgroup=lim.max_compute_invocations_per_workgroup,
    )


class ReferenceCompiler:
    """``compile`` for the reference backend: validate (the backend's cached validator), then lower."""

    def __init__(self, validate: Callable[[Program], None], capacity: int = COMPILED_CAPACITY):
        self._validate = validate
        self._capacity = int(capacity)
        self._cache: OrderedDict[str, CompiledProgram] = OrderedDict()
        self._lock = threading.Lock()

    def compile(self, program: Any) -> CompiledProgram:
        """The program's :class:`CompiledProgram`; ``key`` is ``("reference", fingerprint, lowering version)``."""
        if not isinstance(program, Program):
            raise DispatchError(f"expected a vyre Program, got {type(program).__name__}",
                                fix="build one with vyre.ProgramBuilder(...).build()")
        self._validate(program)
        fp = program.fingerprint
        with self._lock:
            hit = self._cache.get(fp)
            if hit is not None:
                self._cache.move_to_end(fp)
                return hit
        from ..lower import lower  # why: the WGSL lowering loads on the first compile, not with the backend

        try:
            lowered = lower(program)
        except VyreError:
            raise
        except Exception as exc:
            raise LoweringError(f"lowering program {program.name!r} failed: {type(exc).__name__}: {exc}",
                                fix="report this lowering bug with the program's text form") from exc
        version = str(lowered.lowering_version)
        artifact = CompiledProgram(
            program=program, wgsl=lowered.wgsl, entry_point=lowered.entry_point, bindings=tuple(lowered.bindings),
            features=frozenset(lowered.features), workgroup_size=tuple(lowered.workgroup_size), fingerprint=fp,
            lowering_version=version, key=("reference", fp, version), lowered=lowered)
        with self._lock:
            self._cache[fp] = artifact
            while len(self._cache) > self._capacity:
                self._cache.popitem(last=False)
        return artifact


def compiled_program(compiled: Any) -> Program:
    """The program of a :class:`CompiledProgram` (from any backend's ``compile``); DispatchError otherwise."""
    if not isinstance(compiled, CompiledProgram):
        raise DispatchError(f"dispatch_compiled takes a CompiledProgram, got {type(compiled).__name__}",
                            fix="pass the result of backend.compile(program)")
    return compiled.program


def unpack_job(job: Any) -> tuple[Program, Any, Any]:
    """``(program, inputs)`` or ``(program, inputs, config)`` -> (program, inputs, config or None)."""
    if not isinstance(job, (tuple, list)) or len(job) not in (2, 3):
        raise DispatchError(f"a batch job is (program, inputs) or (program, inputs, config), got {type(job).__name__}"
                            + (f" of length {len(job)}" if isinstance(job, (tuple, list)) else ""),
                            fix="pass a list of (program, inputs) or (program, inputs, config) tuples")
    program = job[0]
    if not isinstance(program, Program):
        raise DispatchError(f"a batch job's first element must be a vyre Program, got {type(program).__name__}",
                            fix="build programs with vyre.ProgramBuilder")
    return program, job[1], job[2] if len(job) == 3 else None


def run_batch(dispatch: Callable[[Program, Any, Any], list[np.ndarray]],
              jobs: Iterable[Any]) -> list[list[np.ndarray] | VyreError]:
    """Run each job with ``dispatch``; its outputs or the VyreError it raised (a job that fails with
    another exception is malformed: DispatchError), in order. One bad job does not stop the rest."""
    results: list[list[np.ndarray] | VyreError] = []
    for k, job in enumerate(list(jobs)):
        try:
            results.append(dispatch(*unpack_job(job)))
        except VyreError as exc:
            results.append(exc)
        except Exception as exc:  # a malformed job (odd inputs...)
            results.append(DispatchError(f"batch job {k} is malformed: {type(exc).__name__}: {exc}",
                                         fix="pass (program, inputs) or (program, inputs, config)"))
    return results


__all__ = ["ReferenceCompiler", "reference_capabilities", "compiled_program", "unpack_job", "run_batch",
           "COMPILED_CAPACITY"]
