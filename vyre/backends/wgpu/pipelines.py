"""Compiled pipelines: shader module, explicit bind group layouts, pipeline layout, compute pipeline.

Cached in memory per backend, keyed by ``(program fingerprint, lowering_version)``; the
lowering itself is cached per program fingerprint. Layouts are built from
``LoweredProgram.bindings`` (never ``layout="auto"``), so a binding the shader does not use
still gets a slot and bind groups always match.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ...errors import LoweringError
from .device import translate_error
from .transfer import ResourceSet

PARAMS_NAME = "_vyre"
_KINDS = ("read-only-storage", "storage", "uniform")


@dataclass(frozen=True)
class Slot:
    """One binding of the pipeline: which buffer feeds it (``index`` into the plan's buffers, -1 for params)."""

    group: int
    binding: int
    name: str
    kind: str
    index: int


@dataclass
class CompiledPipeline:
    key: tuple[str, str]
    program_name: str
    lowered: Any
    module: Any
    pipeline_layout: Any
    pipeline: Any
    group_layouts: list  # index = bind group number
    groups: list  # index = bind group number -> list[Slot]
    resources: ResourceSet = field(default_factory=ResourceSet)
    uses: int = 0
    last_used: int = 0

    @property
    def wgsl(self) -> str:
        return self.lowered.wgsl


def binding_slots(program, lowered) -> list[list[Slot]]:
    """Match the lowering's bindings to the program's buffers (by name) and group them."""
    index_of = {b.name: k for k, b in enumerate(program.sorted_buffers)}
    slots: list[Slot] = []
    seen: set[tuple[int, int]] = set()
    for info in lowered.bindings:
        kind = str(info.kind)
        if kind not in _KINDS:
            raise LoweringError(f"lowering of {program.name!r} produced binding {info.name!r} of unknown kind {kind!r}",
                                fix="binding kinds are read-only-storage, storage or uniform")
        if info.name == PARAMS_NAME:
            idx = -1
        elif info.name in index_of:
            idx = index_of[info.name]
        else:
            raise LoweringError(f"lowering of {program.name!r} binds {info.name!r}, which is not one of the program's buffers",
                                fix="report this lowering bug with the program's text form")
        pos = (int(info.group), int(info.binding))
        if pos in seen:
            raise LoweringError(f"lowering of {program.name!r} binds two buffers at group {pos[0]} binding {pos[1]}")
        seen.add(pos)
        slots.append(Slot(group=pos[0], binding=pos[1], name=info.name, kind=kind, index=idx))
    missing = set(index_of) - {s.name for s in slots}
    if missing:
        raise LoweringError(f"lowering of {program.name!r} did not bind buffer(s) {sorted(missing)}",
                            fix="report this lowering bug with the program's text form")
    n_groups = 1 + max((s.group for s in slots), default=-1)
    groups: list[list[Slot]] = [[] for _ in range(n_groups)]
    for s in slots:
        groups[s.group].append(s)
    for g in groups:
        g.sort(key=lambda s: s.binding)
    return groups


def compile_pipeline(device, program, lowered, key: tuple[str, str]) -> CompiledPipeline:
    """Create the shader module, layouts and compute pipeline. wgpu errors become LoweringError."""
    import wgpu

    groups = binding_slots(program, lowered)
    label = f"vyre:{program.name}"
    try:
        module = device.create_shader_module(label=label, code=lowered.wgsl)
        group_layouts = []
        for g, slots in enumerate(groups):
            entries = [
                {"binding": s.binding, "visibility": wgpu.ShaderStage.COMPUTE, "buffer": {"type": s.kind}}
                for s in slots
            ]
            group_layouts.append(device.create_bind_group_layout(label=f"{label}:g{g}", entries=entries))
        pipeline_layout = device.create_pipeline_layout(label=label, bind_group_layouts=group_layouts)
        pipeline = device.create_compute_pipeline(
            label=label, layout=pipeline_layout,
            compute={"module": module, "entry_point": getattr(lowered, "entry_point", "main") or "main"},
        )
    except Exception as exc:
        raise translate_error(exc, stage="compile", wgsl=lowered.wgsl, program=program.name) from None
    return CompiledPipeline(key=key, program_name=program.name, lowered=lowered, module=module,
                            pipeline_layout=pipeline_layout, pipeline=pipeline,
                            group_layouts=group_layouts, groups=groups)


class PipelineCache:
    """Lowerings by program fingerprint and pipelines by (fingerprint, lowering_version)."""

    def __init__(self):
        self.lowered: dict[str, Any] = {}
        self.pipelines: dict[tuple[str, str], CompiledPipeline] = {}
        self.hits = 0
        self.compiled = 0

    def clear(self) -> None:
        for p in self.pipelines.values():
            p.resources.release()
        self.lowered.clear()
        self.pipelines.clear()

    def __len__(self) -> int:
        return len(self.pipelines)


__all__ = ["CompiledPipeline", "PipelineCache", "Slot", "binding_slots", "compile_pipeline", "PARAMS_NAME"]
