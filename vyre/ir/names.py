"""Which names a program may use for variables, buffers and workgroup arrays.

A name must be a WGSL identifier that is not a keyword, reserved word or predeclared name the
generated shader needs, and not ``__...`` or ``_vyre...`` (the lowering's own names).
"""

from __future__ import annotations

import re

_WGSL_KEYWORDS = """
alias break case const const_assert continue continuing default diagnostic discard else enable false fn for
if let loop override requires return struct switch true var while
""".split()
_WGSL_RESERVED = """
NULL Self abstract active alignas alignof as asm asm_fragment async attribute auto await become
binding_array cast catch class co_await co_return co_yield coherent column_major common compile
compile_fragment concept const_cast consteval constexpr constinit crate debugger decltype delete demote
demote_to_helper do dynamic_cast enum explicit export extends extern external fallthrough filter final
finally friend from fxgroup get goto groupshared highp impl implements import inline instanceof interface
layout lowp macro macro_rules match mediump meta mod module move mut mutable namespace new nil noexcept
noinline nointerpolation noperspective null nullptr of operator package packoffset partition pass patch
pixelfragment precise precision premerge priv protected pub public readonly ref regardless register
reinterpret_cast require resource restrict self set shared sizeof smooth snorm static static_assert
static_cast std subroutine super target template this thread_local throw trait try type typedef typeid
typename typeof union unless unorm unsafe unsized use using varying virtual volatile wgsl where with
writeonly yield
""".split()
# Predeclared names the generated shader may use: shadowing them would break it.
_WGSL_PREDECLARED = """
bool f16 f32 i32 u32 vec2 vec3 vec4 vec2i vec3i vec4i vec2u vec3u vec4u vec2f vec3f vec4f vec2h vec3h vec4h
mat2x2 mat2x3 mat2x4 mat3x2 mat3x3 mat3x4 mat4x2 mat4x3 mat4x4 array atomic ptr sampler sampler_comparison
function private workgroup uniform storage handle read write read_write
abs acos acosh all any arrayLength asin asinh atan atan2 atanh bitcast ceil clamp cos cosh
countLeadingZeros countOneBits countTrailingZeros cross degrees determinant distance dot exp exp2
extractBits faceForward firstLeadingBit firstTrailingBit floor fma fract frexp insertBits inverseSqrt
ldexp length log log2 max min mix modf normalize pow quantizeToF16 radians reflect refract reverseBits
round saturate select sign sin sinh smoothstep sqrt step tan tanh transpose trunc
atomicLoad atomicStore atomicAdd atomicSub atomicMax atomicMin atomicAnd atomicOr atomicXor
atomicExchange atomicCompareExchangeWeak workgroupBarrier storageBarrier textureBarrier
workgroupUniformLoad pack4x8snorm pack4x8unorm pack2x16snorm pack2x16unorm pack2x16float
unpack4x8snorm unpack4x8unorm unpack2x16snorm unpack2x16unorm unpack2x16float
""".split()
_KEYWORDS = frozenset(_WGSL_KEYWORDS) | frozenset(_WGSL_RESERVED)
_PREDECLARED = frozenset(_WGSL_PREDECLARED)
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def name_problem(name: str) -> str | None:
    """Why ``name`` cannot be used for a variable, buffer or workgroup array (None if it can)."""
    if not isinstance(name, str) or not _IDENT.match(name):
        return (f"{name!r} is not a valid identifier: use ASCII letters, digits and underscores, "
                "not starting with a digit")
    if name == "_":
        return "`_` alone is not an identifier in WGSL"
    if name.startswith("__"):
        return f"{name!r} starts with `__`, which WGSL reserves"
    if name.startswith("_vyre"):
        return f"{name!r} starts with `_vyre`, which is reserved for names in vyre's generated code"
    if name in _KEYWORDS:
        return f"{name!r} is a WGSL keyword or reserved word"
    if name in _PREDECLARED:
        return f"{name!r} is a predeclared WGSL name (type, built-in function or enumerant) the shader needs"
    return None


def suggest_name(name: object) -> str:
    """A name close to ``name`` that :func:`name_problem` accepts."""
    s = re.sub(r"[^A-Za-z0-9_]", "_", str(name)).lstrip("_") or "x"
    if s[0].isdigit():
        s = "v" + s
    if name_problem(s) is not None:
        s += "_"
    if name_problem(s) is not None:  # e.g. still reserved after the suffix
        s = "v_" + s
    return s


__all__ = ["name_problem", "suggest_name"]
