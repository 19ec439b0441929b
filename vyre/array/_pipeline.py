"""Running an op-library :class:`~vyre.backends.schedule.Pipeline` on arrays' resident buffers, in one
submission, with the host semantics of vyre/backends/schedule.py (non-input buffers start at zero; a
step's ``write`` buffers are zeroed before it: fresh buffers already are, a buffer written by an earlier
step gets a zero-fill step). Pending inputs are evaluated in the same submission; an input a step writes
is copied first, so the caller's arrays never change."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..backends.config import DispatchConfig
from ..errors import DispatchError
from ..ir.builder import ProgramBuilder
from ..ir.program import Program
from ..ir.types import Access
from . import _dtypes as D
from ._array import Array
from ._device import same_device
from ._fuse import plan

_zero: Program | None = None


def _zero_program() -> Program:
    global _zero
    if _zero is None:
        b = ProgramBuilder("array_zero_fill", 256)
        w = b.buffer("w", "u32", "write")
        b.set_grid_from(w)
        i = b.global_index()
        with b.if_(i < w.len()):
            w[i] = b.lit(0, "u32")
        _zero = b.build()
    return _zero


def run_pipeline_on(pipeline: Any, arrays: Sequence[Array]) -> list[Array]:
    """Run ``pipeline`` with ``arrays`` as its inputs (in ``pipeline.inputs`` order; dtype and element
    count must match each BufferSpec, a ``vecN`` buffer of n elements taking an array of n * N scalars;
    any shape) on their backend, intermediates and outputs as resident buffers, one submission. Returns
    the outputs as new arrays (shaped per ``output_shapes``, else 1-D; vecN outputs as n * N scalars)."""
    ins = list(arrays)
    if len(ins) != len(pipeline.inputs) or not all(isinstance(a, Array) for a in ins):
        raise DispatchError(f"{pipeline.name} takes {len(pipeline.inputs)} array(s) ({', '.join(pipeline.inputs)})",
                            fix="pass one vyre array per pipeline input, in order")
    dev = same_device(ins, pipeline.name) if ins else None
    if dev is None:
        from ._device import current_backend
        dev = current_backend()
    written = {n for s in pipeline.steps for d, n in zip(s.program.sorted_buffers, s.bind) if d.access.writable}
    bufs: dict[str, Array] = {}
    for name, spec in pipeline.buffers.items():
        if spec.dtype.lanes == 3:  # vec3 elements are padded to 4 in storage: no array has that layout
            raise DispatchError(f"{pipeline.name}: buffer {name} is {spec.dtype.value} (padded in storage), "
                                "which no array's layout matches", fix="run it with backend.run_pipeline")
    for name, a in zip(pipeline.inputs, ins):
        spec = pipeline.buffers[name]
        want = spec.count * spec.dtype.lanes  # a vecN buffer of n elements is an array of n * N scalars
        if D.ir_type(a.dtype) != spec.dtype.scalar or a.size != want:
            raise DispatchError(f"{pipeline.name}: input {name} wants {want} x {spec.dtype.scalar.value} "
                                f"({spec.count} x {spec.dtype.value}), got {a.dtype}{list(a.shape)}",
                                fix="astype/reshape the array to match")
        if name in written:
            from ._functions import astype
            a = astype(a, a.dtype, copy=True)
        bufs[name] = a
    for name, spec in pipeline.buffers.items():
        if name not in bufs:
            arr = Array((spec.count * spec.dtype.lanes,), D.as_dtype(spec.dtype.numpy_dtype), dev)
            arr._allocate()
            bufs[name] = arr
    p = plan([a for a in bufs.values() if a.is_lazy], dev)
    touched: set[str] = set(pipeline.inputs)
    for step in pipeline.steps:
        decls = step.program.sorted_buffers
        for d, name in zip(decls, step.bind):
            if d.access == Access.WRITE and name in touched:
                h = bufs[name]._allocate()
                p.steps.append((_zero_program(), [h], DispatchConfig(counts={"w": h.nbytes // 4})))
        counts = {d.name: pipeline.buffers[n].count for d, n in zip(decls, step.bind) if d.count is None}
        p.steps.append((step.program, [bufs[n]._allocate() for n in step.bind],
                        DispatchConfig(grid=step.grid, counts=counts)))
        touched.update(n for d, n in zip(decls, step.bind) if d.access.writable)
    p.run()
    out = []
    for name in pipeline.outputs:
        a, spec = bufs[name], pipeline.buffers[name]
        shape = tuple(pipeline.output_shapes.get(name, (spec.count,)))
        if spec.dtype.lanes > 1:
            shape += (spec.dtype.lanes,)
        r = Array(shape, a.dtype, dev)
        r._buf = a._buf
        out.append(r)
    return out


__all__ = ["run_pipeline_on"]
