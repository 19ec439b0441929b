"""The sampling functions over Philox words: ``uniform``, ``normal``, ``randint``, ``bernoulli``.

Each draws its words with :func:`vyre.random._keys.generate` (one kernel, deferred) and transforms them
with elementwise ops that fuse into whatever consumes the result. Two ops of this module's own are in
the array emitter's table (vyre/array/_kernels/emit.py ``OPS``, the "Extending" contract of vyre.array):

* ``random_unit``: u32 word -> float in [0, 1) with every representable step equally likely: float32
  ``(w >> 8) * 2**-24`` (24 bits: each value exact), float16 ``(w >> 21) * 2**-11`` (11 bits);
* ``random_randint``: two words (hi, lo) and a span ``r`` in [1, 2**32] -> ``floor((hi * 2**32 + lo) * r
  / 2**64)`` (Lemire's multiply without rejection, on a 64-bit fraction assembled from two words, the
  products from 16-bit limbs like Philox's): each of the ``r`` values takes floor or ceil of ``2**64 / r``
  of the 2**64 inputs, so no probability is off by more than ``r / 2**64 <= 2**-32`` relative.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import array as va
from ..array import _dtypes as D
from ..array._array import Array
from ..array._creation import check_shape
from ..array._elementwise import apply
from ..array._kernels.dtypes import DType
from ..array._kernels.emit import OPS
from ..errors import ArgumentTypeError, InvalidArgumentError
from ..ir.builder import ProgramBuilder
from ..ir.values import Val
from . import _philox
from ._keys import check_float_dtype, check_key, generate

if TYPE_CHECKING:
    from ..backends.base import Backend


def _unit(b: ProgramBuilder, args: list[Val], dts: list[DType], out: DType) -> Val:
    if out == D.float16:
        return (args[0] >> 21).cast("f32").cast("f16") * b.lit(2.0**-11, "f16")  # 11 bits: exact in f16
    return (args[0] >> 8).cast("f32") * b.lit(2.0**-24, "f32")


def _randint(b: ProgramBuilder, args: list[Val], dts: list[DType], out: DType) -> Val:
    hi, lo, span, offset = args  # span 0 stands for 2**32 (the full uint32 range: the high word itself)
    lh, _ = _philox.mulhilo(b, lo, span)
    hh, hl = _philox.mulhilo(b, hi, span)
    s = b.let(hl + lh)
    v = b.select(span == b.lit(0, "u32"), hi, hh + b.select(s < hl, b.lit(1, "u32"), b.lit(0, "u32")))
    r = b.let(v + offset)  # u32 addition wraps: minval's two's-complement word
    return r.bitcast("i32") if out == D.int32 else r


OPS["random_unit"] = _unit
OPS["random_randint"] = _randint


def _real(value: Any, what: str, name: str) -> float:
    """A finite real Python number from a Python or numpy int/float (bools refused: ArgumentTypeError)."""
    if isinstance(value, np.generic) and value.dtype.kind in "iuf":
        value = value.item()
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ArgumentTypeError(f"{what}: {name} must be a real number, not {type(value).__name__} {value!r}",
                                fix=f"pass an int or a float as {name}")
    if not math.isfinite(value):
        raise InvalidArgumentError(f"{what}: {name} must be finite, not {value!r}", fix=f"pass a finite {name}")
    return float(value)


def _int(value: Any, what: str, name: str) -> int:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise ArgumentTypeError(f"{what}: {name} must be an int, not {type(value).__name__} {value!r}",
                                fix=f"pass an int as {name}")
    return int(value)


def unit(words: Array, dt: DType) -> Array:
    """``words`` (uint32) as floats of ``dt`` in [0, 1) (the ``random_unit`` op, lazy)."""
    return apply("random_unit", [words], out=lambda _: dt, accept="u")


def uniform(key: Array, shape: Any = (), dtype: Any = None, minval: float = 0.0, maxval: float = 1.0, *,
            device: Backend | None = None) -> Array:
    """Floats uniform in [minval, maxval) of ``shape`` (float32 by default; float16 where the backend has
    shader-f16). Element ``i`` is ``minval + u * (maxval - minval)`` for ``u`` from word ``i`` of the key's
    stream (see ``random_unit``), clamped into [minval, maxval) against rounding (so ``maxval`` never
    appears)."""
    k = check_key(key, "uniform", device)
    dims = check_shape(shape, "uniform")
    dt = check_float_dtype(dtype, k.device, "uniform")
    lo, hi = _real(minval, "uniform", "minval"), _real(maxval, "uniform", "maxval")
    npt = np.float16 if dt == D.float16 else np.float32
    flo, fhi = npt(lo), npt(hi)
    if not flo < fhi:
        raise InvalidArgumentError(f"uniform: minval ({lo!r}) must be below maxval ({hi!r}) in {dt}",
                                   fix="pass minval < maxval")
    with np.errstate(over="ignore"):
        scale = npt(fhi - flo)
    if not np.isfinite(scale):
        raise InvalidArgumentError(f"uniform: the range [{lo!r}, {hi!r}) overflows {dt}", fix="use a narrower range")
    u = unit(generate(k, dims, "bits", "uniform"), dt)
    if (lo, hi) == (0.0, 1.0):
        return u
    top = float(np.nextafter(fhi, npt(-np.inf)))
    return va.clip(u * float(scale) + float(flo), float(flo), top)


def normal(key: Array, shape: Any = (), dtype: Any = None, *, mean: float = 0.0, stddev: float = 1.0,
           device: Backend | None = None) -> Array:
    """Normal samples (standard: mean 0, stddev 1) of ``shape``, float32 by default. Box-Muller, both
    branches: words ``2m`` and ``2m + 1`` of the key's stream give elements ``2m`` (the cosine branch) and
    ``2m + 1`` (the sine branch); computed in float32 in the generator kernel (float16: rounded once)."""
    k = check_key(key, "normal", device)
    dims = check_shape(shape, "normal")
    dt = check_float_dtype(dtype, k.device, "normal")
    mu, sigma = _real(mean, "normal", "mean"), _real(stddev, "normal", "stddev")
    if sigma < 0:
        raise InvalidArgumentError(f"normal: stddev must be non-negative, not {stddev!r}", fix="pass stddev >= 0")
    z = generate(k, dims, "normal", "normal")
    if (mu, sigma) != (0.0, 1.0):
        z = z * sigma + mu
    return z if dt == D.float32 else va.astype(z, dt)


_INT_RANGES = {"int32": (-(1 << 31), 1 << 31), "uint32": (0, 1 << 32)}


def randint(key: Array, shape: Any, minval: int, maxval: int, dtype: Any = None, *,
            device: Backend | None = None) -> Array:
    """Integers uniform in [minval, maxval) of ``shape`` (int32 by default, or uint32). Element ``i`` uses
    words ``2i`` (high) and ``2i + 1`` (low) of the key's stream as a 64-bit fraction scaled by the span
    (``random_randint``: bias below 2**-32 relative, no rejection loop)."""
    k = check_key(key, "randint", device)
    dims = check_shape(shape, "randint")
    dt: DType = D.int32 if dtype is None else D.as_dtype(dtype, "randint")
    if dt not in (D.int32, D.uint32):
        raise ArgumentTypeError(f"randint: dtype must be int32 or uint32, not {dt}", fix="dtype=vyre.array.int32")
    lo, hi = _int(minval, "randint", "minval"), _int(maxval, "randint", "maxval")
    first, end = _INT_RANGES[str(dt)]
    if not lo < hi:
        raise InvalidArgumentError(f"randint: minval ({lo}) must be below maxval ({hi})", fix="pass minval < maxval")
    if lo < first or hi > end:
        raise InvalidArgumentError(f"randint: [{lo}, {hi}) is outside the range of {dt} [{first}, {end})",
                                   fix="narrow the range, or use the other integer dtype")
    w = generate(k, (*dims, 2), "bits", "randint")
    span = (hi - lo) % (1 << 32)  # 2**32 wraps to 0, which the op reads as the full range
    return apply("random_randint", [w[..., 0], w[..., 1], span, lo % (1 << 32)], out=lambda _: dt, accept="u")


def bernoulli(key: Array, p: float | Array = 0.5, shape: Any = None, *, device: Backend | None = None) -> Array:
    """Booleans, True with probability ``p``, of ``shape`` (default: ``p``'s shape, () for a number).
    ``u < p`` for ``u = random_unit(word i)`` in float32: a Python ``p`` in [0, 1] is checked (0 is never
    True, 1 always), and the probability is ``p`` rounded up to a multiple of 2**-24. An array ``p`` (of
    floats, broadcast against ``shape``) is not checked on the host: values below 0 act as 0, above 1 as 1."""
    k = check_key(key, "bernoulli", device)
    if isinstance(p, Array):
        if p.dtype.kind != "f":
            raise ArgumentTypeError(f"bernoulli: an array p must be of floats, not {p.dtype}",
                                    fix="pass probabilities as float32")
        dims = p.shape if shape is None else check_shape(shape, "bernoulli")
        if p.device is not k.device:
            p = p.to_device(k.device)
        pv: float | Array = p
    else:
        pv = _real(p, "bernoulli", "p")
        if not 0.0 <= pv <= 1.0:
            raise InvalidArgumentError(f"bernoulli: p must be in [0, 1], not {p!r}", fix="pass a probability")
        dims = () if shape is None else check_shape(shape, "bernoulli")
    u = unit(generate(k, dims, "bits", "bernoulli"), D.float32)
    return va.less(u, pv)


__all__ = ["uniform", "normal", "randint", "bernoulli", "unit"]
