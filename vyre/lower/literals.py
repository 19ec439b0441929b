"""Exact WGSL spellings of vyre literals.

Every literal must denote exactly the value the reference interpreter uses:

* u32 ``123u``; i32 ``123i``, negatives parenthesised, ``i32::MIN`` as ``(-2147483647i - 1i)``;
* f32: the shortest decimal that names the value, when every plausible parse (correctly
  rounded, or through f64) lands strictly inside the value's rounding interval and the decimal
  is not past the largest finite value (``3.4028235e+38`` is: WGSL rejects it, the largest f32
  is spelled ``0x1.fffffep+127f``);
  otherwise an exact hexadecimal float. -0.0 is ``bitcast<f32>(0x80000000u)``; NaN and the
  infinities are ``_nonfinite_f32(0x...u)``, a call of a helper function (see below);
* f16: the shortest decimal under the same check, otherwise the exact decimal expansion
  (naga rejects hexadecimal f16 literals). -0.0 is ``f16(unpack2x16float(0x00008000u).x)``;
  NaN and the infinities are ``_nonfinite_f16(0x...u)``;
* bool ``true`` / ``false``;
* the 64-bit types (wgpu-native's extensions): u64 ``123lu``; i64 ``123li``, negatives parenthesised,
  ``i64::MIN`` as ``(-9223372036854775807li - 1li)``; f64 Python's shortest round-trip decimal (an exact
  name of the double) with the suffix ``lf``; -0.0 is ``bitcast<f64>(0x8000000000000000lu)``, NaN and the
  infinities ``_nonfinite_f64(0x...lu)``.

WGSL evaluates an expression of literals and builtins such as ``bitcast<f32>(0x7f800000u)`` at
shader creation (a const-expression), and a const-expression whose value is NaN or infinite is
a shader-creation error: Tint rejects it ("value inf cannot be represented as 'f32'"), naga lets
it through. A call of a user-declared function is a runtime expression, so the non-finite values
go through ``_nonfinite_f32`` / ``_nonfinite_f16`` (:data:`NONFINITE_HELPERS`), which
:func:`vyre.lower.wgsl.render` declares in every shader whose text calls them.
"""

from __future__ import annotations

import math
from decimal import Decimal
from fractions import Fraction
from typing import Any

import numpy as np

from ..errors import LoweringError
from ..ir.types import DataType

#: helper function name -> its scalar type, for the NaN and infinite literals (see the module docstring)
NONFINITE_HELPERS = {"_nonfinite_f32": "f32", "_nonfinite_f16": "f16", "_nonfinite_f64": "f64"}


def _interval_ok(text: str, value: np.floating[Any]) -> bool:
    """True when parsing ``text`` to the float type of ``value`` cannot give another value."""
    ftype = type(value)
    x = Fraction(float(value))
    with np.errstate(over="ignore"):
        lo_n = np.nextafter(value, ftype(-np.inf))
        hi_n = np.nextafter(value, ftype(np.inf))
    lo = Fraction(float(lo_n)) if math.isfinite(float(lo_n)) else None
    hi = Fraction(float(hi_n)) if math.isfinite(float(hi_n)) else None
    if lo is None:
        assert hi is not None  # a float has a finite neighbour on at least one side
        lo = x - (hi - x)
    if hi is None:
        hi = x + (x - lo)
    m_lo, m_hi = (lo + x) / 2, (x + hi) / 2
    q = Fraction(text)
    if abs(q) > Fraction(float(np.finfo(ftype).max)):
        return False  # WGSL rejects a literal past the largest finite value, even one that rounds to it
    candidates = [q, Fraction(float(text))]  # exact decimal; through f64
    if ftype is np.float16:
        with np.errstate(over="ignore"):
            candidates.append(Fraction(float(np.float32(float(text)))))  # through f32
    return all(m_lo < c < m_hi for c in candidates)


def _hex_f32(value: float) -> str:
    h = float(value).hex()  # exact for any float32 value (it is a double too)
    mant, exp = h.split("p")
    if "." in mant:
        mant = mant.rstrip("0").rstrip(".")
    return f"{mant}p{exp}"


def _f32(v: float) -> str:
    with np.errstate(over="ignore"):
        x = np.float32(v)
    bits = int(x.view(np.uint32))
    if not np.isfinite(x):
        if np.isnan(x):
            bits = 0x7FC00000
        return f"_nonfinite_f32({bits:#010x}u)"
    if x == 0 and bits != 0:
        return f"bitcast<f32>({bits:#010x}u)"
    s = str(x)
    if not _interval_ok(s, x):
        s = _hex_f32(float(x))
    if s.startswith("-"):
        return f"({s}f)"
    return f"{s}f"


def _f16(v: float) -> str:
    with np.errstate(over="ignore"):
        x = np.float16(v)
    bits = int(x.view(np.uint16))
    if not np.isfinite(x):
        if np.isnan(x):
            bits = 0x7E00
        return f"_nonfinite_f16({bits:#010x}u)"
    if x == 0 and bits != 0:
        return f"f16(unpack2x16float({bits:#010x}u).x)"
    s = str(x)
    if not _interval_ok(s, x):
        s = format(Decimal(float(x)), "f")  # exact: an f16 value is a short dyadic rational
    if s.startswith("-"):
        return f"({s}h)"
    return f"{s}h"


def _f64(v: float) -> str:
    x = float(v)
    bits = int(np.float64(x).view(np.uint64))
    if not math.isfinite(x):
        if math.isnan(x):
            bits = 0x7FF8000000000000
        return f"_nonfinite_f64({bits:#018x}lu)"
    if x == 0 and bits != 0:
        return f"bitcast<f64>({bits:#018x}lu)"
    s = repr(x)  # the shortest decimal that round-trips: names exactly this double
    if "." not in s and "e" not in s:
        s += ".0"
    return f"({s}lf)" if s.startswith("-") else f"{s}lf"


#: the 64-bit integer types: (range, suffix)
_INT64 = {DataType.I64: (-(2**63), 2**63 - 1, "li"), DataType.U64: (0, 2**64 - 1, "lu")}


def _int64(dtype: DataType, v: int) -> str:
    lo, hi, suffix = _INT64[dtype]
    if not lo <= v <= hi:
        raise LoweringError(f"{v} does not fit in {dtype.value}", fix=f"use a value in [{lo}, {hi}]")
    if v == lo and lo < 0:
        return f"({lo + 1}{suffix} - 1{suffix})"
    return f"({v}{suffix})" if v < 0 else f"{v}{suffix}"


def literal(dtype: DataType, value: object) -> str:
    """WGSL text of a scalar literal of type ``dtype``."""
    if dtype is DataType.BOOL:
        if not isinstance(value, (bool, np.bool_)):
            raise LoweringError(f"bool literal holds {value!r}", fix="use True or False")
        return "true" if value else "false"
    if dtype.is_int:
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
            raise LoweringError(f"{dtype.value} literal holds non-integer {value!r}", fix="use an integer value")
        v = int(value)
        if dtype in _INT64:
            return _int64(dtype, v)
        if dtype is DataType.U32:
            if not 0 <= v < 2**32:
                raise LoweringError(f"{v} does not fit in u32", fix="use a value in [0, 4294967295]")
            return f"{v}u"
        if not -(2**31) <= v < 2**31:
            raise LoweringError(f"{v} does not fit in i32", fix="use a value in [-2147483648, 2147483647]")
        if v == -(2**31):
            return "(-2147483647i - 1i)"
        return f"({v}i)" if v < 0 else f"{v}i"
    if dtype is DataType.F32:
        return _f32(_float_value(dtype, value))
    if dtype is DataType.F16:
        return _f16(_float_value(dtype, value))
    if dtype is DataType.F64:
        return _f64(_float_value(dtype, value))
    raise LoweringError(f"a literal must be a scalar, found type {dtype.value}", fix="build vectors with vec(...)")


def _float_value(dtype: DataType, value: object) -> float:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise LoweringError(f"{dtype.value} literal holds {value!r}", fix="use a number")
    try:
        return float(value)
    except OverflowError:  # a huge Python int: rounds to infinity like any out-of-range value
        return math.inf if value > 0 else -math.inf


__all__ = ["literal", "NONFINITE_HELPERS"]
