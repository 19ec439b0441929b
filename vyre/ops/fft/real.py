"""fft.rfft and fft.irfft: real-input FFT (n // 2 + 1 bins) and its inverse, over the last axis.

``rfft``: f32 ``(batch, n)`` in, the first ``n // 2 + 1`` bins of the complex FFT out (f32 pairs
``(batch, n // 2 + 1, 2)``; complex64 through ``vyre.ops.fft_rfft``). ``irfft``: those bins in,
n real values out, numpy's rules: bins past the half are the conjugates of the first ones, so
the imaginary parts of bin 0 (and of bin n/2 for even n) do not matter. Param ``n`` is the output
length (default ``2 * (bins - 1)``, as numpy); it must give ``n // 2 + 1`` bins. Both run the
complex transform of length n (``_plan``) between two element-wise programs.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...backends.schedule import BufferSpec, Pipeline, Step
from ...errors import DispatchError
from ...ir.types import DataType
from ..registry import OpSpec, Witness, register
from . import _io
from . import _pointwise as pw
from ._plan import C2, fft_steps


def build_rfft(n: int, batch: int) -> Pipeline:
    if n < 1 or batch < 1:
        raise ValueError(f"fft.rfft: need n >= 1 and batch >= 1, got n={n}, batch={batch}")
    half = n // 2 + 1
    buffers = {"x": BufferSpec(DataType.F32, n * batch), "xc": BufferSpec(C2, n * batch),
               "y": BufferSpec(C2, half * batch)}
    steps: list = [Step(pw.real_to_complex(n * batch), ("x", "xc"), pw.grid(n * batch))]
    fft_steps(n, batch, "xc", "full", inverse=False, scale=1.0, buffers=buffers, steps=steps)
    steps.append(Step(pw.crop_rows(n, half, batch), ("full", "y"), pw.grid(half * batch)))
    return Pipeline("fft.rfft", buffers, ("x",), ("y",), tuple(steps), output_shapes={"y": (batch, half, 2)})


def build_irfft(n: int, batch: int) -> Pipeline:
    if n < 1 or batch < 1:
        raise ValueError(f"fft.irfft: need n >= 1 and batch >= 1, got n={n}, batch={batch}")
    half = n // 2 + 1
    buffers = {"x": BufferSpec(C2, half * batch), "full": BufferSpec(C2, n * batch),
               "y": BufferSpec(DataType.F32, n * batch)}
    steps: list = [Step(pw.hermitian_extend(n, batch), ("x", "full"), pw.grid(n * batch))]
    fft_steps(n, batch, "full", "time", inverse=True, scale=1.0 / n, buffers=buffers, steps=steps)
    steps.append(Step(pw.complex_to_real(n * batch), ("time", "y"), pw.grid(n * batch)))
    return Pipeline("fft.irfft", buffers, ("x",), ("y",), tuple(steps), output_shapes={"y": (batch, n)})


def reference_rfft(x: np.ndarray, n: int, batch: int) -> list[np.ndarray]:
    return [_io.reference_pairs(np.fft.rfft(np.asarray(x, np.float64).reshape(batch, n)))]


def reference_irfft(x: np.ndarray, n: int, batch: int) -> list[np.ndarray]:
    z = _io.as_complex(np.asarray(x).reshape(batch, n // 2 + 1, 2))
    return [np.fft.irfft(z, n).astype(np.float32)]


def params_rfft(x: np.ndarray) -> dict[str, Any]:
    if x.dtype != np.float32:
        raise DispatchError(f"fft.rfft takes real f32 input, got {x.dtype}",
                            fix="pass x.astype(np.float32); complex input goes to fft.fft")
    _io.check_shape("fft.rfft", x, 1)
    n = int(x.shape[-1])
    _io.check_length("fft.rfft", n)
    return {"n": n, "batch": _io.batch_of(x, 1)}


def params_irfft(x: np.ndarray, n: int | None = None) -> dict[str, Any]:
    _io.complex_input("fft.irfft", x)
    bins = int(x.shape[-1])
    n = 2 * (bins - 1) if n is None else int(n)
    if n < 1 or n // 2 + 1 != bins:
        raise DispatchError(f"fft.irfft: {bins} bins cannot give n={n} outputs (n // 2 + 1 bins are needed)",
                            fix=f"pass n={2 * (bins - 1)} or n={2 * bins - 1} (or pad/crop the bins to n // 2 + 1)")
    _io.check_length("fft.irfft", n)
    return {"n": n, "batch": _io.batch_of(x, 1)}


def witnesses_rfft() -> list[Witness]:
    r = np.random.default_rng(1503)
    return [Witness(f"n{n}_batch{batch}", {"n": n, "batch": batch},
                    (r.uniform(-1.0, 1.0, (batch, n)).astype(np.float32),))
            for n, batch in ((1, 2), (2, 1), (3, 1), (8, 3), (17, 1), (100, 2), (256, 1), (1000, 1), (1024, 2))]


def witnesses_irfft() -> list[Witness]:
    r = np.random.default_rng(1504)
    return [Witness(f"n{n}_batch{batch}", {"n": n, "batch": batch}, (_io.signals(r, (batch, n // 2 + 1)),))
            for n, batch in ((1, 1), (2, 2), (3, 1), (8, 1), (9, 2), (100, 1), (101, 1), (256, 2), (1024, 1))]


register(OpSpec(
    id="fft.rfft", category="fft",
    summary="FFT of real f32 input over the last axis: the n // 2 + 1 non-negative frequency bins, complex64.",
    build=build_rfft, reference=reference_rfft, witnesses=witnesses_rfft, params_for=params_rfft,
    tolerance=_io.fft_tolerance(2, False), tolerance_for=lambda p: _io.fft_tolerance(p["n"], False),
    from_device=lambda outs, arrays: [_io.from_pairs(outs[0], (*arrays[0].shape[:-1], arrays[0].shape[-1] // 2 + 1))],
))

register(OpSpec(
    id="fft.irfft", category="fft",
    summary="Inverse of fft.rfft: n // 2 + 1 complex64 bins to n real f32 values (param n), scaled by 1/n.",
    build=build_irfft, reference=reference_irfft, witnesses=witnesses_irfft, params_for=params_irfft,
    tolerance=_io.fft_tolerance(2, True), tolerance_for=lambda p: _io.fft_tolerance(p["n"], True),
    to_device=lambda x: (_io.to_pairs(x),),
    from_device=lambda outs, arrays: [np.asarray(outs[0]).reshape(*arrays[0].shape[:-1], -1)],
))
