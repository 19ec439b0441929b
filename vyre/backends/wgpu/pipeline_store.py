"""The PipelineStore part of the wgpu backend: validation memo, lowering, the disk cache of lowerings,
the pipeline LRU and the bind-group layouts.

* Validation results are cached per fingerprint (bounded), lowerings per (fingerprint,
  codegen key) (bounded LRU), pipelines per :func:`~.keys.pipeline_key` (LRU, ``capacity``).
* With the disk cache on, a program never seen by this process is looked up on disk first:
  a hit skips both the validator and the lowering (the entry was written after validating
  under the same device limits and lowering contract).
* Pipelines are built on the current device and remember its generation; the store is
  cleared when the device is replaced.
"""

from __future__ import annotations

import json
import logging
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from ...errors import DeviceLostError, DispatchError, LoweringError, UnsupportedFeatureError, VyreError
from ...ir.program import Program
from ...ir.validate import validate
from ..artifact import CompiledProgram
from ..config import DispatchConfig
from .device import FEATURE_ALIASES, Device
from .disk_cache import DiskCache
from .keys import codegen_key, limits_digest, pipeline_key
from .pipelines import CompiledPipeline, LayoutCache, PipelineCache, Slot, compile_pipeline
from .transfer import Stats

if TYPE_CHECKING:
    from ...lower import LoweredProgram  # why: import time (vyre.lower loads jinja2 and its templates on first use)
    from .escape import RawShader  # why: a cycle (escape imports jobs, which imports this module)

log = logging.getLogger("vyre")

VALIDATED_CAPACITY = 4096

_FEATURE_FIX = {
    "shader-f16": "use f32 buffers and values instead of f16 (or run on an adapter with shader-f16; "
                  "backend.supports_f16() tells)",
    "subgroup": "avoid subgroup operations on this adapter",
    "shader-f64": "use f32 instead of f64 (or an adapter with shader-f64; backend.capabilities().f64 tells)",
    "shader-int64": "use 32-bit integers instead of i64/u64 (or an adapter with shader-int64; "
                    "backend.capabilities().int64 tells)",
}


def program_features(program: Program) -> set[str]:
    """Device features a program needs, judged from its declarations (the lowering may add more)."""
    need: set[str] = set()
    if any(b.dtype.uses_f16 for b in program.buffers) or any(w.dtype.uses_f16 for w in program.workgroup):
        need.add("shader-f16")
    dtypes = {b.dtype for b in program.buffers} | {w.dtype for w in program.workgroup}
    need.update(str(d.feature) for d in dtypes if d.is_64bit)
    return need


def default_lower(program: Program, loop_cap: int | None = None) -> LoweredProgram:
    """vyre's lowering (with the loop trap where the adapter cuts loops short: ``loop_cap``)."""
    try:
        from ...lower import lower  # why: import time (vyre.lower loads jinja2 and its templates on first use)
    except ImportError as exc:
        raise LoweringError(f"the lowering (vyre.lower.lower) is not available: {exc}",
                            fix="install vyre completely (vyre/lower must provide lower())") from None
    return lower(program, loop_cap)


class PipelineStore:
    """Programs -> validated -> lowered -> GPU pipelines, each step cached."""

    def __init__(self, dev: Device, stats: Stats, lower_fn: Callable[[Program], LoweredProgram] | None,
                 contract: str, disk: DiskCache | None, capacity: int,
                 release: Callable[[CompiledPipeline], None]) -> None:
        """``lower_fn``: a custom lowering (no loop trap), or None for vyre's own (:func:`default_lower`)."""
        self._dev = dev
        self._stats = stats
        self._lower_fn = lower_fn
        #: program tag -> (program name, loop texts) of the lowerings with a loop trap (the executor names them)
        self.traps: dict[int, tuple[str, tuple[str, ...]]] = {}
        self.contract = contract
        self.disk = disk
        self.cache = PipelineCache(capacity, release=release)
        self.layouts: LayoutCache | None = None
        self._validated: OrderedDict[str, None] = OrderedDict()
        self._disk_probed: OrderedDict[str, None] = OrderedDict()  # fingerprints the validator step missed on disk

    def attach(self) -> None:
        """Forget everything built on the old device (the disk cache stays: it is keyed by content)."""
        self.cache.clear()
        if self.layouts is None:
            self.layouts = LayoutCache(self._dev.device, self._stats)
        else:
            self.layouts.clear(self._dev.device)

    def forget(self) -> None:
        """Drop pipelines, layouts and the validation memo (the device is going away)."""
        self.cache.clear()
        if self.layouts is not None:
            self.layouts.clear()
        self._validated.clear()
        self._disk_probed.clear()

    # ---- validation -------------------------------------------------------------------------------
    def validate(self, program: object) -> None:
        """Raise ValidationError if ``program`` is invalid under this device's limits (cached)."""
        if not isinstance(program, Program):
            raise DispatchError(f"expected a vyre Program, got {type(program).__name__}",
                                fix="build one with vyre.ProgramBuilder(...).build()")
        try:
            fp = program.fingerprint
        except Exception:  # noqa: BLE001 - e.g. nested too deep to serialise: the validator names the problem
            fp = None
        if fp is not None:
            validated = self._validated
            if fp in validated:
                validated.move_to_end(fp)
                return
            if self._disk_lowering(fp) is not None:
                self._mark_validated(fp)
                return
        self._stats.bump("validations")
        validate(program, limits=self._dev.validation_limits)
        if fp is None:
            try:
                fp = program.fingerprint
            except Exception as exc:  # noqa: BLE001
                raise LoweringError(f"program {getattr(program, 'name', '?')!r} cannot be serialised: {exc}",
                                    fix="simplify the program (bind partial results with b.let)") from None
        self._mark_validated(fp)

    def _mark_validated(self, fp: str) -> None:
        with self._dev.lock:
            self._validated[fp] = None
            self._validated.move_to_end(fp)
            while len(self._validated) > VALIDATED_CAPACITY:
                self._validated.popitem(last=False)

    # ---- lowering ---------------------------------------------------------------------------------
    def loop_cap(self) -> int | None:
        """The loop cap lowerings are instrumented for (None: no loop trap)."""
        return self._dev.loop_cap if self._lower_fn is None else None

    def _disk_scope(self, config: DispatchConfig | None) -> str:
        scope: list[Any] = [repr(codegen_key(config)), limits_digest(self._dev.validation_limits)]
        cap = self.loop_cap()
        if cap is not None:  # a trapped lowering is another text (scopes without a trap are as before)
            scope.append(f"loop-trap={cap}")
        return json.dumps(scope)

    def _disk_lowering(self, fp: str, config: DispatchConfig | None = None) -> LoweredProgram | None:
        """A lowering from the disk cache (kept in the memory LRU), or None. Probes disk once per program."""
        if self.disk is None:
            return None
        lkey = (fp, codegen_key(config))
        with self._dev.lock:
            lowered: LoweredProgram | None = self.cache.lowering(lkey)
            if lowered is not None:
                return lowered
            if fp in self._disk_probed:
                return None
        lowered = self.disk.load(fp, self._disk_scope(config))
        with self._dev.lock:
            if lowered is None:
                self._disk_probed[fp] = None
                while len(self._disk_probed) > VALIDATED_CAPACITY:
                    self._disk_probed.popitem(last=False)
            else:
                self.cache.keep_lowering(lkey, lowered)
        return lowered

    def lower(self, program: Program, config: DispatchConfig | None = None) -> LoweredProgram:
        """The program's LoweredProgram: from the memory LRU, the disk cache or the lowering."""
        lowered = self._lowered(program, config)
        if getattr(lowered, "trap_loops", ()):  # a custom lowering's object may not have the field
            self._note_trap(program, lowered)
        return lowered

    def _lowered(self, program: Program, config: DispatchConfig | None) -> LoweredProgram:
        fp = program.fingerprint
        lkey = (fp, codegen_key(config))
        with self._dev.lock:
            lowered: LoweredProgram | None = self.cache.lowering(lkey)
        if lowered is not None:
            return lowered
        lowered = self._disk_lowering(fp, config)
        if lowered is not None:
            return lowered
        try:
            lowered = default_lower(program, self.loop_cap()) if self._lower_fn is None else self._lower_fn(program)
        except VyreError:
            raise
        except Exception as exc:
            raise LoweringError(f"lowering program {program.name!r} failed: {type(exc).__name__}: {exc}",
                                fix="report this lowering bug with the program's text form") from exc
        self._stats.bump("lowerings")
        if self.disk is not None:
            self.disk.store(fp, self._disk_scope(config), lowered)
        with self._dev.lock:
            self._disk_probed.pop(fp, None)
            self.cache.keep_lowering(lkey, lowered)
        return lowered

    def _note_trap(self, program: Program, lowered: LoweredProgram) -> None:
        """Remember the loops of a trapped lowering, so a trap code can name its program and loop."""
        from ...lower.trap import program_tag  # why: import time (vyre.lower is loaded once anything is lowered)

        self.traps[program_tag(program.fingerprint)] = (program.name, lowered.trap_loops)

    def needs(self, program: Program | None, lowered: LoweredProgram) -> frozenset[str]:
        need = program_features(program) if program is not None else set()
        need |= {FEATURE_ALIASES.get(str(f), str(f)) for f in (getattr(lowered, "features", None) or ())}
        return frozenset(need)

    def check_needs(self, name: str, need: Iterable[str]) -> None:
        missing = sorted(set(need) - self._dev.features)
        if missing:
            info = self._dev.info
            raise UnsupportedFeatureError(
                f"program {name!r} needs device feature(s) {missing}, which adapter "
                f"{info['device']!r} ({info['backend_type']}) does not offer",
                fix="; ".join(_FEATURE_FIX.get(m, f"run on an adapter with {m}") for m in missing),
            )

    # ---- pipelines --------------------------------------------------------------------------------
    def compiled(self, program: Program, config: DispatchConfig | None = None) -> CompiledPipeline:
        """The GPU pipeline of a validated program (memory cache -> lowering -> pipeline)."""
        key = pipeline_key(program.fingerprint, config, self.contract, self._dev.identity)
        with self._dev.lock:
            self._dev.check_alive()
            hit = self.cache.lookup(key)
        if hit is not None:
            if hit.needs:
                self.check_needs(program.name, hit.needs)
            return hit
        lowered = self.lower(program, config)
        need = self.needs(program, lowered)
        self.check_needs(program.name, need)
        return self.build(key, program, lowered, need)

    def build(self, key: tuple[Any, ...], program: Program | None, lowered: LoweredProgram | RawShader,
              need: frozenset[str], groups: list[list[Slot]] | None = None) -> CompiledPipeline:
        dev = self._dev
        with dev.lock:
            dev.check_alive()
            p = self.cache.get(key)
            if p is not None:
                return p
            t0 = time.perf_counter()
            try:
                p = compile_pipeline(dev.device, program, lowered, key, self.layouts, groups)
            except DeviceLostError:
                dev.mark_lost()
                raise
            p.needs = need
            p.generation = dev.generation
            self.cache.put(p)
            log.debug("vyre: compiled pipeline %s (%s) in %.1f ms", p.program_name, key[0][:12],
                      (time.perf_counter() - t0) * 1e3)
            return p

    def pipeline_for(self, artifact: CompiledProgram) -> CompiledPipeline:
        """The pipeline of a CompiledProgram: cached, or rebuilt from its WGSL (never lowered again)."""
        key = (*artifact.key[:3], self._dev.identity)
        with self._dev.lock:
            self._dev.check_alive()
            p = self.cache.lookup(key)
            if p is None:
                need = self.needs(artifact.program, artifact.lowered)
                self.check_needs(artifact.name, need)
                p = self.build(key, artifact.program, artifact.lowered, need)
            if p.artifact is None:
                p.artifact = artifact
            return p

    def artifact(self, p: CompiledPipeline) -> CompiledProgram:
        with self._dev.lock:
            if p.artifact is None:
                p.artifact = CompiledProgram.from_pipeline(p)
            return p.artifact

    def invalidate(self, fingerprints: Any = None) -> int:
        """Drop pipelines, lowerings, validation results and disk entries (all, or of ``fingerprints``: a
        fingerprint, an object with a ``fingerprint`` such as a Program, or an iterable of those)."""
        fps = None
        if fingerprints is not None:
            if isinstance(fingerprints, str) or hasattr(fingerprints, "fingerprint"):
                fingerprints = [fingerprints]
            fps = {f if isinstance(f, str) else f.fingerprint for f in fingerprints}
        with self._dev.lock:
            n = self.cache.remove(fps)
            for store in (self._validated, self._disk_probed):
                for fp in [f for f in store if fps is None or f in fps]:
                    del store[fp]
            if self.disk is not None:
                self.disk.remove(fps)
            self._stats.bump("invalidations")
            return n


__all__ = ["PipelineStore", "default_lower", "program_features", "VALIDATED_CAPACITY"]
