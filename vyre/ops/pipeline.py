"""Op-level conveniences over pipelines (:func:`single`: a one-program op as a one-step pipeline;
:class:`ResidentPipeline`: a pipeline on resident buffers, ready to launch repeatedly).

The pipeline description itself (:class:`BufferSpec`, :class:`Step`, :class:`Pipeline`) and
the generic host runner :func:`run_pipeline` live at the backend layer, in
:mod:`vyre.backends.schedule`, so that backends can name them; they are re-exported here
for compatibility. Every backend runs a pipeline with ``backend.run_pipeline(pipeline, inputs)``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..backends.base import Backend, ResidentUpload
from ..backends.config import DispatchConfig
from ..backends.handles import ResidentHandle
from ..backends.host import host_to_storage, pack_bytes, storage_nbytes  # noqa: F401  (pack_bytes: re-exported)
from ..backends.schedule import BufferSpec, Pipeline, Step, host_inputs, run_pipeline  # noqa: F401  (re-exported)
from ..ir.program import BufferDecl, Program
from ..ir.types import Access


def single(program: Program, *, grid: tuple[int, int, int] | None = None,
           output_shapes: dict[str, tuple[int, ...]] | None = None, counts: dict[str, int] | None = None,
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


def execute(backend: Backend, pipe: Pipeline, arrays: Any) -> list[np.ndarray]:
    """Run a built pipeline the way the convenience layer does (``vyre.ops.api.execute``): inputs through
    :func:`~vyre.backends.schedule.host_inputs` (byte data packed, vector arrays flattened),
    then ``backend.run_pipeline`` (every backend has one: see :class:`vyre.backends.base.Backend`;
    ``backend.capabilities().native_pipelines`` tells whether it keeps intermediates on the device)."""
    return backend.run_pipeline(pipe, host_inputs(pipe, arrays))


class ResidentPipeline:
    """``pipe`` on ``backend``'s resident buffers: one handle per pipeline buffer (``handles``), the
    inputs uploaded once, and ``steps`` ready for ``dispatch_resident_sequence*`` (repeat them to time
    k launches). ``free()`` releases the handles (the tuner and the benches time ops this way)."""

    def __init__(self, backend: Backend, pipe: Pipeline, inputs: Sequence[Any], label: str = "resident") -> None:
        self.backend, self.pipe = backend, pipe
        self.handles: dict[str, ResidentHandle] = {}
        try:
            for name, spec in pipe.buffers.items():
                nbytes = storage_nbytes(spec.dtype, spec.count)
                self.handles[name] = backend.allocate_resident(nbytes, label=f"{label}:{name}")
            ups: list[ResidentUpload] = []
            for name, arr in zip(pipe.inputs, host_inputs(pipe, inputs)):
                spec = pipe.buffers[name]
                decl = BufferDecl(name=name, binding=0, dtype=spec.dtype, access=Access.READ, count=spec.count)
                ups.append((self.handles[name], host_to_storage(decl, arr)[0].reshape(-1).view(np.uint8)))
            backend.upload_resident_many(ups)
        except BaseException:
            self.free()
            raise
        self.steps: list[tuple[Program, list[ResidentHandle], DispatchConfig]] = []
        for step in pipe.steps:
            counts = {d.name: pipe.buffers[n].count for d, n in zip(step.program.sorted_buffers, step.bind)
                      if d.count is None}
            self.steps.append((step.program, [self.handles[n] for n in step.bind],
                               DispatchConfig(grid=step.grid, counts=counts)))

    def free(self) -> None:
        """Free the handles (best effort: a lost device frees everything anyway)."""
        for h in self.handles.values():
            try:
                self.backend.free_resident(h)
            except Exception:  # noqa: BLE001
                pass
        self.handles = {}


__all__ = ["BufferSpec", "Step", "Pipeline", "single", "execute", "run_pipeline", "host_inputs", "pack_bytes",
           "ResidentPipeline"]
