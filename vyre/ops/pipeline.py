"""Pipelines: an op is one or more programs run in order over named buffers.

A single-program op (map, zip, ...) is a pipeline of one step. Multi-block reductions,
scans and sorts chain several steps through intermediate buffers. :func:`run_pipeline`
runs a pipeline on any backend with a ``dispatch`` method (host round trip per step);
when the backend offers ``dispatch_resident_sequence`` the runtime keeps intermediates on
the device instead (see :func:`run_pipeline`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..backends.config import DispatchConfig
from ..backends.host import pack_bytes, pipeline_input  # noqa: F401  (pack_bytes re-exported)
from ..ir.program import Program
from ..ir.types import DataType


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
    name: str
    buffers: dict[str, BufferSpec]
    inputs: tuple[str, ...]  # supplied by the caller, in this order
    outputs: tuple[str, ...]  # returned, in this order
    steps: tuple[Step, ...]
    output_shapes: dict[str, tuple[int, ...]] = field(default_factory=dict)  # reshape of flat outputs

    @property
    def programs(self) -> list[Program]:
        seen: dict[str, Program] = {}
        for s in self.steps:
            seen.setdefault(s.program.fingerprint, s.program)
        return list(seen.values())

    def check(self) -> None:
        """Structural sanity: every step binds existing buffers of the declared dtype."""
        for k, s in enumerate(self.steps):
            decls = s.program.sorted_buffers
            if len(decls) != len(s.bind):
                raise ValueError(f"{self.name} step {k}: program has {len(decls)} buffers, bind has {len(s.bind)}")
            for d, name in zip(decls, s.bind):
                spec = self.buffers[name]
                if spec.dtype != d.dtype:
                    raise ValueError(f"{self.name} step {k}: {name} is {spec.dtype.value}, program wants {d.dtype.value}")


def single(program: Program, *, grid=None, output_shapes=None, counts: dict[str, int] | None = None,
           input_counts: dict[str, int] | None = None) -> Pipeline:
    """A one-step pipeline whose buffers are the program's own buffers.

    ``input_counts``/``counts`` give element counts for runtime-sized buffers.
    """
    sizes = {**(input_counts or {}), **(counts or {})}
    buffers = {}
    for d in program.sorted_buffers:
        n = d.count if d.count is not None else sizes.get(d.name)
        if n is None:
            raise ValueError(f"single(): give the element count of runtime-sized buffer {d.name!r}")
        buffers[d.name] = BufferSpec(d.dtype, n)
    return Pipeline(
        name=program.name, buffers=buffers,
        inputs=tuple(d.name for d in program.input_buffers),
        outputs=tuple(d.name for d in program.output_buffers),
        steps=(Step(program, tuple(d.name for d in program.sorted_buffers), grid),),
        output_shapes=dict(output_shapes or {}),
    )


def _zeros(spec: BufferSpec) -> np.ndarray:
    shape = (spec.count,) if spec.dtype.lanes == 1 else (spec.count, spec.dtype.lanes)
    return np.zeros(shape, dtype=spec.dtype.numpy_dtype)


def host_inputs(pipeline: Pipeline, inputs) -> list[np.ndarray]:
    """The caller's arrays as the pipeline's input buffers.

    Byte data (a uint8 array given for a u32 buffer) is packed with :func:`pack_bytes`; the
    op's params carry the byte length. Arrays for vector buffers are flattened in C order (a
    (64, 100) f32 array feeds a vec4<f32> buffer of 1600 elements). Every other array is
    passed through unchanged.
    """
    from ..errors import DispatchError

    inputs = list(inputs)
    if len(inputs) != len(pipeline.inputs):
        raise DispatchError(
            f"{pipeline.name} takes {len(pipeline.inputs)} input(s) ({', '.join(pipeline.inputs)}), got {len(inputs)}",
            fix="pass one array per op input, in order",
        )
    return [pipeline_input(pipeline.buffers[name].dtype, value) for name, value in zip(pipeline.inputs, inputs)]


def run_pipeline(backend, pipeline: Pipeline, inputs) -> list[np.ndarray]:
    """Run every step on ``backend`` (anything with ``dispatch(program, inputs, config)``)."""
    arrays: dict[str, np.ndarray] = dict(zip(pipeline.inputs, host_inputs(pipeline, inputs)))
    for name, spec in pipeline.buffers.items():
        if name not in arrays:
            arrays[name] = _zeros(spec)
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


__all__ = ["BufferSpec", "Step", "Pipeline", "single", "run_pipeline", "host_inputs", "pack_bytes"]
