"""Running an op-library :class:`~vyre.backends.schedule.Pipeline` on arrays' resident buffers, in one
submission, with the host semantics of vyre/backends/schedule.py (non-input buffers start at zero; a
step's ``write`` buffers are zeroed before it: fresh buffers already are, a buffer written by an earlier
step gets a zero-fill step). The run is deferred (fused.Deferred on the outputs' buffers) into the
submission of whatever reads an output first (``int(x.argmax())``: one submission), pending inputs
computed in it too. The inputs' buffers are captured at the call, and an input a step writes is copied
first, so the caller's arrays never change and later changes to them do not reach the run."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ...backends.config import DispatchConfig
from ...errors import DispatchError, InvalidArgumentError
from ...ir.builder import ProgramBuilder
from ...ir.program import Program
from ...ir.types import Access
from .._array import Array, Buffer
from .._device import current_backend, same_device
from . import cache
from . import dtypes as D
from .fused import Deferred, Plan, plan
from .gather import copy_step
from .nodes import Leaf


@cache.memoized("pipeline.zero_fill", 1, Program)
def _zero_program() -> Program:
    b = ProgramBuilder("array_zero_fill", 256)
    w = b.buffer("w", "u32", "write")
    b.set_grid_from(w)
    i = b.global_index()
    with b.if_(i < w.len()):
        w[i] = b.lit(0, "u32")
    return b.build()


def run_pipeline_on(pipeline: Any, arrays: Sequence[Array]) -> list[Array]:
    """Run ``pipeline`` with ``arrays`` as its inputs (in ``pipeline.inputs`` order; dtype and element
    count must match each BufferSpec, a ``vecN`` buffer of n elements taking an array of n * N scalars;
    any shape) on their backend, intermediates and outputs as resident buffers, one submission. Returns
    the outputs as new arrays (shaped per ``output_shapes``, else 1-D; vecN outputs as n * N scalars)."""
    ins = list(arrays)
    if len(ins) != len(pipeline.inputs) or not all(isinstance(a, Array) for a in ins):
        raise InvalidArgumentError(f"{pipeline.name} takes {len(pipeline.inputs)} array(s) "
                                   f"({', '.join(pipeline.inputs)})",
                                   fix="pass one vyre array per pipeline input, in order")
    dev = same_device(ins, pipeline.name) if ins else None
    if dev is None:
        dev = current_backend()
    written = {n for s in pipeline.steps for d, n in zip(s.program.sorted_buffers, s.bind) if d.access.writable}
    for name, spec in pipeline.buffers.items():
        if spec.dtype.lanes == 3:  # vec3 elements are padded to 4 in storage: no array has that layout
            raise DispatchError(f"{pipeline.name}: buffer {name} is {spec.dtype.value} (padded in storage), "
                                "which no array's layout matches", fix="run it with backend.run_pipeline")
    for name, a in zip(pipeline.inputs, ins):
        spec = pipeline.buffers[name]
        want = spec.count * spec.dtype.lanes  # a vecN buffer of n elements is an array of n * N scalars
        if D.ir_type(a.dtype) != spec.dtype.scalar or a.size != want:
            raise InvalidArgumentError(f"{pipeline.name}: input {name} wants {want} x {spec.dtype.scalar.value} "
                                       f"({spec.count} x {spec.dtype.value}), got {a.dtype}{list(a.shape)}",
                                       fix="astype/reshape the array to match")
    # the inputs' buffers are captured now (later changes to the arrays do not reach this run); an
    # input a step writes is copied into a fresh buffer by the first steps
    leaves = [Leaf(a) for a in ins]
    collect = Plan(dev)  # gathers the copy steps
    handles: dict[str, Any] = {}
    fresh: dict[str, Array] = {}
    for name, a, leaf in zip(pipeline.inputs, ins, leaves):
        if name in written:
            fresh[name] = Array((a.size,), a.dtype, dev)
            handles[name] = fresh[name]._allocate()
            if a.size:
                copy_step(collect, leaf.handle(), handles[name], a.size, a.dtype)
        else:
            handles[name] = leaf.handle()
    for name, spec in pipeline.buffers.items():
        if name not in handles:
            fresh[name] = Array((spec.count * spec.dtype.lanes,), D.as_dtype(spec.dtype.numpy_dtype), dev)
            handles[name] = fresh[name]._allocate()
    steps = collect.steps
    touched: set[str] = set(pipeline.inputs)
    for step in pipeline.steps:
        decls = step.program.sorted_buffers
        for d, name in zip(decls, step.bind):
            if d.access == Access.WRITE and name in touched:
                h = handles[name]
                steps.append((_zero_program(), [h], DispatchConfig(counts={"w": h.nbytes // 4})))
        counts = {d.name: pipeline.buffers[n].count for d, n in zip(decls, step.bind) if d.count is None}
        steps.append((step.program, [handles[n] for n in step.bind], DispatchConfig(grid=step.grid, counts=counts)))
        touched.update(n for d, n in zip(decls, step.bind) if d.access.writable)

    def build(p: Plan, handle: Any) -> None:
        # the steps bind these buffers: they stay alive until the run (the outputs' buffers too, a
        # reference cycle through their pending work while unread, which the GC collects)
        assert fresh and leaves is not None
        p.steps.extend(steps)

    fills: dict[int, Buffer] = {}
    for n in pipeline.outputs:
        b = fresh[n]._buf if n in fresh else None
        if b is not None:
            fills[id(b)] = b
    if fills:  # deferred: runs in the submission of whatever reads an output first
        work = Deferred(tuple(leaves), build, tuple(fills.values()))
        for buf in fills.values():
            buf.pending = work
    else:  # every output is an input the steps only read: run now
        p = plan([], dev, leaves)
        build(p, None)
        p.run()
    out = []
    for name in pipeline.outputs:
        spec = pipeline.buffers[name]
        shape = tuple(pipeline.output_shapes.get(name, (spec.count,)))
        if spec.dtype.lanes > 1:
            shape += (spec.dtype.lanes,)
        src = fresh.get(name)
        r = Array(shape, src.dtype if src is not None else ins[pipeline.inputs.index(name)].dtype, dev)
        r._buf = src._buf if src is not None else leaves[pipeline.inputs.index(name)].buf
        out.append(r)
    return out


__all__ = ["run_pipeline_on"]
