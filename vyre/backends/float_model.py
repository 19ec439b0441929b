"""The float model as an oracle: what a conforming GPU may return for a program, and a check of a
GPU's outputs against it (docs/architecture.md, "Float model").

:func:`run_model` runs a program on the model interpreter (:mod:`vyre.backends.float_model_chunk`):
per output element the reference value, an absolute error bound and whether the element is
unspecified. :func:`check_under_model` compares outputs from any backend with that: integers and
bools bit-exact, floats within the bound (``-0.0`` equals ``0.0``; a result where the model
expects a finite one must be finite), unspecified elements skipped. A lowering bug that changes a
result beyond the bound still fails; nothing else does.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..ir.program import Program
from .config import DispatchConfig
from .float_model_chunk import ModelChunk, ModelState, ShadowMemory
from .host import fold_grid, plan_dispatch, storage_dtype, storage_to_host
from .memory import Memory
from .reference import ReferenceBackend
from .reference_resident import as_config

#: Elements listed per mismatching buffer in a report.
MAX_LISTED = 8


@dataclass(frozen=True)
class ModelOutput:
    """One output buffer under the model: host-shaped ``value`` (the reference result), ``bound``
    (float64, 0 for integers) and ``unspecified`` (bool), all of the same shape."""

    name: str
    value: np.ndarray
    bound: np.ndarray
    unspecified: np.ndarray


@dataclass
class ModelReport:
    """The outcome of :func:`check_under_model`."""

    mismatches: list[str] = field(default_factory=list)
    compared: int = 0  # output elements (vector components) checked
    unspecified: int = 0  # output elements the model leaves open
    poisoned: bool = False  # a control decision or an address was unspecified: nothing compared

    @property
    def ok(self) -> bool:
        return not self.mismatches


def run_model(program: Program, inputs: Any = None, config: DispatchConfig | Any | None = None,
              reference: ReferenceBackend | None = None) -> list[ModelOutput]:
    """The model's view of ``program``'s outputs for ``inputs`` (same arguments as ``dispatch``)."""
    ref = reference or ReferenceBackend()
    cfg = as_config(config)
    ref._validate(program)
    plan = plan_dispatch(program, inputs, cfg, max_storage_bytes=ref.max_storage_buffer_bytes)
    fold_grid(plan.grid)
    buffers: dict[str, Memory] = {}
    shadows: dict[str, ShadowMemory] = {}
    for b in plan.buffers:
        sdt = storage_dtype(b.decl.dtype)
        data = np.zeros(b.nbytes // sdt.itemsize, dtype=sdt)
        if b.data is not None:
            data[: b.data.size] = b.data
        mem = Memory(b.decl.name, b.decl.dtype, b.count, data)
        buffers[b.decl.name] = mem
        shadows[b.decl.name] = ShadowMemory(mem, from_data=b.data is not None)
    state = ModelState()
    inv = program.workgroup_invocations
    per_chunk = max(1, ref.chunk_lanes // inv)
    total = plan.total_workgroups
    with np.errstate(all="ignore"):
        for start in range(0, total, per_chunk):
            ModelChunk(ref, program, buffers, shadows, state, plan.grid, start, min(per_chunk, total - start)).run()
    outs = []
    for b in plan.outputs:
        name, d, count = b.decl.name, b.decl.dtype, b.count
        value = storage_to_host(b.decl, buffers[name].data, count)
        sh = shadows[name]
        err, unk = sh.err[:count], sh.unk[:count] | sh.poisoned | state.poisoned
        if d.is_vector:
            err, unk = err[:, : d.lanes], unk[:, : d.lanes]
        outs.append(ModelOutput(name, value, np.array(err).reshape(value.shape), np.array(unk).reshape(value.shape)))
    return outs


def check_under_model(program: Program, inputs: Any, outputs: Sequence[np.ndarray],
                      config: DispatchConfig | Any | None = None,
                      reference: ReferenceBackend | None = None) -> ModelReport:
    """Compare ``outputs`` (from ``backend.dispatch(program, inputs, config)``) with the model."""
    model = run_model(program, inputs, config, reference)
    report = ModelReport()
    if len(outputs) != len(model):
        report.mismatches.append(f"{len(outputs)} outputs, the program has {len(model)}")
        return report
    for m, got in zip(model, outputs):
        got = np.asarray(got)
        if got.shape != m.value.shape:
            report.mismatches.append(f"{m.name}: shape {got.shape}, expected {m.value.shape}")
            continue
        check = ~m.unspecified
        report.unspecified += int(m.unspecified.sum())
        report.compared += int(check.sum())
        if m.value.dtype.kind == "f":
            g = got.astype(np.float64)
            w = m.value.astype(np.float64)
            with np.errstate(invalid="ignore"):
                bad = check & ~(np.abs(g - w) <= m.bound)  # NaN or inf where the model says finite fails
        else:
            bad = check & (got != m.value)
        if bad.any():
            idx = np.argwhere(bad)
            listed = ", ".join(
                f"[{', '.join(map(str, i))}] got {got[tuple(i)]!r} want {m.value[tuple(i)]!r}"
                + (f" ± {m.bound[tuple(i)]:.3g}" if m.value.dtype.kind == "f" else "")
                for i in idx[:MAX_LISTED])
            more = f" (+{len(idx) - MAX_LISTED} more)" if len(idx) > MAX_LISTED else ""
            report.mismatches.append(f"{m.name}: {len(idx)} element(s) outside the model: {listed}{more}")
    report.poisoned = bool(model) and all(m.unspecified.all() for m in model) and report.compared == 0
    return report


__all__ = ["ModelOutput", "ModelReport", "run_model", "check_under_model", "MAX_LISTED"]
