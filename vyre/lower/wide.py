"""WGSL for the 64-bit types (f64, i64, u64), wgpu-native's ``shader-f64`` / ``shader-int64`` extensions.

What naga (wgpu-native v27) accepts, measured on lavapipe: the types ``f64``/``i64``/``u64`` and literal
suffixes ``lf``/``li``/``lu`` (no ``enable`` directive); ``+ - * /``, comparisons, ``select``, ``abs``,
``min``/``max``, ``floor``/``ceil``/``round``/``trunc``/``fract``, ``sqrt``, ``inverseSqrt``, ``fma``,
``ldexp`` and ``bitcast`` between the 64-bit scalars (``frexp`` compiles, but its exponent is an i64, which
drivers need not take: exponents are read from the bits instead). Not accepted or not valid:
``bitcast`` between a 64-bit scalar and ``vec2<u32>`` (here: through a u64 and two shifts), the bit-counting
built-ins on 64-bit integers (the IR refuses them), a cast of a 64-bit *constant* to another type (naga's
constant evaluator fails: such casts take a runtime value), and GLSL.std.450's Exp/Log/Sin/Cos/Tan/Tanh/Pow,
which are 16/32-bit only (naga emits them for f64 anyway and lavapipe returns garbage): those are computed
in software (templates/wide.wgsl.j2: fdlibm's reductions and polynomials; accuracy in docs/arrays.md).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..ir.nodes import Binary, BinOp, Cast, Unary, UnOp
from ..ir.types import DataType
from .layout import tag
from .literals import literal

if TYPE_CHECKING:
    from .exprs import ExprRenderer

_T = "wide.wgsl.j2"

#: software f64 functions: UnOp -> (helper name, macro)
_F64_UNARY = {
    UnOp.EXP: "_exp_f64", UnOp.LOG: "_log_f64", UnOp.EXP2: "_exp2_f64", UnOp.LOG2: "_log2_f64",
    UnOp.SIN: "_sin_f64", UnOp.COS: "_cos_f64", UnOp.TAN: "_tan_f64", UnOp.TANH: "_tanh_f64",
}


def _ilogb(r: ExprRenderer) -> str:
    return r.st.helper("_ilogb_f64", "ilogb_f64", template=_T)


def f64_function(r: ExprRenderer, op: UnOp) -> str:
    """The helper computing ``op`` on f64 in software (declared with the helpers it calls)."""
    h = r.st.helper
    if op is UnOp.EXP:
        return h("_exp_f64", "exp_f64", template=_T)
    if op is UnOp.LOG:
        return h("_log_f64", "log_f64", template=_T, ilogb=_ilogb(r))
    if op is UnOp.EXP2:
        return h("_exp2_f64", "exp2_f64", template=_T, exp_fn=f64_function(r, UnOp.EXP))
    if op is UnOp.LOG2:
        return h("_log2_f64", "log2_f64", template=_T, log_fn=f64_function(r, UnOp.LOG), ilogb=_ilogb(r))
    if op in (UnOp.SIN, UnOp.COS):
        return h(_F64_UNARY[op], "sincos_f64", template=_T, cos=op is UnOp.COS)
    if op is UnOp.TAN:
        return h("_tan_f64", "tan_f64", template=_T, sin_fn=f64_function(r, UnOp.SIN),
                 cos_fn=f64_function(r, UnOp.COS))
    assert op is UnOp.TANH
    return h("_tanh_f64", "tanh_f64", template=_T, exp_fn=f64_function(r, UnOp.EXP))


def unary(r: ExprRenderer, e: Unary, a: str) -> str | None:
    """WGSL of a unary op on f64 that WGSL's built-in cannot compute, else None."""
    if e.op in _F64_UNARY and r.st.type(e.arg) is DataType.F64:
        return f"{f64_function(r, e.op)}({a})"
    return None


def binary(r: ExprRenderer, e: Binary, lhs: str, rhs: str) -> str | None:
    """WGSL of a binary op on 64-bit operands that needs a helper, else None."""
    t = r.st.type(e)
    if not t.is_64bit:
        return None
    if e.op is BinOp.POW:
        fn = r.st.helper("_pow_f64", "pow_f64", template=_T, exp_fn=f64_function(r, UnOp.EXP),
                         log_fn=f64_function(r, UnOp.LOG))
        return f"{fn}({lhs}, {rhs})"
    if e.op is BinOp.REM and t is DataType.F64:
        fn = r.st.helper("_rem_f64", "float_rem_f64", template=_T, ilogb=_ilogb(r))
        return f"{fn}({lhs}, {rhs})"
    if e.op in (BinOp.DIV, BinOp.REM) and t is DataType.I64:
        rem = e.op is BinOp.REM
        fn = r.st.helper(f"_{'rem' if rem else 'div'}_i64", "int_divrem", dtype="i64", udtype="u64", one="1li",
                         zero="0li", uzero="0lu", rem=rem)
        return f"{fn}({lhs}, {rhs})"
    return None


#: (NaN mask, the bits of +inf) per float type, as the unsigned type of its width
_NAN_BITS = {DataType.F32: ("u32", "0x7fffffffu", "0x7f800000u"),
             DataType.F64: ("u64", "0x7ffffffffffffffflu", "0x7ff0000000000000lu")}
#: integer type -> (saturation limit as a power of two, lower bound, upper bound)
_LIMITS = {DataType.I32: (31, -(2**31), 2**31 - 1), DataType.U32: (32, 0, 2**32 - 1),
           DataType.I64: (63, -(2**63), 2**63 - 1), DataType.U64: (64, 0, 2**64 - 1)}


def _float_literal(src: DataType, v: int) -> str:
    """An exactly representable integer-valued float literal (a power of two or zero, or ±2^k)."""
    return literal(src, float(v))


def cast(r: ExprRenderer, e: Cast, a: str) -> str | None:
    """WGSL of a scalar cast that involves a 64-bit type, else None."""
    dst, src = e.dtype, r.st.type(e.arg)
    if not (dst.is_64bit or src.is_64bit) or src is DataType.BOOL or dst is DataType.BOOL or src == dst:
        return None
    from .exprs import is_const

    if is_const(e.arg):  # naga's constant evaluator cannot cast 64-bit constants
        a = r.runtime(e.arg, a)
    if src.is_float and dst.is_int:
        ubits, mask, inf = _NAN_BITS[src]
        bits, lo, hi = _LIMITS[dst]
        limit = _float_literal(src, 2**bits)
        lo_limit = _float_literal(src, lo)
        fn = r.st.helper(f"_cvt_{tag(src)}_{tag(dst)}", "float_to_int_wide", template=_T, src=src.value,
                         dst=dst.value, ubits=ubits, nan_mask=mask, nan_inf=inf, hi_limit=limit, lo_limit=lo_limit,
                         hi_value=literal(dst, hi), lo_value=literal(dst, lo))
        return f"{fn}({a})"
    if src is DataType.I32 and dst.is_64bit and dst.is_int:
        # sign extension spelled out: naga's i64(i32) stores right on lavapipe but compares as a zero-extended
        # value (i64(-2) < 0 was false, so int64 // an int32 divisor floored wrong), and u64(i32) extends by zero
        ext = f"(u64(bitcast<u32>({a})) | select(0lu, 0xffffffff00000000lu, {a} < 0i))"
        return ext if dst is DataType.U64 else f"bitcast<i64>{ext}"
    if src.is_int and dst.is_int and dst.is_64bit and not src.is_64bit and src.is_signed != dst.is_signed:
        # naga converts i32 -> u64 by zero-extending and u32 -> i64 by sign-extending: widen within the
        # source's signedness (the value), then reinterpret (numpy's and vyre's wrap)
        same = DataType.I64 if src.is_signed else DataType.U64
        return f"bitcast<{dst.value}>({same.value}({a}))"
    if src is DataType.F32 and dst is DataType.F64:  # subnormals kept where f32 denormals are flushed
        return f"{r.st.helper('_cvt_f32_f64', 'f32_to_f64', template=_T)}({a})"
    if src is DataType.F64 and dst is DataType.F32:
        return f"{r.st.helper('_cvt_f64_f32', 'f64_to_f32', template=_T)}({a})"
    return f"{dst.value}({a})"


def bitcast(r: ExprRenderer, src: DataType, dst: DataType, a: str) -> str | None:
    """WGSL of a bitcast between a 64-bit scalar and a two-word vector (naga has no such bitcast), else None."""
    if src.is_64bit == dst.is_64bit:
        return None
    if src.is_64bit:
        fn = r.st.helper(f"_bc_{tag(src)}_{tag(dst)}", "words_of_64", template=_T, src=src.value, dst=dst.value)
    else:
        fn = r.st.helper(f"_bc_{tag(src)}_{tag(dst)}", "from_words_64", template=_T, src=src.value, dst=dst.value)
    return f"{fn}({a})"


__all__ = ["unary", "binary", "cast", "bitcast", "f64_function"]
