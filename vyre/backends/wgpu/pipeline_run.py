"""``run_pipeline``: an op pipeline (vyre.ops.pipeline.Pipeline) run on the device in one submit.

Every pipeline buffer lives in a resident buffer, kept per pipeline shape (buffer names,
dtypes, counts) so repeated calls allocate nothing. One command encoder holds the input
uploads (one staging operation), zeroing of every other buffer, all steps in a compute
pass and the copies of the outputs (one readback). The host semantics of
``vyre.ops.pipeline.run_pipeline`` are kept exactly: buffers that are not inputs start at
zero, and a step's ``write`` buffer is zero-initialised when an earlier step (or the
input) left data in it, which splits the pass there (clears cannot go inside a pass).

The pipeline is duck-typed (``buffers``, ``inputs``, ``outputs``, ``steps``,
``output_shapes``), so this layer does not import vyre.ops.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from ...errors import DispatchError
from ...ir.program import BufferDecl
from ...ir.types import Access
from ..config import DispatchConfig
from ..host import host_to_storage, pipeline_input, storage_nbytes, storage_to_host


def _decl(name: str, spec, access: Access) -> BufferDecl:
    return BufferDecl(name=name, binding=0, dtype=spec.dtype, access=access, count=spec.count)


class PipelineMixin:
    """Runs op pipelines over resident buffers (mixed into WgpuBackend through ResidentMixin)."""

    #: Pipeline shapes whose resident buffers are kept (least recently used ones are freed).
    pipeline_shape_cap = 8

    def run_pipeline(self, pipeline, inputs) -> list[np.ndarray]:
        """Run every step of ``pipeline`` on the device; returns its outputs (reshaped per
        ``output_shapes``), equal to ``vyre.ops.pipeline.run_pipeline`` on any backend. Inputs
        follow ``host_inputs``: byte data for u32 buffers is packed, vector arrays flattened."""
        if isinstance(inputs, Mapping):
            missing = [n for n in pipeline.inputs if n not in inputs]
            if missing:
                raise DispatchError(f"{pipeline.name}: missing input(s) {missing}")
            inputs = [inputs[n] for n in pipeline.inputs]
        if isinstance(inputs, np.ndarray) or len(inputs) != len(pipeline.inputs):
            got = 1 if isinstance(inputs, np.ndarray) else len(inputs)
            raise DispatchError(f"{pipeline.name} takes {len(pipeline.inputs)} input(s) "
                                f"({', '.join(pipeline.inputs)}), got {got}",
                                fix="pass a list with one array per pipeline input")
        staged = {}
        for name, value in zip(pipeline.inputs, inputs):
            spec = pipeline.buffers[name]
            data, _ = host_to_storage(_decl(name, spec, Access.READ), pipeline_input(spec.dtype, value))
            staged[name] = data.reshape(-1).view(np.uint8)
        with self._lock:
            st = self._ready()
            handles = self._pipeline_handles(st, pipeline)
            bufs = {n: self._buffer(st, h, pipeline.name) for n, h in handles.items()}
            segments = self._pipeline_segments(st, pipeline, handles, bufs)
            uploads = [(bufs[n], 0, d) for n, d in staged.items() if d.nbytes]
            reads = [(bufs[n], 0, handles[n].nbytes) for n in pipeline.outputs]
            raw = self._submit_sequence(st, segments, reads, False, f"vyre-pipeline:{pipeline.name}", uploads)
        outs = []
        for name, r in zip(pipeline.outputs, raw):
            spec = pipeline.buffers[name]
            a = storage_to_host(_decl(name, spec, Access.READ_WRITE), r, spec.count)
            shape = pipeline.output_shapes.get(name)
            outs.append(a.reshape(shape) if shape is not None else a)
        return outs

    def _pipeline_segments(self, st, pipeline, handles, bufs) -> list:
        """Prepare every step; group them into passes separated by the clears host semantics need."""
        dirty = set(pipeline.inputs)  # buffers holding data (not all zero) at this point
        clears = [(bufs[n], handles[n].nbytes) for n in pipeline.buffers if n not in dirty]
        segments, steps = [], []
        for k, step in enumerate(pipeline.steps):
            decls = step.program.sorted_buffers
            if len(decls) != len(step.bind):
                raise DispatchError(f"{pipeline.name} step {k}: program {step.program.name!r} has {len(decls)} "
                                    f"buffer(s), the step binds {len(step.bind)}")
            unknown = [n for n in step.bind if n not in handles]
            if unknown:
                raise DispatchError(f"{pipeline.name} step {k} binds unknown buffer(s) {unknown}")
            counts = {d.name: pipeline.buffers[n].count for d, n in zip(decls, step.bind) if d.count is None}
            config = DispatchConfig(grid=step.grid, counts=counts)
            prepared = self._prepare(st, step.program, [handles[n] for n in step.bind], config,
                                     f"{pipeline.name} step {k}")
            stale = list(dict.fromkeys(n for d, n in zip(decls, step.bind) if d.access is Access.WRITE and n in dirty))
            if stale:
                segments.append((clears, steps))
                clears, steps = [(bufs[n], handles[n].nbytes) for n in stale], []
                dirty.difference_update(stale)
            steps.append(prepared)
            if prepared.total:
                dirty.update(n for d, n in zip(decls, step.bind) if d.access.writable)
        segments.append((clears, steps))
        return segments

    def _pipeline_handles(self, st, pipeline) -> dict:
        """Resident buffers for every pipeline buffer, shared by calls with the same shape."""
        key = tuple(sorted((n, s.dtype.value, int(s.count)) for n, s in pipeline.buffers.items()))
        hit = st.pipelines.get(key)
        if hit is not None:
            st.pipelines.move_to_end(key)
            return hit
        handles = {}
        try:
            for name, spec in pipeline.buffers.items():
                handles[name] = self.allocate_resident(storage_nbytes(spec.dtype, spec.count),
                                                       label=f"vyre-pipeline:{pipeline.name}.{name}")
        except BaseException:
            for h in handles.values():
                self.free_resident(h)
            raise
        st.pipelines[key] = handles
        while len(st.pipelines) > self.pipeline_shape_cap:
            _, old = st.pipelines.popitem(last=False)
            for h in old.values():
                self.free_resident(h)
        return handles


__all__ = ["PipelineMixin"]
