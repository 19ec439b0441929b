"""The result of compiling a program on any backend: :class:`CompiledProgram` (WGSL, bindings, features)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..ir.program import Program

if TYPE_CHECKING:  # why: annotations only (importing vyre.backends.wgpu here would be a cycle)
    from ..lower import BindingInfo
    from .wgpu.pipelines import CompiledPipeline


@dataclass(frozen=True, eq=False)
class CompiledProgram:
    """A program compiled by :meth:`WgpuBackend.compile`: its WGSL and binding layout.

    ``bindings`` are :class:`vyre.lower.BindingInfo` (group, binding, name, kind, dtype,
    access, atomic), the program's buffers at group 0 in binding order, then the hidden
    params uniform ``_vyre`` at group 1. ``features`` are the device features it needs.
    ``key`` is its pipeline cache key. Pass it to :meth:`WgpuBackend.dispatch_compiled`:
    that never lowers again (if the GPU pipeline was evicted, it is rebuilt from ``wgsl``).
    """

    program: Program
    wgsl: str
    entry_point: str
    bindings: tuple[BindingInfo, ...]
    features: frozenset[str]
    workgroup_size: tuple[int, ...]
    fingerprint: str
    lowering_version: str
    key: tuple[Any, ...]
    lowered: Any = field(repr=False)

    @property
    def name(self) -> str:
        return self.program.name

    @classmethod
    def from_pipeline(cls, compiled: CompiledPipeline) -> CompiledProgram:
        lowered = compiled.lowered
        assert compiled.program is not None  # raw WGSL pipelines (no program) get no artifact
        return cls(program=compiled.program, wgsl=lowered.wgsl, entry_point=lowered.entry_point,
                   bindings=tuple(lowered.bindings), features=frozenset(lowered.features),
                   workgroup_size=tuple(lowered.workgroup_size), fingerprint=compiled.key[0],
                   lowering_version=str(lowered.lowering_version), key=compiled.key, lowered=lowered)

    def __repr__(self) -> str:
        return (f"CompiledProgram({self.name!r}, fingerprint={self.fingerprint[:12]}..., "
                f"bindings={len(self.bindings)}, features={sorted(self.features)})")


__all__ = ["CompiledProgram"]
