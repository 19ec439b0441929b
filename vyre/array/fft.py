"""``vyre.array.fft``: the array API standard's FFT extension (2024.12): ``fft``, ``ifft``, ``fftn``,
``ifftn``, ``rfft``, ``irfft``, ``rfftn``, ``irfftn``, ``hfft``, ``ihfft``, ``fftfreq``, ``rfftfreq``,
``fftshift``, ``ifftshift``, with numpy's conventions (``X[k] = sum_j x[j] exp(-2 pi i jk / n)``), ``n``/``s``
(crop or zero-pad), ``axis``/``axes`` and ``norm`` ("backward": 1/n on the inverse, "ortho": 1/sqrt(n) both
ways, "forward": 1/n on the forward transform).

Every length runs on the device through the op library's pipelines (vyre/array/_kernels/fft.py): powers
of two as radix-4/2 FFTs in workgroup memory (four-step beyond 2048 points, up to 2^22), every other length
(1 .. 2^21) through Bluestein's chirp-z transform over a power-of-two FFT; one axis is transformed at a
time, moved last (a lazy view the transform's input kernel reads). Accuracy: f32 FFTs, an absolute error
of about ``8 u (log2 n + 2) sqrt(n)`` times the input's magnitude (u = 2^-24; vyre/ops/fft/_io.py).

dtypes: complex64 in, complex64 out (real float32, float16, 32-bit integer and bool input of ``fft``/
``ifft``/``fftn``/``ifftn``/``irfft``/``hfft`` is converted to complex64 first; ``rfft``/``ihfft`` take real
input: complex is a TypeError); float64, complex128 and 64-bit integer input is transformed in float64 to
complex128 (float64 for irfft/hfft) by array operations in f64 (vyre/array/_fft64.py; the pipelines are
f32 only, and nothing is narrowed): where the device has shader-f64. ``fftfreq``/``rfftfreq`` give
float32 (or the requested real floating dtype).
"""

from __future__ import annotations

import builtins
import math
import operator
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..errors import ArgumentTypeError, InvalidArgumentError, UnsupportedDTypeError
from . import _dtypes as D
from . import _fft64 as F64
from ._array import Array
from ._complex import conj
from ._creation import asarray, zeros
from ._kernels import dtypes as KD
from ._kernels.fft import check_length, last_axis
from ._manipulation import concat, roll
from ._views import normalize_axis, permute_dims

_NORMS = ("backward", "ortho", "forward")


def _array(x: Any, what: str) -> Array:
    if not isinstance(x, Array):
        raise ArgumentTypeError(f"{what}: x must be a vyre array, not {type(x).__name__}",
                                fix="convert with vyre.array.asarray first")
    return x


def _wide(x: Array) -> bool:
    """64-bit input: transformed in float64 (vyre/array/_fft64.py), never narrowed to the f32 pipelines."""
    return x.dtype in (KD.float64, KD.int64, KD.uint64, KD.complex128)


def _complex_in(x: Any, what: str) -> Array:
    x = _array(x, what)
    dt = KD.complex128 if _wide(x) else KD.complex64
    return x if x.dtype == dt else D.astype(x, dt)


def _real_in(x: Any, what: str) -> Array:
    x = _array(x, what)
    if KD.is_complex(x.dtype):
        raise ArgumentTypeError(f"{what} takes real input, got {x.dtype}", fix="use fft for complex input")
    dt = KD.float64 if _wide(x) else KD.float32
    return x if x.dtype == dt else D.astype(x, dt)


def _last(kind: str, v: Array, n: int) -> Array:
    """The transform of the last axis: the f32 pipelines, or float64 array operations for 64-bit input."""
    if v.dtype in (KD.complex128, KD.float64):
        return F64.last_axis(kind, v, n)
    return last_axis(kind, v, n)


def _norm(norm: Any, what: str) -> str:
    if norm not in _NORMS:
        raise InvalidArgumentError(f"{what}: norm must be one of {', '.join(_NORMS)}, got {norm!r}",
                                   fix='norm="backward"')
    return str(norm)


def _length(n: Any, default: int, what: str) -> int:
    if isinstance(n, builtins.bool):
        raise ArgumentTypeError(f"{what}: n must be an int, got {n!r}", fix="pass n=None or a positive int")
    try:
        v = default if n is None else operator.index(n)
    except TypeError:
        raise ArgumentTypeError(f"{what}: n must be an int, got {n!r}", fix="pass n=None or a positive int") from None
    if v < 1:
        raise InvalidArgumentError(f"{what}: the transform length must be at least 1, got {v}"
                                   + (" (the default from the axis's length)" if n is None else ""),
                                   fix="pass a positive n (or an array with a non-empty axis)")
    return v


def _resize(x: Array, m: int) -> Array:
    """``x`` with its last axis cropped or zero-padded to ``m`` (numpy's ``n``)."""
    k = x.shape[-1]
    if m == k:
        return x
    if m < k:
        return x[..., :m]
    return concat((x, zeros((*x.shape[:-1], m - k), dtype=x.dtype, device=x.device)), axis=-1)


def _scale(y: Array, factor: float) -> Array:
    return y if factor == 1.0 else y * factor


def _along(x: Array, axis: int, fn: Callable[[Array], Array]) -> Array:
    """``fn`` (a transform of the last axis) applied along ``axis`` of ``x``: moved last, then back."""
    nd = x.ndim
    if axis == nd - 1:
        return fn(x)
    perm = (*range(axis), *range(axis + 1, nd), axis)
    y = fn(permute_dims(x, perm))
    back = list(range(nd - 1))
    back.insert(axis, nd - 1)
    return permute_dims(y, tuple(back))


def _axis(x: Array, axis: Any, what: str) -> int:
    if x.ndim == 0:
        raise InvalidArgumentError(f"{what}: needs an array of at least one dimension", fix="reshape it to (n,)")
    return normalize_axis(axis, x.ndim, what)


def _c2c(x: Array, n: int | None, axis: int, norm: str, inverse: bool, what: str) -> Array:
    ax = _axis(x, axis, what)
    m = _length(n, x.shape[ax], what)
    check_length(what, m)

    def run(v: Array) -> Array:
        v = _resize(v, m)
        if v.size == 0:
            return zeros(v.shape, dtype=v.dtype, device=v.device)
        y = _last("ifft" if inverse else "fft", v, m)
        # the pipeline scales ifft by 1/m ("backward"); the other norms rescale
        factor = {"backward": 1.0, "ortho": math.sqrt(m) if inverse else 1.0 / math.sqrt(m),
                  "forward": float(m) if inverse else 1.0 / m}[norm]
        return _scale(y, factor)
    return _along(x, ax, run)


def fft(x: Array, /, *, n: int | None = None, axis: int = -1, norm: str = "backward") -> Array:
    """The one-dimensional discrete Fourier transform along ``axis`` (``n``: crop or zero-pad first)."""
    return _c2c(_complex_in(x, "fft"), n, axis, _norm(norm, "fft"), False, "fft")


def ifft(x: Array, /, *, n: int | None = None, axis: int = -1, norm: str = "backward") -> Array:
    """The inverse of :func:`fft` (1/n with norm="backward")."""
    return _c2c(_complex_in(x, "ifft"), n, axis, _norm(norm, "ifft"), True, "ifft")


def _rfft(x: Array, n: int | None, axis: int, norm: str, what: str) -> Array:
    ax = _axis(x, axis, what)
    m = _length(n, x.shape[ax], what)
    check_length(what, m)

    def run(v: Array) -> Array:
        v = _resize(v, m)
        if v.size == 0:
            return zeros((*v.shape[:-1], m // 2 + 1), dtype=KD.complex_of(v.dtype), device=v.device)
        y = _last("rfft", v, m)
        return _scale(y, {"backward": 1.0, "ortho": 1.0 / math.sqrt(m), "forward": 1.0 / m}[norm])
    return _along(x, ax, run)


def _irfft(x: Array, n: int | None, axis: int, norm: str, what: str) -> Array:
    ax = _axis(x, axis, what)
    m = _length(n, 2 * (x.shape[ax] - 1), what)
    check_length(what, m)

    def run(v: Array) -> Array:
        v = _resize(v, m // 2 + 1)  # the bins the n outputs need (numpy crops or zero-pads them)
        if v.size == 0:
            return zeros((*v.shape[:-1], m), dtype=KD.real_of(v.dtype), device=v.device)
        y = _last("irfft", v, m)
        return _scale(y, {"backward": 1.0, "ortho": math.sqrt(m), "forward": float(m)}[norm])
    return _along(x, ax, run)


def rfft(x: Array, /, *, n: int | None = None, axis: int = -1, norm: str = "backward") -> Array:
    """The FFT of real input along ``axis``: the ``n // 2 + 1`` non-negative frequency bins (complex64;
    complex128 for float64 input)."""
    return _rfft(_real_in(x, "rfft"), n, axis, _norm(norm, "rfft"), "rfft")


def irfft(x: Array, /, *, n: int | None = None, axis: int = -1, norm: str = "backward") -> Array:
    """The inverse of :func:`rfft`: ``n`` real values (default ``2 * (m - 1)`` for m bins; float32, float64 for
    complex128 input). The
    imaginary parts of bin 0 (and of bin n/2 for even n) are ignored, as numpy does."""
    return _irfft(_complex_in(x, "irfft"), n, axis, _norm(norm, "irfft"), "irfft")


_SWAP = {"backward": "forward", "ortho": "ortho", "forward": "backward"}


def hfft(x: Array, /, *, n: int | None = None, axis: int = -1, norm: str = "backward") -> Array:
    """The FFT of a signal with Hermitian symmetry given by its first half (``irfft(conj(x))`` with the
    norm swapped: real output of length ``n``, default ``2 * (m - 1)``)."""
    return _irfft(conj(_complex_in(x, "hfft")), n, axis, _SWAP[_norm(norm, "hfft")], "hfft")


def ihfft(x: Array, /, *, n: int | None = None, axis: int = -1, norm: str = "backward") -> Array:
    """The inverse of :func:`hfft`: ``conj(rfft(x))`` with the norm swapped (real input, n // 2 + 1 bins)."""
    return conj(_rfft(_real_in(x, "ihfft"), n, axis, _SWAP[_norm(norm, "ihfft")], "ihfft"))


def _shape_axes(x: Array, s: Any, axes: Any, what: str) -> tuple[list[int | None], list[int]]:
    """The standard's ``s``/``axes``: both None: every axis; ``s`` alone: the last len(s) axes; ``axes``
    alone: their lengths; an entry -1 of ``s`` keeps that axis's length."""
    if x.ndim == 0:
        raise InvalidArgumentError(f"{what}: needs an array of at least one dimension", fix="reshape it to (n,)")
    for v, name in ((s, "s"), (axes, "axes")):
        if v is not None and not isinstance(v, Sequence):
            raise ArgumentTypeError(f"{what}: {name} must be a sequence of ints or None, got {v!r}",
                                    fix=f"e.g. {name}=(0, 1)")
    if axes is None:
        ax = list(range(x.ndim)) if s is None else list(range(x.ndim - len(s), x.ndim))
    else:
        ax = [normalize_axis(a, x.ndim, what) for a in axes]
        if len(set(ax)) != len(ax):
            raise InvalidArgumentError(f"{what}: axes {list(axes)} repeat an axis", fix="name each axis once")
    if s is None:
        return [None] * len(ax), ax
    if len(s) != len(ax):
        raise InvalidArgumentError(f"{what}: s has {len(s)} entries for {len(ax)} axes", fix="one length per axis")
    if not ax:
        raise InvalidArgumentError(f"{what}: no axes to transform", fix="pass at least one axis")
    lengths: list[int | None] = [None if (isinstance(v, int) and not isinstance(v, bool) and v == -1) else v
                                 for v in s]
    return lengths, ax


def _c2c_n(x: Array, s: Sequence[int] | None, axes: Sequence[int] | None, norm: str, inverse: bool,
           what: str) -> Array:
    y = _complex_in(x, what)
    nm = _norm(norm, what)
    lengths, ax = _shape_axes(y, s, axes, what)
    for n, a in reversed(list(zip(lengths, ax))):
        y = _c2c(y, n, a, nm, inverse, what)
    return y


def fftn(x: Array, /, *, s: Sequence[int] | None = None, axes: Sequence[int] | None = None,
         norm: str = "backward") -> Array:
    """The n-dimensional FFT over ``axes`` (one axis at a time; ``s``: their lengths)."""
    return _c2c_n(x, s, axes, norm, False, "fftn")


def ifftn(x: Array, /, *, s: Sequence[int] | None = None, axes: Sequence[int] | None = None,
          norm: str = "backward") -> Array:
    """The inverse of :func:`fftn`."""
    return _c2c_n(x, s, axes, norm, True, "ifftn")


def rfftn(x: Array, /, *, s: Sequence[int] | None = None, axes: Sequence[int] | None = None,
          norm: str = "backward") -> Array:
    """The n-dimensional FFT of real input: :func:`rfft` over the last of ``axes``, then :func:`fft` over the
    others."""
    y = _real_in(x, "rfftn")
    nm = _norm(norm, "rfftn")
    lengths, ax = _shape_axes(y, s, axes, "rfftn")
    out = _rfft(y, lengths[-1], ax[-1], nm, "rfftn")
    for n, a in reversed(list(zip(lengths[:-1], ax[:-1]))):
        out = _c2c(out, n, a, nm, False, "rfftn")
    return out


def irfftn(x: Array, /, *, s: Sequence[int] | None = None, axes: Sequence[int] | None = None,
           norm: str = "backward") -> Array:
    """The inverse of :func:`rfftn`: :func:`ifft` over all but the last of ``axes``, then :func:`irfft` over it
    (its output length ``s[-1]``, default ``2 * (m - 1)``)."""
    y = _complex_in(x, "irfftn")
    nm = _norm(norm, "irfftn")
    lengths, ax = _shape_axes(y, s, axes, "irfftn")
    for n, a in reversed(list(zip(lengths[:-1], ax[:-1]))):
        y = _c2c(y, n, a, nm, True, "irfftn")
    return _irfft(y, lengths[-1], ax[-1], nm, "irfftn")


def _freq_args(n: Any, d: Any, dtype: Any, what: str) -> tuple[int, float, Any]:
    if isinstance(n, builtins.bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise InvalidArgumentError(f"{what}: n must be a positive int, got {n!r}", fix="e.g. n=8")
    if isinstance(d, builtins.bool) or not isinstance(d, (int, float, np.floating, np.integer)) or d == 0:
        raise InvalidArgumentError(f"{what}: d must be a non-zero number, got {d!r}", fix="e.g. d=1.0")
    dt = KD.float32 if dtype is None else D.as_dtype(dtype, what)
    if not KD.is_float(dt):
        raise UnsupportedDTypeError(f"{what}: dtype must be a real floating dtype, got {dt}", fix="float32")
    return int(n), float(d), dt


def fftfreq(n: int, /, *, d: float = 1.0, dtype: Any = None, device: Any = None) -> Array:
    """The sample frequencies of an n-point FFT: ``[0, 1, ..., n/2 - 1, -n/2, ..., -1] / (d n)``."""
    m, step, dt = _freq_args(n, d, dtype, "fftfreq")
    return asarray(np.fft.fftfreq(m, step).astype(dt), device=device)


def rfftfreq(n: int, /, *, d: float = 1.0, dtype: Any = None, device: Any = None) -> Array:
    """The sample frequencies of :func:`rfft`'s n // 2 + 1 bins: ``[0, 1, ..., n // 2] / (d n)``."""
    m, step, dt = _freq_args(n, d, dtype, "rfftfreq")
    return asarray(np.fft.rfftfreq(m, step).astype(dt), device=device)


def _shift(x: Any, axes: Any, sign: int, what: str) -> Array:
    if not isinstance(x, Array):
        raise ArgumentTypeError(f"{what}: x must be a vyre array, not {type(x).__name__}", fix="asarray first")
    if x.ndim == 0:
        return x
    ax = list(range(x.ndim)) if axes is None else [normalize_axis(a, x.ndim, what) for a in (
        axes if isinstance(axes, Sequence) else (axes,))]
    if not ax:
        return x
    shifts = tuple(sign * (x.shape[a] // 2) for a in ax)
    return roll(x, shifts, axis=tuple(ax))


def fftshift(x: Array, /, *, axes: int | Sequence[int] | None = None) -> Array:
    """The zero frequency moved to the middle (a roll by n // 2 along ``axes``, all by default; lazy)."""
    return _shift(x, axes, 1, "fftshift")


def ifftshift(x: Array, /, *, axes: int | Sequence[int] | None = None) -> Array:
    """The inverse of :func:`fftshift` (a roll by -(n // 2))."""
    return _shift(x, axes, -1, "ifftshift")


__all__ = ["fft", "ifft", "fftn", "ifftn", "rfft", "irfft", "rfftn", "irfftn", "hfft", "ihfft", "fftfreq",
           "rfftfreq", "fftshift", "ifftshift"]
