"""Lowering: vyre Program -> WGSL compute shader.

``lower(program)`` validates the program (:func:`vyre.ir.validate.validate`),
runs the IR passes of :mod:`vyre.ir.passes` that remove WGSL quirks, and renders the
jinja2 templates in ``vyre/lower/templates``. The output is deterministic: the same
program gives byte-identical WGSL in every process.

Shader interface (see docs/architecture.md):

* ``@group(0) @binding(n)``: the program's buffers. ``read`` -> ``var<storage, read>``,
  ``read_write``/``write`` -> ``var<storage, read_write>`` (runtime-sized arrays),
  ``uniform`` -> ``var<uniform>`` packed into 16-byte ``vec4`` rows
  (see :func:`vyre.lower.wgsl.uniform_binding_nbytes` for the size to bind).
  bool buffers and bool workgroup arrays hold u32 words; arrays used by atomics are ``array<atomic<T>>``.
* ``@group(1) @binding(0) var<uniform> _vyre: VyreParams`` (grid and buffer lengths).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import LoweringError
from ..ir.program import Program
from ..ir.subgroups import program_uses_subgroups
from ..ir.types import Access, DataType
from ..ir.validate import validate
from .trap import TRAP_BINDING, TRAP_GROUP, TRAP_NAME
from .wgsl import ENTRY_POINT, LOWERING_VERSION, program_wide_features, render, uniform_binding_nbytes

_KIND = {
    Access.READ: "read-only-storage",
    Access.READ_WRITE: "storage",
    Access.WRITE: "storage",
    Access.UNIFORM: "uniform",
}

PARAMS_GROUP = 1
PARAMS_BINDING = 0
PARAMS_NAME = "_vyre"


@dataclass(frozen=True)
class BindingInfo:
    """One binding of the lowered shader.

    ``dtype`` is the element type declared in the program (a bool buffer reports bool,
    although the shader stores u32 words); the params uniform reports u32.
    """

    group: int
    binding: int
    name: str
    kind: str  # "read-only-storage" | "storage" | "uniform"
    dtype: DataType
    access: Access
    atomic: bool


@dataclass(frozen=True)
class LoweredProgram:
    wgsl: str
    entry_point: str
    bindings: tuple[BindingInfo, ...]
    features: frozenset[str]
    workgroup_size: tuple[int, int, int]
    fingerprint: str
    lowering_version: str
    #: the loops instrumented by the loop trap (vyre/lower/trap.py), by number - 1; empty: no trap binding
    trap_loops: tuple[str, ...] = ()


def lower(program: Program, loop_cap: int | None = None) -> LoweredProgram:
    """Lower a program to WGSL. Raises ValidationError (invalid program) or LoweringError. ``loop_cap``: the
    adapter ends loops after that many iterations per invocation (llvmpipe): emit the loop trap."""
    if not isinstance(program, Program):
        raise LoweringError(
            f"lower() takes a vyre Program, got {type(program).__name__}",
            fix="build one with vyre.ir.builder.ProgramBuilder(...).build()",
        )
    validate(program)
    wgsl, atomics, uses_f16, trap_loops = render(program, loop_cap)
    bindings = [
        BindingInfo(0, b.binding, b.name, _KIND[b.access], b.dtype, b.access, b.name in atomics)
        for b in program.sorted_buffers
    ]
    bindings.append(
        BindingInfo(PARAMS_GROUP, PARAMS_BINDING, PARAMS_NAME, "uniform", DataType.U32, Access.UNIFORM, False)
    )
    if trap_loops:
        bindings.append(BindingInfo(TRAP_GROUP, TRAP_BINDING, TRAP_NAME, "storage", DataType.U32, Access.READ_WRITE,
                                    True))
    # WebGPU's feature names (an exported module asks the browser for them; the wgpu backend maps
    # "subgroups" to wgpu-native's "subgroup")
    features = frozenset({"shader-f16"} if uses_f16 else set()) | frozenset(
        {"subgroups"} if program_uses_subgroups(program) else set()) | program_wide_features(program)
    return LoweredProgram(
        wgsl=wgsl,
        entry_point=ENTRY_POINT,
        bindings=tuple(bindings),
        features=features,
        workgroup_size=program.workgroup_size,
        fingerprint=program.fingerprint,
        lowering_version=LOWERING_VERSION,
        trap_loops=trap_loops,
    )


#: LoweredProgram.features entries that are wgpu-native extensions, not WebGPU features
NONSTANDARD_FEATURES = frozenset({"shader-f64", "shader-int64"})


def refuse_nonstandard(lowered: LoweredProgram, what: str) -> None:
    """Raise UnsupportedFeatureError when ``lowered`` uses the 64-bit types: WebGPU (browsers, Dawn, the
    exported module) has no f64/i64/u64; only wgpu-native offers them, as extensions."""
    wide = sorted(lowered.features & NONSTANDARD_FEATURES)
    if wide:
        from ..errors import UnsupportedFeatureError

        raise UnsupportedFeatureError(
            f"{what}: the program uses 64-bit types ({', '.join(wide)}), which are not standard WebGPU (wgpu-native "
            "offers them as extensions; browsers and Dawn do not)",
            fix="export a float32/int32 version of the program (cast on the host), or run it with vyre's wgpu "
                "backend instead of exporting it")


__all__ = [
    "NONSTANDARD_FEATURES", "refuse_nonstandard",
    "lower", "BindingInfo", "LoweredProgram", "LOWERING_VERSION", "ENTRY_POINT", "uniform_binding_nbytes",
    "PARAMS_GROUP", "PARAMS_BINDING", "PARAMS_NAME", "TRAP_GROUP", "TRAP_BINDING", "TRAP_NAME",
]
