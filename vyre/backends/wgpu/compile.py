"""Compilation half of WgpuBackend: validate → lower → GPU pipeline, with the memory and disk caches.

* Validation results are cached per fingerprint (bounded), lowerings per (fingerprint,
  codegen key) (bounded LRU), pipelines per :func:`~.keys.pipeline_key` (LRU, ``capacity``).
* With the disk cache on, a program never seen by this process is looked up on disk first:
  a hit skips both the validator and the lowering (the entry was written after validating
  under the same device limits and lowering contract).
* ``compile`` / ``compile_persistent`` / ``dispatch_compiled`` / ``prepare`` /
  ``invalidate_pipeline_cache`` are the public API.
"""

from __future__ import annotations

import json
from collections import OrderedDict

import numpy as np

from ...errors import (
    DeviceLostError, DispatchError, LoweringError, UnsupportedFeatureError, VyreError,
)
from ...ir.program import Program
from .compiled import CompiledProgram, PersistentPipeline
from .device import FEATURE_ALIASES
from .keys import codegen_key, limits_digest, pipeline_key
from .pipelines import CompiledPipeline, compile_pipeline
from .transfer import MIN_STAGING

VALIDATED_CAPACITY = 4096

#: The shader prepare() runs once (input at binding 0, output at binding 1, like dispatch_wgsl binds them).
WARM_WGSL = """
@group(0) @binding(0) var<storage, read> src: array<u32>;
@group(0) @binding(1) var<storage, read_write> dst: array<u32>;
@compute @workgroup_size(1) fn main() { dst[0] = src[0] + 1u; }
"""

_FEATURE_FIX = {
    "shader-f16": "use f32 buffers and values instead of f16 (or run on an adapter with shader-f16; "
                  "backend.supports_f16() tells)",
    "subgroup": "avoid subgroup operations on this adapter",
}


def _find_validate():
    try:
        from ...ir.validate import validate
    except ModuleNotFoundError as exc:
        if exc.name in ("vyre.ir.validate",):
            return None
        raise
    return validate


def program_features(program) -> set[str]:
    """Device features a program needs, judged from its declarations (the lowering may add more)."""
    need: set[str] = set()
    if any(b.dtype.uses_f16 for b in program.buffers) or any(w.dtype.uses_f16 for w in program.workgroup):
        need.add("shader-f16")
    return need


class CompileMixin:
    """Needs: _lock, _cache (PipelineCache), _layouts, _disk (DiskCache | None), _contract, _identity,
    _lower_fn, _features, _limits, _stats, _device, _check_alive(), _mark_lost()."""

    def _init_compile_state(self) -> None:
        self._validate_fn = _find_validate()
        self._validated: OrderedDict[str, None] = OrderedDict()
        self._disk_probed: OrderedDict[str, None] = OrderedDict()  # fingerprints the validator step missed on disk

    # ---- validation -------------------------------------------------------------------
    def _validate(self, program) -> None:
        """Raise ValidationError if ``program`` is invalid under this device's limits (cached)."""
        if not isinstance(program, Program):
            raise DispatchError(f"expected a vyre Program, got {type(program).__name__}",
                                fix="build one with vyre.ProgramBuilder(...).build()")
        try:
            fp = program.fingerprint
        except Exception:
            fp = None  # e.g. nested too deep to serialise: the validator names the problem
        if fp is not None:
            with self._lock:
                if fp in self._validated:
                    self._validated.move_to_end(fp)
                    return
            if self._disk_lowering(fp) is not None:
                self._mark_validated(fp)
                return
        if self._validate_fn is not None:
            self._stats.bump("validations")
            self._validate_fn(program, limits=self._limits)
        if fp is None:
            try:
                fp = program.fingerprint
            except Exception as exc:
                raise LoweringError(f"program {getattr(program, 'name', '?')!r} cannot be serialised: {exc}",
                                    fix="simplify the program (bind partial results with b.let)") from None
        self._mark_validated(fp)

    def _mark_validated(self, fp: str) -> None:
        with self._lock:
            self._validated[fp] = None
            self._validated.move_to_end(fp)
            while len(self._validated) > VALIDATED_CAPACITY:
                self._validated.popitem(last=False)

    # ---- lowering ---------------------------------------------------------------------
    def _disk_scope(self, config) -> str:
        return json.dumps([repr(codegen_key(config)), limits_digest(self._limits)])

    def _disk_lowering(self, fp: str, config=None):
        """A lowering from the disk cache (kept in the memory LRU), or None. Probes disk once per program."""
        if self._disk is None:
            return None
        lkey = (fp, codegen_key(config))
        with self._lock:
            lowered = self._cache.lowering(lkey)
            if lowered is not None:
                return lowered
            if fp in self._disk_probed:
                return None
        lowered = self._disk.load(fp, self._disk_scope(config))
        with self._lock:
            if lowered is None:
                self._disk_probed[fp] = None
                while len(self._disk_probed) > VALIDATED_CAPACITY:
                    self._disk_probed.popitem(last=False)
            else:
                self._cache.keep_lowering(lkey, lowered)
        return lowered

    def lower_program(self, program, config=None):
        """The program's LoweredProgram: from the memory LRU, the disk cache or the lowering."""
        fp = program.fingerprint
        lkey = (fp, codegen_key(config))
        with self._lock:
            lowered = self._cache.lowering(lkey)
        if lowered is not None:
            return lowered
        lowered = self._disk_lowering(fp, config)
        if lowered is not None:
            return lowered
        try:
            lowered = self._lower_fn(program)
        except VyreError:
            raise
        except Exception as exc:
            raise LoweringError(f"lowering program {program.name!r} failed: {type(exc).__name__}: {exc}",
                                fix="report this lowering bug with the program's text form") from exc
        self._stats.bump("lowerings")
        if self._disk is not None:
            self._disk.store(fp, self._disk_scope(config), lowered)
        with self._lock:
            self._disk_probed.pop(fp, None)
            self._cache.keep_lowering(lkey, lowered)
        return lowered

    def _needs(self, program, lowered) -> frozenset:
        need = program_features(program) if program is not None else set()
        need |= {FEATURE_ALIASES.get(str(f), str(f)) for f in (getattr(lowered, "features", None) or ())}
        return frozenset(need)

    def _check_needs(self, name: str, need) -> None:
        missing = sorted(set(need) - self._features)
        if missing:
            info = self._choice.info
            raise UnsupportedFeatureError(
                f"program {name!r} needs device feature(s) {missing}, which adapter "
                f"{info['device']!r} ({info['backend_type']}) does not offer",
                fix="; ".join(_FEATURE_FIX.get(m, f"run on an adapter with {m}") for m in missing),
            )

    # ---- pipelines ----------------------------------------------------------------------
    def _compiled(self, program, config=None) -> CompiledPipeline:
        """The GPU pipeline of a validated program (memory cache → lowering → pipeline)."""
        key = pipeline_key(program.fingerprint, config, self._contract, self._identity)
        with self._lock:
            self._check_alive()
            hit = self._cache.lookup(key)
        if hit is not None:
            self._check_needs(program.name, hit.needs)
            return hit
        lowered = self.lower_program(program, config)
        need = self._needs(program, lowered)
        self._check_needs(program.name, need)
        return self._build(key, program, lowered, need)

    def _build(self, key, program, lowered, need, groups=None) -> CompiledPipeline:
        with self._lock:
            self._check_alive()
            p = self._cache.get(key)
            if p is not None:
                return p
            try:
                p = compile_pipeline(self._device, program, lowered, key, self._layouts, groups)
            except DeviceLostError:
                self._mark_lost()
                raise
            p.needs = need
            p.generation = self._generation
            self._cache.put(p)
            return p

    def _pipeline_for(self, artifact: CompiledProgram) -> CompiledPipeline:
        """The pipeline of a CompiledProgram: cached, or rebuilt from its WGSL (never lowered again)."""
        key = (*artifact.key[:3], self._identity)
        with self._lock:
            self._check_alive()
            p = self._cache.lookup(key)
            if p is None:
                need = self._needs(artifact.program, artifact.lowered)
                self._check_needs(artifact.name, need)
                p = self._build(key, artifact.program, artifact.lowered, need)
            if p.artifact is None:
                p.artifact = artifact
            return p

    def _artifact(self, p: CompiledPipeline) -> CompiledProgram:
        with self._lock:
            if p.artifact is None:
                p.artifact = CompiledProgram.from_pipeline(p)
            return p.artifact

    # ---- public API ---------------------------------------------------------------------
    def compile(self, program, config=None) -> CompiledProgram:
        """Validate, lower and build the GPU pipeline now (all cached); return the artifact
        (WGSL, bindings, fingerprint, features) to pass to :meth:`dispatch_compiled`."""
        self._check_alive()
        config = self._coerce_config(config)
        self._validate(program)
        return self._artifact(self._compiled(program, config))

    def compile_persistent(self, program, config=None) -> PersistentPipeline:
        """Compile and pin the pipeline (never evicted from the LRU); ``.dispatch(inputs, config=None)``."""
        self._check_alive()
        config = self._coerce_config(config)
        self._validate(program)
        with self._lock:  # held from lookup to pin, so no other thread evicts it in between
            p = self._compiled(program, config)
            self._artifact(p)
            p.pins += 1
            return PersistentPipeline(self, p)

    def dispatch_compiled(self, compiled, inputs=None, config=None):
        """Dispatch a :class:`CompiledProgram` (from :meth:`compile`) or a PersistentPipeline."""
        if isinstance(compiled, PersistentPipeline):
            return compiled.dispatch(inputs, config)
        if not isinstance(compiled, CompiledProgram):
            raise DispatchError(f"dispatch_compiled takes a CompiledProgram, got {type(compiled).__name__}",
                                fix="pass the result of backend.compile(program)")
        return self._dispatch_via(compiled.program, inputs, config, lambda cfg: self._pipeline_for(compiled))

    def _dispatch_persistent(self, pp: PersistentPipeline, inputs, config):
        if pp._backend is not self:
            raise DispatchError("this PersistentPipeline belongs to another backend",
                                fix="dispatch it on the backend that compiled it")
        if pp.released:
            raise DispatchError(f"persistent pipeline {pp.compiled.name!r} was released",
                                fix="call backend.compile_persistent(program) again")

        def pipeline(cfg):
            with self._lock:
                p = pp._pipeline
                if self._cache.get(p.key) is not p:  # invalidated, or a new device
                    p = self._pipeline_for(pp.compiled)
                    p.pins += 1
                    pp._pipeline = p
                return p

        return self._dispatch_via(pp.compiled.program, inputs, config, pipeline)

    def prepare(self, programs=None):
        """Warm-up. Without arguments: create the upload/readback staging buffers and a params buffer
        in the pool, and run one tiny raw-WGSL dispatch, which makes wgpu-py parse the C types of every
        call a dispatch makes (a few hundred ms once per process, otherwise paid by the first
        compile). With a list of programs: compile them all (returns their CompiledPrograms)."""
        self._check_alive()
        if programs is None:
            with self._lock:
                self._check_alive()
                self._staging.ensure_upload(MIN_STAGING)
                self._staging.ensure_readback(MIN_STAGING)
                uniform_cap = int(self._limits.get("max-uniform-buffer-binding-size", 65536))
                self._pool.release(self._pool.acquire("uniform", 16, uniform_cap, label="vyre._vyre"))
                self.dispatch_wgsl(WARM_WGSL, [np.zeros(4, np.uint32)], [4], 1)
            return None
        return [self.compile(p) for p in programs]

    def invalidate_pipeline_cache(self, fingerprints=None) -> int:
        """Drop compiled pipelines, lowerings and validation results (memory) and disk entries: all of them,
        or only those of ``fingerprints`` (fingerprint strings or Programs). Returns the number of
        pipelines dropped from memory. Pinned pipelines are dropped too and rebuilt on their next dispatch."""
        fps = None
        if fingerprints is not None:
            if isinstance(fingerprints, str) or hasattr(fingerprints, "fingerprint"):
                fingerprints = [fingerprints]
            fps = {f if isinstance(f, str) else f.fingerprint for f in fingerprints}
        with self._lock:
            n = self._cache.remove(fps)
            for store in (self._validated, self._disk_probed):
                for fp in [f for f in store if fps is None or f in fps]:
                    del store[fp]
            if self._disk is not None:
                self._disk.remove(fps)
            self._stats.bump("invalidations")
            return n


__all__ = ["CompileMixin", "program_features"]
