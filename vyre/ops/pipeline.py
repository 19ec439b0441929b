"""Op-level conveniences over pipelines (:func:`single`: a one-program op as a one-step pipeline).

The pipeline description itself (:class:`BufferSpec`, :class:`Step`, :class:`Pipeline`) and
the generic host runner :func:`run_pipeline` live at the backend layer, in
:mod:`vyre.backends.schedule`, so that backends can name them; they are re-exported here
for compatibility. Every backend runs a pipeline with ``backend.run_pipeline(pipeline, inputs)``.
"""

from __future__ import annotations

from ..backends.host import pack_bytes  # noqa: F401  (re-exported)
from ..backends.schedule import BufferSpec, Pipeline, Step, host_inputs, run_pipeline  # noqa: F401  (re-exported)
from ..ir.program import Program


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


__all__ = ["BufferSpec", "Step", "Pipeline", "single", "run_pipeline", "host_inputs", "pack_bytes"]
