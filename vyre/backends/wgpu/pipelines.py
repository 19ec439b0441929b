"""Compiled pipelines: shader module, bind group layouts (cached per signature), pipeline
layout, compute pipeline; and the in-memory LRU cache that holds them.

Layouts are built from ``LoweredProgram.bindings`` (never ``layout="auto"``), so a binding
the shader does not use still gets a slot and bind groups always match. Keys are made in
:mod:`.keys`. The cache also keeps the lowerings (bounded LRU, by fingerprint and codegen key).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ...errors import BackendError, LoweringError
from ...ir.program import Program
from ..artifact import CompiledProgram
from .failures import translate_error
from .pool import BufferPool
from .transfer import ResourceSet, Stats
from .types import GPUBindGroupLayout, GPUComputePipeline, GPUDevice, GPUPipelineLayout, GPUShaderModule

if TYPE_CHECKING:  # why: annotation only; the lowering loads on first compile, not with the backend
    from ...lower import BindingInfo

#: The (binding, kind) pairs of one bind group: what its layout is cached by.
Signature = tuple[tuple[int, str], ...]

PARAMS_NAME = "_vyre"
TRAP_NAME = "_vyre_trap"  # vyre.lower.trap.TRAP_NAME (vyre.lower loads only when lowering)
_KINDS = ("read-only-storage", "storage", "uniform")
DEFAULT_CAPACITY = 256


@dataclass(frozen=True)
class Slot:
    """One binding of the pipeline: which buffer feeds it (``index`` into the plan's buffers, -1 for params)."""

    group: int
    binding: int
    name: str
    kind: str
    index: int


@dataclass(eq=False)
class CompiledPipeline:
    key: tuple[Any, ...]
    program_name: str
    lowered: Any  # a vyre.lower.LoweredProgram, or an escape.RawShader for raw WGSL
    module: GPUShaderModule
    pipeline_layout: GPUPipelineLayout
    pipeline: GPUComputePipeline
    group_layouts: list[GPUBindGroupLayout]  # index = bind group number
    groups: list[list[Slot]]  # index = bind group number
    program: Program | None = None  # None for raw WGSL
    rsets: list[ResourceSet] = field(default_factory=lambda: [ResourceSet()])  # one per job slot of one submission
    uses: int = 0
    last_used: int = 0
    pins: int = 0  # > 0: never evicted (compile_persistent)
    needs: frozenset[str] = frozenset()  # device features the pipeline needs
    generation: int = 0  # the backend's device generation it was built on
    artifact: CompiledProgram | None = None  # the one handed out by backend.compile()

    @property
    def wgsl(self) -> str:
        wgsl: str = self.lowered.wgsl
        return wgsl

    @property
    def fingerprint(self) -> str:
        fingerprint: str = self.key[0]
        return fingerprint

    @property
    def resources(self) -> ResourceSet:
        """The first job slot's resources (the one a single dispatch uses)."""
        return self.rsets[0]

    def resource_set(self, k: int) -> ResourceSet:
        """Resources of job slot ``k`` (several jobs of one submission need distinct buffers)."""
        while len(self.rsets) <= k:
            self.rsets.append(ResourceSet())
        return self.rsets[k]

    def nbytes(self) -> int:
        return sum(r.nbytes() for r in self.rsets)

    def release_resources(self, pool: BufferPool) -> None:
        for r in self.rsets:
            r.release(pool)
        del self.rsets[1:]


def binding_slots(program: Program, lowered: Any) -> list[list[Slot]]:
    """Match the lowering's bindings to the program's buffers (by name) and group them."""
    index_of = {b.name: k for k, b in enumerate(program.sorted_buffers)}
    return group_slots(program.name, lowered.bindings, index_of)


def group_slots(name: str, bindings: Iterable[BindingInfo], index_of: dict[str, int]) -> list[list[Slot]]:
    """Slots by bind group, each group sorted by binding; ``index_of`` maps binding names to buffer indices."""
    slots: list[Slot] = []
    seen: set[tuple[int, int]] = set()
    for info in bindings:
        kind = str(info.kind)
        if kind not in _KINDS:
            raise LoweringError(f"lowering of {name!r} produced binding {info.name!r} of unknown kind {kind!r}",
                                fix="binding kinds are read-only-storage, storage or uniform")
        if info.name == PARAMS_NAME:
            idx = -1
        elif info.name == TRAP_NAME:  # the loop trap's buffer (vyre/lower/trap.py): Bindings.trap
            idx = -2
        elif info.name in index_of:
            idx = index_of[info.name]
        else:
            raise LoweringError(f"lowering of {name!r} binds {info.name!r}, which is not one of the program's buffers",
                                fix="report this lowering bug with the program's text form")
        pos = (int(info.group), int(info.binding))
        if pos in seen:
            raise LoweringError(f"lowering of {name!r} binds two buffers at group {pos[0]} binding {pos[1]}")
        seen.add(pos)
        slots.append(Slot(group=pos[0], binding=pos[1], name=info.name, kind=kind, index=idx))
    missing = set(index_of) - {s.name for s in slots}
    if missing:
        raise LoweringError(f"lowering of {name!r} did not bind buffer(s) {sorted(missing)}",
                            fix="report this lowering bug with the program's text form")
    n_groups = 1 + max((s.group for s in slots), default=-1)
    groups: list[list[Slot]] = [[] for _ in range(n_groups)]
    for s in slots:
        groups[s.group].append(s)
    for g in groups:
        g.sort(key=lambda s: s.binding)
    return groups


class LayoutCache:
    """Bind group layouts by signature (the (binding, kind) pairs of one group) and pipeline layouts by
    the tuple of their groups' signatures, so programs with the same interface share them."""

    def __init__(self, device: GPUDevice, stats: Stats) -> None:
        self.device = device
        self.stats = stats
        self.groups: dict[Signature, GPUBindGroupLayout] = {}
        self.pipelines: dict[tuple[Signature, ...], GPUPipelineLayout] = {}

    def group_layout(self, signature: Signature) -> GPUBindGroupLayout:
        import wgpu  # why: lazy, importing vyre must not import wgpu

        layout = self.groups.get(signature)
        if layout is None:
            entries = [{"binding": b, "visibility": wgpu.ShaderStage.COMPUTE, "buffer": {"type": kind}}
                       for b, kind in signature]
            layout = self.device.create_bind_group_layout(label="vyre-layout", entries=entries)
            self.stats.bump("bind_group_layouts_created")
            self.groups[signature] = layout
        return layout

    def pipeline_layout(self, signatures: tuple[Signature, ...]) -> GPUPipelineLayout:
        layout = self.pipelines.get(signatures)
        if layout is None:
            layout = self.device.create_pipeline_layout(
                label="vyre-pipeline-layout", bind_group_layouts=[self.group_layout(s) for s in signatures])
            self.pipelines[signatures] = layout
        return layout

    def clear(self, device: GPUDevice | None = None) -> None:
        self.groups.clear()
        self.pipelines.clear()
        if device is not None:
            self.device = device


def compile_pipeline(device: GPUDevice, program: Program | None, lowered: Any, key: tuple[Any, ...],
                     layouts: LayoutCache | None = None, groups: list[list[Slot]] | None = None) -> CompiledPipeline:
    """Create the shader module, layouts and compute pipeline. wgpu errors become LoweringError.

    ``program`` may be None (raw WGSL): then ``groups`` must be given.
    """
    import wgpu  # why: lazy, importing vyre must not import wgpu

    name = program.name if program is not None else "wgsl"
    if groups is None:
        assert program is not None  # raw WGSL comes with its groups
        groups = binding_slots(program, lowered)
    label = f"vyre:{name}"
    signatures = tuple(tuple((s.binding, s.kind) for s in slots) for slots in groups)
    try:
        # naga (wgpu-native v27) enables subgroup built-ins through the device feature and rejects
        # the standard `enable subgroups;` directive (Tint requires it): drop that line for naga
        code = lowered.wgsl.replace("\nenable subgroups;\n", "\n", 1)
        module = device.create_shader_module(label=label, code=code)
        if layouts is not None:
            group_layouts = [layouts.group_layout(sig) for sig in signatures]
            pipeline_layout = layouts.pipeline_layout(signatures)
        else:
            group_layouts = [
                device.create_bind_group_layout(label=f"{label}:g{g}", entries=[
                    {"binding": b, "visibility": wgpu.ShaderStage.COMPUTE, "buffer": {"type": kind}}
                    for b, kind in sig])
                for g, sig in enumerate(signatures)
            ]
            pipeline_layout = device.create_pipeline_layout(label=label, bind_group_layouts=group_layouts)
        pipeline = device.create_compute_pipeline(
            label=label, layout=pipeline_layout,
            compute={"module": module, "entry_point": getattr(lowered, "entry_point", "main") or "main"},
        )
    except Exception as exc:
        raise translate_error(exc, stage="compile", wgsl=lowered.wgsl, program=name) from None
    return CompiledPipeline(key=key, program_name=name, lowered=lowered, module=module,
                            pipeline_layout=pipeline_layout, pipeline=pipeline,
                            group_layouts=group_layouts, groups=groups, program=program)


class PipelineCache:
    """LRU of compiled pipelines and of lowerings. ``capacity`` bounds the unpinned pipelines; pinned ones
    (compile_persistent) are never evicted and do not count against it.

    ``release`` is called with each pipeline that leaves the cache (to return its buffers).
    Counters: ``hits``, ``misses`` (lookups by :meth:`lookup`), ``evictions``, ``compiled``.
    """

    def __init__(self, capacity: int = DEFAULT_CAPACITY, release: Callable[[CompiledPipeline], None] | None = None):
        self.pipelines: OrderedDict[tuple[Any, ...], CompiledPipeline] = OrderedDict()
        self.lowered: OrderedDict[tuple[Any, ...], Any] = OrderedDict()  # -> LoweredProgram
        self._capacity = _check_capacity(capacity)
        self.release = release or (lambda p: None)
        self.hits = self.misses = self.evictions = self.compiled = 0

    # ---- capacity ---------------------------------------------------------------------
    @property
    def capacity(self) -> int:
        return self._capacity

    @capacity.setter
    def capacity(self, value: int) -> None:
        self._capacity = _check_capacity(value)
        self._evict()

    @property
    def lowering_capacity(self) -> int:
        return max(64, self._capacity)

    # ---- pipelines ----------------------------------------------------------------------
    def lookup(self, key: tuple[Any, ...]) -> CompiledPipeline | None:
        """The cached pipeline (marked most recently used; counted as a hit) or None (a miss)."""
        p = self.pipelines.get(key)
        if p is None:
            self.misses += 1
            return None
        self.pipelines.move_to_end(key)
        self.hits += 1
        return p

    def get(self, key: tuple[Any, ...]) -> CompiledPipeline | None:
        """The cached pipeline without counting or reordering."""
        return self.pipelines.get(key)

    def put(self, pipeline: CompiledPipeline) -> None:
        old = self.pipelines.pop(pipeline.key, None)
        if old is not None and old is not pipeline:
            self.release(old)
        self.pipelines[pipeline.key] = pipeline
        self.compiled += 1
        self._evict()

    def _evict(self) -> None:
        """Evict least recently used unpinned pipelines until at most ``capacity`` unpinned ones remain."""
        unpinned = [k for k, p in self.pipelines.items() if p.pins == 0]
        over = len(unpinned) - self._capacity
        if over <= 0:
            return
        for key in unpinned[:over]:
            self.release(self.pipelines.pop(key))
            self.evictions += 1

    def remove(self, fingerprints: Iterable[str] | None = None) -> int:
        """Drop every pipeline (``fingerprints`` None) or those of the given program fingerprints,
        pinned or not, and their lowerings. Returns the number of pipelines dropped."""
        fps = None if fingerprints is None else set(fingerprints)
        keys = [k for k in self.pipelines if fps is None or k[0] in fps]
        for k in keys:
            self.release(self.pipelines.pop(k))
        for k in [k for k in self.lowered if fps is None or k[0] in fps]:
            del self.lowered[k]
        return len(keys)

    def clear(self) -> None:
        self.remove(None)

    # ---- lowerings ---------------------------------------------------------------------
    def lowering(self, key: tuple[Any, ...]) -> Any:
        lowered = self.lowered.get(key)
        if lowered is not None:
            self.lowered.move_to_end(key)
        return lowered

    def keep_lowering(self, key: tuple[Any, ...], lowered: Any) -> None:
        self.lowered[key] = lowered
        self.lowered.move_to_end(key)
        while len(self.lowered) > self.lowering_capacity:
            self.lowered.popitem(last=False)

    # ---- reporting ---------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self.pipelines)

    def snapshot(self) -> dict[str, Any]:
        looked = self.hits + self.misses
        return {"entries": len(self.pipelines), "capacity": self._capacity,
                "pinned": sum(1 for p in self.pipelines.values() if p.pins),
                "hits": self.hits, "misses": self.misses, "evictions": self.evictions,
                "hit_rate": (self.hits / looked) if looked else 0.0, "compiled": self.compiled,
                "lowerings": len(self.lowered)}


def _check_capacity(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise BackendError(f"pipeline cache capacity must be an int >= 1, got {value!r}",
                           fix="pass e.g. pipeline_cache_capacity=256")
    return value


__all__ = ["CompiledPipeline", "PipelineCache", "LayoutCache", "Slot", "binding_slots", "group_slots",
           "compile_pipeline", "PARAMS_NAME", "DEFAULT_CAPACITY"]
