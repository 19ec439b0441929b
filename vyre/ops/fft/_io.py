"""What the fft ops share: complex64 <-> interleaved f32 pairs, argument checks, tolerances, inputs.

The pipelines' complex buffers are ``vec2<f32>``: the ops' pipelines take and return f32 arrays
of shape ``(batch, n, 2)`` (the witnesses and references use that form), and the convenience
layer (``vyre.ops.fft_fft(gpu, x)``) takes numpy complex64 and returns complex64 of the matching
shape through ``OpSpec.to_device``/``from_device``. Other dtypes are refused with a typed error
(no silent conversion: complex128 would lose precision, a real array is ``fft_rfft``'s input).

Tolerance: an absolute bound for inputs whose real and imaginary parts are at most 1 in
magnitude (the witnesses' contract). A radix-2 FFT's rounding error grows with log2(n) and
its random-walk sum with sqrt(n); an inverse divides by n:
``atol = 8 u (log2(n) + 2) sqrt(n)`` forward and ``... / n`` inverse (u = 2^-24; Bluestein
lengths use log2 of the padded length, which also covers the chirp's rounding).
"""

from __future__ import annotations

import math

import numpy as np

from ...errors import DispatchError
from ..registry import Tolerance, rel
from ._plan import MAX_POW2, is_pow2, max_length, padded_length

U = 2.0 ** -24


def check_length(op: str, n: int) -> None:
    if n < 1 or (n > max_length() and not (is_pow2(n) and n <= MAX_POW2)):
        raise DispatchError(f"{op}: transform length {n} is not supported (1..{max_length()}, "
                            f"or a power of two up to {MAX_POW2})",
                            fix="use a length of at least 1, split the signal, or pad it to a power of two")


def complex_input(op: str, x: np.ndarray, *, axes: int = 1) -> np.ndarray:
    """Check the caller's complex array (complex64, at least ``axes`` dims, none empty)."""
    if x.dtype != np.complex64:
        hint = ("x.astype(np.complex64) (the device computes in f32)" if x.dtype.kind in "fc"
                else "a complex64 array")
        if x.dtype.kind == "f":
            hint += f"; for real input see {op.rsplit('.', 1)[0]}.rfft"
        raise DispatchError(f"{op} takes complex64 input, got {x.dtype}", fix=f"pass {hint}")
    check_shape(op, x, axes)
    return x


def check_shape(op: str, x: np.ndarray, axes: int) -> None:
    if x.ndim < axes:
        raise DispatchError(f"{op} transforms the last {axes} axis(es); got a {x.ndim}-d array",
                            fix="pass an array with at least that many dimensions, e.g. x.reshape(1, -1)")
    if x.size == 0:
        raise DispatchError(f"{op}: empty input, shape {x.shape}", fix="pass at least one element per axis")


def batch_of(x: np.ndarray, axes: int) -> int:
    return int(math.prod(x.shape[: x.ndim - axes]))


def to_pairs(x: np.ndarray) -> np.ndarray:
    """complex64 (...) -> f32 (..., 2), no copy when contiguous."""
    return np.ascontiguousarray(x).view(np.float32).reshape(*x.shape, 2)


def from_pairs(a: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """f32 (..., 2) -> complex64 of ``shape``."""
    return np.ascontiguousarray(a, dtype=np.float32).reshape(-1, 2).view(np.complex64).reshape(shape)


def reference_pairs(z: np.ndarray) -> np.ndarray:
    """A float64/complex128 numpy result as the f32 pairs the pipeline returns."""
    return np.stack([z.real, z.imag], axis=-1).astype(np.float32)


def as_complex(pairs: np.ndarray) -> np.ndarray:
    a = np.asarray(pairs, dtype=np.float64)
    return a[..., 0] + 1j * a[..., 1]


def effective_log2(n: int) -> float:
    return math.log2(n if is_pow2(n) else padded_length(n))


def fft_tolerance(n: int, inverse: bool, sums: int | None = None) -> Tolerance:
    """The absolute bound of the module doc for a transform of length n (``sums``: the number of
    terms each output adds, n by default; a 2-D transform passes rows * cols)."""
    terms = n if sums is None else sums
    atol = 8 * U * (effective_log2(n) + 2) * math.sqrt(terms)
    return rel(0.0, atol / terms if inverse else atol)


def signals(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    """Random complex values with parts in [-1, 1), as f32 pairs."""
    return rng.uniform(-1.0, 1.0, (*shape, 2)).astype(np.float32)


def specials(n: int) -> dict[str, np.ndarray]:
    """Impulse, constant (1 + i) and alternating (+-1) rows of length n, as f32 pairs (1, n, 2)."""
    impulse = np.zeros((1, n, 2), np.float32)
    impulse[0, 0, 0] = 1.0
    const = np.ones((1, n, 2), np.float32)
    alt = np.zeros((1, n, 2), np.float32)
    alt[0, :, 0] = np.where(np.arange(n) % 2 == 0, 1.0, -1.0)
    return {"impulse": impulse, "constant": const, "alternating": alt}
