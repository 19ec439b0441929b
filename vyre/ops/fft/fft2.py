"""fft.fft2 and fft.ifft2: 2-D complex transforms over the last two axes, batched, any lengths.

A row transform (length cols, over batch * rows rows), a tiled transpose, a row transform of
length rows (the columns), and the transpose back: each 1-D transform is planned by ``_plan``
(so any lengths work) and twiddle tables are shared. ``ifft2`` divides by rows * cols. Params
``rows``, ``cols``, ``batch``; pipeline data are f32 pairs ``(batch, rows, cols, 2)``, complex64
through ``vyre.ops.fft_fft2``. Tolerance: ``_io``'s bound with log2(rows) + log2(cols).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from ...backends.schedule import BufferSpec, Pipeline, Step
from ..registry import OpSpec, Tolerance, Witness, register, rel
from . import _io
from . import _pointwise as pw
from ._plan import C2, fft_steps


def build(rows: int, cols: int, batch: int, inverse: bool = False) -> Pipeline:
    if min(rows, cols, batch) < 1:
        raise ValueError(f"fft.fft2: need rows, cols, batch >= 1, got {rows}, {cols}, {batch}")
    size = rows * cols * batch
    buffers = {"x": BufferSpec(C2, size), "t1": BufferSpec(C2, size), "y": BufferSpec(C2, size)}
    steps: list = []
    fft_steps(cols, batch * rows, "x", "r1", inverse=inverse, scale=1.0 / cols if inverse else 1.0,
              buffers=buffers, steps=steps, prefix="a")
    steps.append(Step(pw.transpose(rows, cols, batch), ("r1", "t1"), pw.transpose_grid(rows, cols, batch)))
    fft_steps(rows, batch * cols, "t1", "r2", inverse=inverse, scale=1.0 / rows if inverse else 1.0,
              buffers=buffers, steps=steps, prefix="b")
    steps.append(Step(pw.transpose(cols, rows, batch), ("r2", "y"), pw.transpose_grid(cols, rows, batch)))
    return Pipeline("fft.ifft2" if inverse else "fft.fft2", buffers, ("x",), ("y",), tuple(steps),
                    output_shapes={"y": (batch, rows, cols, 2)})


def reference(x: np.ndarray, rows: int, cols: int, batch: int, inverse: bool = False) -> list[np.ndarray]:
    z = _io.as_complex(np.asarray(x).reshape(batch, rows, cols, 2))
    return [_io.reference_pairs(np.fft.ifft2(z) if inverse else np.fft.fft2(z))]


def tolerance(rows: int, cols: int, inverse: bool) -> Tolerance:
    terms = rows * cols
    atol = 8 * _io.U * (_io.effective_log2(rows) + _io.effective_log2(cols) + 2) * math.sqrt(terms)
    return rel(0.0, atol / terms if inverse else atol)


def _tolerance_for(inverse: bool) -> Callable[[dict[str, Any]], Tolerance]:
    return lambda p: tolerance(p["rows"], p["cols"], inverse)


def _params_for(op: str) -> Callable[[np.ndarray], dict[str, Any]]:
    def params_for(x: np.ndarray) -> dict[str, Any]:
        _io.complex_input(op, x, axes=2)
        rows, cols = int(x.shape[-2]), int(x.shape[-1])
        _io.check_length(op, rows)
        _io.check_length(op, cols)
        return {"rows": rows, "cols": cols, "batch": _io.batch_of(x, 2)}
    return params_for


def _witnesses(inverse: bool) -> Callable[[], list[Witness]]:
    def witnesses() -> list[Witness]:
        r = np.random.default_rng(1506 if inverse else 1505)
        return [Witness(f"{rows}x{cols}_batch{batch}", {"rows": rows, "cols": cols, "batch": batch},
                        (_io.signals(r, (batch, rows, cols)),))
                for rows, cols, batch in ((1, 1, 1), (2, 3, 2), (16, 16, 1), (5, 64, 1), (33, 20, 1))]
    return witnesses


for _inverse in (False, True):
    _id = "fft.ifft2" if _inverse else "fft.fft2"
    register(OpSpec(
        id=_id, category="fft",
        summary=("Inverse 2-D complex FFT over the last two axes (scaled by 1/(rows*cols)), complex64."
                 if _inverse else "2-D complex FFT over the last two axes, any lengths, complex64."),
        build=(lambda rows, cols, batch, inverse=_inverse: build(rows, cols, batch, inverse)),
        reference=(lambda x, rows, cols, batch, inverse=_inverse: reference(x, rows, cols, batch, inverse)),
        witnesses=_witnesses(_inverse), params_for=_params_for(_id),
        tolerance=tolerance(2, 2, _inverse),
        tolerance_for=_tolerance_for(_inverse),
        to_device=lambda x: (_io.to_pairs(x),),
        from_device=lambda outs, arrays: [_io.from_pairs(outs[0], arrays[0].shape)],
    ))
