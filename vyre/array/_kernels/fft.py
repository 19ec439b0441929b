"""The op library's FFT pipelines (vyre/ops/fft: radix-4/2 in workgroup memory for powers of two, four-step
up to 2^22, Bluestein's chirp-z over a power-of-two FFT for every other length) run on arrays along their
last axis, in the submission of whatever reads the result (``run_pipeline_on``: deferred). The public
functions (axes, ``n``, ``norm``) are vyre/array/fft.py.

A complex64 array's buffer is the pipelines' ``vec2<f32>`` layout already: the input is shared as a
float32 array of twice the elements (a pending input is computed into its buffer in the same submission)
and the output's buffer becomes the result's. Pipelines are cached per (kind, n, batch).
"""

from __future__ import annotations

import functools
from typing import Any

from ...errors import DispatchError
from .._array import Array
from . import dtypes as D
from .pipeline import run_pipeline_on


@functools.lru_cache(maxsize=64)
def _pipeline(kind: str, n: int, batch: int) -> Any:
    from ...ops.fft import complex as c2c  # why: vyre.ops loads the wgpu backend; imported on first use
    from ...ops.fft import real

    if kind == "rfft":
        return real.build_rfft(n, batch)
    if kind == "irfft":
        return real.build_irfft(n, batch)
    return c2c.build(n, batch, inverse=kind == "ifft")


def check_length(what: str, n: int) -> None:
    """``n`` is a length the pipelines run (1 .. 2^21, or a power of two up to 2^22), else DispatchError."""
    from ...ops.fft import _io  # why: as _pipeline

    _io.check_length(what, n)


def _share(x: Array, shape: tuple[int, ...], dtype: D.DType) -> Array:
    """``x``'s buffer (allocated now: a pending ``x`` is computed into it first) as an array of ``shape``."""
    x._allocate()
    r = Array(shape, dtype, x.device)
    r._buf = x._buf
    return r


def last_axis(kind: str, x: Array, n: int) -> Array:
    """The transform ``kind`` ('fft', 'ifft': complex64 in and out, numpy's 1/n in ifft; 'rfft': float32
    of length n in, n // 2 + 1 complex64 bins out; 'irfft': n // 2 + 1 complex64 bins in, n float32 out,
    1/n) over the last axis of ``x`` (its length already n, or n // 2 + 1 bins). Every other axis is the
    batch (at least one element: the caller handles empty arrays)."""
    check_length(f"fft.{kind}", n)
    lead = x.shape[:-1]
    batch = x.size // x.shape[-1]
    if batch < 1:
        raise DispatchError(f"fft.{kind}: empty batch", fix="handle empty arrays before the transform")
    half = n // 2 + 1
    if kind in ("fft", "ifft", "irfft"):
        if x.dtype != D.complex64:
            raise DispatchError(f"fft.{kind} takes complex64 here, got {x.dtype}", fix="astype(complex64) first")
        src = _share(x, (x.size * 2,), D.float32)
    else:
        if x.dtype != D.float32:
            raise DispatchError(f"fft.rfft takes float32 here, got {x.dtype}", fix="astype(float32) first")
        src = x
    (out,) = run_pipeline_on(_pipeline(kind, n, batch), [src])
    if kind == "irfft":
        return _share(out, (*lead, n), D.float32)
    return _share(out, (*lead, half if kind == "rfft" else n), D.complex64)


__all__ = ["last_axis", "check_length"]
