"""Schedules of programs: a :class:`Pipeline` runs several programs in order over named buffers.

A pipeline is what an op builds (a single-program op is a pipeline of one step; reductions,
scans and sorts chain several steps through intermediate buffers) and what every backend
runs with ``backend.run_pipeline(pipeline, inputs)``. It lives at the backend layer so that
backends can name its type; the op library (vyre.ops) builds them.

Host semantics, which every backend's ``run_pipeline`` keeps exactly (the GPU version in
vyre/backends/wgpu/pipeline_run.py mirrors them over resident buffers):

* buffers that are not pipeline inputs start at zero;
* a step sees the current contents of its ``read`` / ``read_write`` / ``uniform`` buffers;
  its ``write`` buffers are zero-initialised before the step;
* after a step, its writable buffers hold what the program left in them;
* the outputs are returned in ``pipeline.outputs`` order, reshaped per ``output_shapes``.

:func:`run_pipeline` implements them on any backend through ``dispatch`` (one host round trip
per step); :func:`host_inputs` turns the caller's arrays into the input buffers.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import DispatchError
from ..ir.program import Program
from ..ir.types import DataType
from .config import DispatchConfig
from .host import pipeline_input


@dataclass(frozen=True)
class BufferSpec:
    """A pipeline buffer: element type and element count (fixed when the pipeline is built)."""

    dtype: DataType
    count: int


@dataclass(frozen=True)
class Step:
    """Run ``program`` with pipeline buffer ``bind[k]`` bound to the program's k-th buffer
    (binding order), over ``grid`` workgroups (None: the program's default grid)."""

    program: Program
    bind: tuple[str, ...]
    grid: tuple[int, int, int] | None = None


@dataclass(frozen=True)
class Pipeline:
    """Programs run in order (``steps``) over named buffers (``buffers``).

    ``inputs`` are supplied by the caller, in this order; ``outputs`` are returned, in this
    order; ``output_shapes`` reshapes flat outputs (by buffer name).
    """

    name: str
    buffers: dict[str, BufferSpec]
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    steps: tuple[Step, ...]
    output_shapes: dict[str, tuple[int, ...]] = field(default_factory=dict)

    @property
    def programs(self) -> list[Program]:
        """The distinct programs of the steps (by fingerprint), in first-use order."""
        seen: dict[str, Program] = {}
        for s in self.steps:
            seen.setdefault(s.program.fingerprint, s.program)
        return list(seen.values())

    def check(self) -> None:
        """Structural sanity: every step binds existing buffers of the declared dtype (ValueError)."""
        for k, s in enumerate(self.steps):
            decls = s.program.sorted_buffers
            if len(decls) != len(s.bind):
                raise ValueError(f"{self.name} step {k}: program has {len(decls)} buffers, bind has {len(s.bind)}")
            for d, name in zip(decls, s.bind):
                spec = self.buffers[name]
                if spec.dtype != d.dtype:
                    raise ValueError(f"{self.name} step {k}: {name} is {spec.dtype.value}, "
                                     f"program wants {d.dtype.value}")


def zeros(spec: BufferSpec) -> np.ndarray:
    """A zero host array for a pipeline buffer: ``(count,)``, or ``(count, lanes)`` for vectors."""
    shape = (spec.count,) if spec.dtype.lanes == 1 else (spec.count, spec.dtype.lanes)
    return np.zeros(shape, dtype=spec.dtype.numpy_dtype)


def input_list(pipeline: Pipeline, inputs: Any) -> list[Any]:
    """The caller's inputs as a list in ``pipeline.inputs`` order: an iterable (one value per input)
    or a mapping by input name. A bare array is refused (it would be split into its rows).
    Raises DispatchError."""
    if isinstance(inputs, Mapping):
        missing = [n for n in pipeline.inputs if n not in inputs]
        unknown = sorted(set(inputs) - set(pipeline.inputs))
        if missing or unknown:
            raise DispatchError(f"{pipeline.name}: inputs by name: missing {missing}, unknown {unknown}",
                                fix="pass one array for each of: " + ", ".join(pipeline.inputs))
        return [inputs[n] for n in pipeline.inputs]
    try:
        if isinstance(inputs, (np.ndarray, str, bytes)):
            raise TypeError
        values: list[Any] = list(inputs)
    except TypeError:
        raise DispatchError(f"{pipeline.name} takes a list of {len(pipeline.inputs)} input(s) "
                            f"({', '.join(pipeline.inputs)}), got a {type(inputs).__name__}",
                            fix="pass a list with one array per pipeline input") from None
    if len(values) != len(pipeline.inputs):
        raise DispatchError(
            f"{pipeline.name} takes {len(pipeline.inputs)} input(s) ({', '.join(pipeline.inputs)}), got {len(values)}",
            fix="pass one array per op input, in order",
        )
    return values


def host_inputs(pipeline: Pipeline, inputs: Any) -> list[np.ndarray]:
    """The caller's arrays as the pipeline's input buffers (see :func:`input_list` for the forms).

    Byte data (a uint8 array given for a u32 buffer) is packed with
    :func:`vyre.backends.host.pack_bytes`; the op's params carry the byte length. Arrays for
    vector buffers are flattened in C order (a (64, 100) f32 array feeds a vec4<f32> buffer of
    1600 elements). Every other array is passed through unchanged. Idempotent.
    """
    values = input_list(pipeline, inputs)
    return [pipeline_input(pipeline.buffers[name].dtype, value) for name, value in zip(pipeline.inputs, values)]


def run_pipeline(backend: Any, pipeline: Pipeline, inputs: Any) -> list[np.ndarray]:
    """Run every step on ``backend`` through ``backend.dispatch(program, inputs, config)``, one host
    round trip per step, with the host semantics of the module docstring. Returns the outputs."""
    arrays: dict[str, np.ndarray] = dict(zip(pipeline.inputs, host_inputs(pipeline, inputs)))
    for name, spec in pipeline.buffers.items():
        if name not in arrays:
            arrays[name] = zeros(spec)
    for step in pipeline.steps:
        decls = step.program.sorted_buffers
        ins = [arrays[n] for d, n in zip(decls, step.bind) if d.access.readable]
        counts = {d.name: pipeline.buffers[n].count for d, n in zip(decls, step.bind)
                  if not d.access.readable and d.count is None}
        cfg = DispatchConfig(grid=step.grid, counts=counts)
        outs = backend.dispatch(step.program, ins, cfg)
        for d, out in zip(step.program.output_buffers, outs):
            arrays[step.bind[[x.name for x in decls].index(d.name)]] = out
    result = []
    for name in pipeline.outputs:
        a = arrays[name]
        if name in pipeline.output_shapes:
            a = a.reshape(pipeline.output_shapes[name])
        result.append(a)
    return result


__all__ = ["BufferSpec", "Step", "Pipeline", "run_pipeline", "host_inputs", "input_list", "zeros"]
