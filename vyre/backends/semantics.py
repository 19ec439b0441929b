"""Value semantics of vyre as pure numpy functions (see docs/architecture.md).

Every function takes and returns numpy arrays whose dtype is the value's component type
(uint32, int32, float32, float16, bool, or the 64-bit float64, int64, uint64); vectors are arrays of
shape (n, lanes) and are handled component-wise. These functions never warn about overflow: u32/i32 (and u64/i64)
arithmetic wraps. The reference interpreter uses them, and so can the op library to build expected
results.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..ir.types import DataType

U32 = np.dtype(np.uint32)
I32 = np.dtype(np.int32)
F32 = np.dtype(np.float32)
F16 = np.dtype(np.float16)
BOOL = np.dtype(np.bool_)
U64 = np.dtype(np.uint64)
I64 = np.dtype(np.int64)
F64 = np.dtype(np.float64)

_DTYPE_OF = {U32: DataType.U32, I32: DataType.I32, F32: DataType.F32, F16: DataType.F16, BOOL: DataType.BOOL,
             U64: DataType.U64, I64: DataType.I64, F64: DataType.F64}

INT_RANGES = {U32: (0, 2**32 - 1), I32: (-(2**31), 2**31 - 1), U64: (0, 2**64 - 1), I64: (-(2**63), 2**63 - 1)}


def _bits_unsigned(x: np.ndarray) -> np.ndarray:
    """The same bits as the unsigned integer of the same width."""
    return np.asarray(x).view(np.uint64 if x.dtype.itemsize == 8 else np.uint32)


def dtype_of(x: np.ndarray) -> DataType:
    """The vyre type of a value array: its dtype gives the component, a second axis the lanes."""
    scalar = _DTYPE_OF[x.dtype]
    return DataType.vector(scalar, x.shape[1]) if x.ndim == 2 else scalar


def _u32(x: np.ndarray) -> np.ndarray:
    """The same bits as uint32 (int32 and uint32 have the same itemsize, so any strides work)."""
    return np.asarray(x).view(np.uint32)


# --------------------------------------------------------------------------- floats
def float_op(fn: Callable[..., Any], *args: np.ndarray) -> np.ndarray:
    """Apply a float function; f16 operands are computed in f32 and rounded back to f16."""
    if args[0].dtype == F16:
        return np.asarray(fn(*(a.astype(np.float32) for a in args))).astype(np.float16)
    return np.asarray(fn(*args))


def float_rem(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Float ``%``: C's ``fmod`` (exact, the sign of ``a``; NaN for a zero divisor or an infinite
    dividend). The lowering computes it exactly too, where WGSL's own ``x - y * trunc(x / y)``
    loses every digit once the quotient passes 2^24. f16 in f32 is exact as well."""
    return float_op(np.fmod, a, b)


def fract(x: np.ndarray) -> np.ndarray:
    return float_op(lambda v: v - np.floor(v), x)


def round_half_even(x: np.ndarray) -> np.ndarray:
    return float_op(np.rint, x)


def inverse_sqrt(x: np.ndarray) -> np.ndarray:
    return float_op(lambda v: np.float32(1.0) / np.sqrt(v), x)


def sign(x: np.ndarray) -> np.ndarray:
    """-1, 0 or 1 (floats: sign of ±0 is +0, NaN stays NaN)."""
    if x.dtype.kind == "f":
        return float_op(lambda v: np.sign(v) + v.dtype.type(0), x)
    out: np.ndarray = np.sign(x)
    return out


def fma(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """``a * b + c``, unfused: the product is rounded first (WGSL lets the GPU fuse it, so
    results may differ in the last bit; lavapipe/llvmpipe does not fuse)."""
    return float_op(np.add, float_op(np.multiply, a, b), c)


# --------------------------------------------------------------------------- integers
def int_div(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Truncating division; x / 0 = x and i32::MIN / -1 = i32::MIN (i64 alike)."""
    if a.dtype in (U32, U64):
        b = np.where(b == 0, a.dtype.type(1), b)
        quotient: np.ndarray = (a // b).astype(a.dtype, copy=False)
        return quotient
    if a.dtype == I64:  # no wider type: x / -1 is the wrapping negation, the rest truncates in int64
        safe = np.where((b == 0) | (b == -1), np.int64(1), b)
        r = np.fmod(a, safe)
        q = (a - r) // safe
        neg = (np.uint64(0) - a.view(np.uint64)).view(np.int64)
        out: np.ndarray = np.where(b == -1, neg, q)
        return out
    a64 = a.astype(np.int64)
    b64 = b.astype(np.int64)
    b64 = np.where(b64 == 0, 1, b64)
    q = np.abs(a64) // np.abs(b64)
    q = np.where((a64 < 0) != (b64 < 0), -q, q)
    return q.astype(np.int32)  # 2**31 (MIN / -1) wraps to MIN


def int_rem(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Remainder with the sign of the dividend; x % 0 = 0 and i32::MIN % -1 = 0 (i64 alike)."""
    if a.dtype in (U32, U64):
        b = np.where(b == 0, a.dtype.type(1), b)
        remainder: np.ndarray = (a % b).astype(a.dtype, copy=False)
        return remainder
    if a.dtype == I64:
        rem64: np.ndarray = np.fmod(a, np.where((b == 0) | (b == -1), np.int64(1), b))
        return rem64
    a64 = a.astype(np.int64)
    b64 = b.astype(np.int64)
    b64 = np.where(b64 == 0, 1, b64)
    return np.fmod(a64, b64).astype(np.int32)


def shl(a: np.ndarray, s: np.ndarray) -> np.ndarray:
    """Left shift by the low 5 bits of s (6 bits for 64-bit integers; bits shifted out are lost)."""
    if a.dtype.itemsize == 8:
        s64 = (_u32(s) & np.uint32(63)).astype(np.uint64)
        wide: np.ndarray = (_bits_unsigned(a) << s64).view(a.dtype)
        return wide
    s = _u32(s) & np.uint32(31)
    out: np.ndarray = (_u32(a) << s).view(a.dtype)
    return out


def shr(a: np.ndarray, s: np.ndarray) -> np.ndarray:
    """Right shift by the low 5 bits of s (6 for 64-bit integers): logical on u32/u64, arithmetic on i32/i64."""
    if a.dtype.itemsize == 8:
        s64 = _u32(s) & np.uint32(63)
        wide: np.ndarray = a >> s64.astype(a.dtype)
        return wide
    s = _u32(s) & np.uint32(31)
    out: np.ndarray = a >> s.astype(np.int32) if a.dtype == I32 else a >> s
    return out


def count_ones(x: np.ndarray) -> np.ndarray:
    v = _u32(x)
    v = v - ((v >> np.uint32(1)) & np.uint32(0x55555555))
    v = (v & np.uint32(0x33333333)) + ((v >> np.uint32(2)) & np.uint32(0x33333333))
    v = (v + (v >> np.uint32(4))) & np.uint32(0x0F0F0F0F)
    v = (v * np.uint32(0x01010101)) >> np.uint32(24)
    out: np.ndarray = v.astype(x.dtype)
    return out


def reverse_bits(x: np.ndarray) -> np.ndarray:
    v = _u32(x)
    for shift, mask in ((1, 0x55555555), (2, 0x33333333), (4, 0x0F0F0F0F), (8, 0x00FF00FF)):
        s, m = np.uint32(shift), np.uint32(mask)
        v = ((v >> s) & m) | ((v & m) << s)
    v = (v >> np.uint32(16)) | (v << np.uint32(16))
    return v.view(x.dtype)


def count_leading_zeros(x: np.ndarray) -> np.ndarray:
    """Leading zero bits of the 32-bit pattern (32 for 0)."""
    v = _u32(x).copy()
    n = np.zeros(v.shape, dtype=np.uint32)
    for s in (16, 8, 4, 2, 1):
        top_clear = v < np.uint32(1 << (32 - s))
        n += np.where(top_clear, np.uint32(s), np.uint32(0))
        v = np.where(top_clear, v << np.uint32(s), v)
    n += (v == 0).astype(np.uint32)
    return n.astype(x.dtype)


def count_trailing_zeros(x: np.ndarray) -> np.ndarray:
    """Trailing zero bits of the 32-bit pattern (32 for 0)."""
    v = _u32(x)
    low = (v & (~v + np.uint32(1))) - np.uint32(1)  # ones below the lowest set bit (all ones for 0)
    return count_ones(low).astype(x.dtype)


# --------------------------------------------------------------------------- conversions
def cast(x: np.ndarray, target: DataType) -> np.ndarray:
    """Value conversion to ``target``'s component type (component-wise on vectors).

    float → int truncates toward zero and saturates (NaN → 0); int → int wraps (keeps the
    bits); number → bool is ``x != 0``; bool → number is 0/1; to f16 rounds to nearest even.
    """
    src = x.dtype
    dst = target.scalar.numpy_dtype
    if src == dst:
        return x
    if dst == BOOL:
        nonzero: np.ndarray = x != 0
        return nonzero
    if src == BOOL:
        return x.astype(dst)
    if dst.kind == "f":
        if src.kind == "f" or src.itemsize == 8:
            return x.astype(dst)  # one rounding (a 64-bit integer is not exact in f64)
        return x.astype(np.float64).astype(dst)  # exact in f64, then a single rounding
    if src.kind == "f" and dst.itemsize == 8:  # 2^63 / 2^64 are not int64/uint64 values: saturate first
        lo, hi = INT_RANGES[dst]
        f = np.trunc(x.astype(np.float64))
        big, small = f >= float(hi) + 1.0, f <= float(lo)
        safe = np.where(big | small | np.isnan(f), 0.0, f)
        out: np.ndarray = np.where(big, dst.type(hi), np.where(small, dst.type(lo), safe.astype(dst)))
        return out
    if src.kind == "f":
        lo, hi = INT_RANGES[dst]
        f = np.trunc(x.astype(np.float64))
        f = np.clip(f, lo, hi)
        f = np.where(np.isnan(f), 0.0, f)
        return f.astype(np.int64).astype(dst)
    return x.astype(dst)  # u32 <-> i32: two's complement wrap


def bitcast(x: np.ndarray, target: DataType) -> np.ndarray:
    """Reinterpret the bits of each value (or vector) as ``target`` (same total width)."""
    dst = target.scalar.numpy_dtype
    n = x.shape[0]
    flat = np.ascontiguousarray(x).reshape(n, -1).view(dst)
    return flat if target.is_vector else flat.reshape(n)


__all__ = [
    "dtype_of", "float_op", "float_rem", "fract", "round_half_even", "inverse_sqrt", "sign", "fma",
    "int_div", "int_rem", "shl", "shr", "count_ones", "reverse_bits", "count_leading_zeros",
    "count_trailing_zeros", "cast", "bitcast", "INT_RANGES",
]
