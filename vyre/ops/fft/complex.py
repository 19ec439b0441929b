"""fft.fft and fft.ifft: complex-to-complex transforms over the last axis, batched, any length.

numpy's conventions: ``X[k] = sum_j x[j] exp(-2 pi i j k / n)``; ``ifft`` uses ``+`` and divides
by n ("backward" norm). Params ``n`` (the last axis) and ``batch`` (every other axis together).
The pipeline's input ``x`` and output ``y`` are ``vec2<f32>`` buffers (f32 pairs, shape
``(batch, n, 2)``); ``vyre.ops.fft_fft(gpu, x)`` takes complex64 of any shape ``(..., n)`` and
returns complex64 of the same shape. The plan (one workgroup-memory pass, four-step, or Bluestein)
is in ``_plan``; the tolerance in ``_io``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ...backends.schedule import BufferSpec, Pipeline
from ..registry import OpSpec, Tolerance, Witness, register
from . import _io
from ._plan import C2, fft_steps


def build(n: int, batch: int, inverse: bool = False) -> Pipeline:
    if n < 1 or batch < 1:
        raise ValueError(f"fft: need n >= 1 and batch >= 1, got n={n}, batch={batch}")
    buffers = {"x": BufferSpec(C2, n * batch)}
    steps: list = []
    fft_steps(n, batch, "x", "y", inverse=inverse, scale=1.0 / n if inverse else 1.0, buffers=buffers, steps=steps)
    return Pipeline("fft.ifft" if inverse else "fft.fft", buffers, ("x",), ("y",), tuple(steps),
                    output_shapes={"y": (batch, n, 2)})


def reference(x: np.ndarray, n: int, batch: int, inverse: bool = False) -> list[np.ndarray]:
    z = _io.as_complex(np.asarray(x).reshape(batch, n, 2))
    return [_io.reference_pairs(np.fft.ifft(z) if inverse else np.fft.fft(z))]


def _params_for(op: str) -> Callable[[np.ndarray], dict[str, Any]]:
    def params_for(x: np.ndarray) -> dict[str, Any]:
        _io.complex_input(op, x)
        n = int(x.shape[-1])
        _io.check_length(op, n)
        return {"n": n, "batch": _io.batch_of(x, 1)}
    return params_for


def _witnesses(inverse: bool) -> Callable[[], list[Witness]]:
    def witnesses() -> list[Witness]:
        r = np.random.default_rng(1502 if inverse else 1501)
        ws = []
        for n, batch in ((1, 3), (2, 1), (3, 2), (5, 1), (7, 1), (8, 4), (16, 1), (17, 2), (100, 1), (256, 2),
                         (1000, 1), (1024, 1), (4096, 1)):
            ws.append(Witness(f"n{n}_batch{batch}", {"n": n, "batch": batch}, (_io.signals(r, (batch, n)),)))
        for n in (8, 12, 4096):
            for name, x in _io.specials(n).items():
                ws.append(Witness(f"{name}_n{n}", {"n": n, "batch": 1}, (x,)))
        return ws
    return witnesses


def _from_device(outs: list[np.ndarray], arrays: tuple[np.ndarray, ...]) -> list[np.ndarray]:
    return [_io.from_pairs(outs[0], arrays[0].shape)]


def _tolerance(inverse: bool) -> Callable[[dict[str, Any]], Tolerance]:
    return lambda params: _io.fft_tolerance(params["n"], inverse)


for _inverse in (False, True):
    _id = "fft.ifft" if _inverse else "fft.fft"
    register(OpSpec(
        id=_id, category="fft",
        summary=("Inverse complex FFT over the last axis (scaled by 1/n), any length, complex64."
                 if _inverse else "Complex FFT over the last axis, any length, complex64."),
        build=(lambda n, batch, inverse=_inverse: build(n, batch, inverse)),
        reference=(lambda x, n, batch, inverse=_inverse: reference(x, n, batch, inverse)),
        witnesses=_witnesses(_inverse),
        params_for=_params_for(_id),
        tolerance=_io.fft_tolerance(2, _inverse), tolerance_for=_tolerance(_inverse),
        to_device=lambda x: (_io.to_pairs(x),), from_device=_from_device,
    ))
