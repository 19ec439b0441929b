"""Kernel variants: several kernels for one op, the best one the backend can run chosen per call.

An op's ``build`` is its generic kernel (variant ``"generic"``, runnable everywhere). It may also
register :class:`Variant` s in ``OpSpec.variants``, most preferred first. Each says

* what it **needs** (hard requirements): adapter ``features`` (``"shader-f16"``, ``"subgroup"``) and
  ``min_limits`` (snake_case WebGPU limit names, e.g. ``max_compute_invocations_per_workgroup``);
  a backend without them cannot run it (forcing it raises :class:`UnsupportedFeatureError`);
* where it is **worth choosing**: ``prefer_on`` adapter types (``"cpu"``, ``"discrete-gpu"``,
  ``"integrated-gpu"``, ...; empty: any) and ``applies(params)`` (e.g. large arrays only).

:func:`choose` picks the first variant that applies, is runnable and preferred on the adapter,
else ``"generic"``. The reference interpreter runs the generic kernel unless a variant is forced.
Every variant is checked against the op's numpy reference within the op's tolerance
(``python -m vyre.conform`` and tests/ops/test_ops.py run each on every witness it applies to).
"""

from __future__ import annotations

import dataclasses
import threading
import weakref
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..errors import DispatchError, UnsupportedFeatureError
from ..ir.limits import Limits

if TYPE_CHECKING:  # annotations only: registry imports this module (OpSpec), so no runtime import back
    from ..backends.base import Backend
    from ..backends.schedule import Pipeline
    from .registry import OpSpec

GENERIC = "generic"

# Capabilities fields -> the snake_case limit names variants ask for.
_CAP_LIMITS = {
    "max_invocations_per_workgroup": "max_compute_invocations_per_workgroup",
    "max_workgroups_per_dimension": "max_compute_workgroups_per_dimension",
    "max_storage_buffer_bytes": "max_storage_buffer_binding_size",
}
_CAP_FEATURES = {"f16": "shader-f16", "subgroups": "subgroup", "timestamps": "timestamp-query"}


@dataclass(frozen=True)
class Variant:
    """One alternative kernel of an op: ``build(**params) -> Pipeline`` with the op's params."""

    name: str
    build: Callable[..., Pipeline]
    summary: str
    features: frozenset[str] = frozenset()
    min_limits: Mapping[str, int] = field(default_factory=dict)
    prefer_on: frozenset[str] = frozenset()  # adapter types it is chosen on automatically; empty: any
    applies: Callable[[dict], bool] | None = None  # params it handles; None: all
    automatic: bool = True  # False: runs only when forced (``variant=``) or chosen by the tuner (measured no faster)

    def applies_to(self, params: dict) -> bool:
        return self.applies is None or bool(self.applies(params))

    def missing(self, facts: AdapterFacts) -> list[str]:
        """What the adapter lacks to run this variant (empty: it can run it)."""
        out = [f"feature {f}" for f in sorted(self.features - facts.features)]
        for name, least in sorted(self.min_limits.items()):
            have = facts.limits.get(name)
            if have is None or have < least:
                out.append(f"{name} >= {least} (has {have})")
        return out

    def describe(self) -> str:
        parts = [f"features {', '.join(sorted(self.features))}"] if self.features else []
        parts += [f"{k} >= {v}" for k, v in sorted(self.min_limits.items())]
        if not self.automatic:
            parts.append("only when forced or tuned")
        elif self.prefer_on:
            parts.append(f"chosen on {'/'.join(sorted(self.prefer_on))} adapters")
        return f"{self.name} ({'; '.join(parts)})" if parts else self.name


@dataclass(frozen=True)
class AdapterFacts:
    """What variant selection looks at: see :func:`facts_of`."""

    backend: str
    adapter_type: str
    features: frozenset[str]
    limits: Mapping[str, int]
    automatic: bool = True  # False: run the generic kernel unless a variant is forced (the reference)


_ADAPTER_TYPES = {"cpu": "cpu", "discretegpu": "discrete-gpu", "integratedgpu": "integrated-gpu",
                  "virtualgpu": "virtual-gpu"}


def _adapter_type(raw: Any) -> str:
    """wgpu-py's adapter types (``"CPU"``, ``"DiscreteGPU"``, ...) as ``cpu``, ``discrete-gpu``, ..."""
    key = str(raw or "").replace("-", "").replace("_", "").replace(" ", "").lower()
    return _ADAPTER_TYPES.get(key, "unknown")


def facts_of(backend: Backend) -> AdapterFacts:
    """The backend's features, limits and adapter type, from ``backend.capabilities()`` plus (where the
    backend has them) ``backend.features``, ``backend.device_limits`` and ``backend.adapter_info``.

    Limits are capped by the IR validator's (:class:`vyre.ir.limits.Limits`): the lowering checks every
    program against those, so a kernel beyond them could not run even where the device allows it.
    """
    caps = backend.capabilities()
    feats = getattr(backend, "features", None)
    features = frozenset(feats) if feats is not None and not callable(feats) else frozenset(
        name for attr, name in _CAP_FEATURES.items() if getattr(caps, attr, False))
    limits: dict[str, int] = {}
    device_limits = getattr(backend, "device_limits", None)  # a property on WgpuBackend
    if callable(device_limits):
        device_limits = device_limits()
    if device_limits:
        limits.update({k.replace("-", "_"): int(v) for k, v in dict(device_limits).items() if isinstance(v, int)})
    for attr, name in _CAP_LIMITS.items():
        if hasattr(caps, attr):
            limits[name] = int(getattr(caps, attr))
    if hasattr(caps, "max_workgroup_size"):
        for axis, v in zip("xyz", caps.max_workgroup_size):
            limits[f"max_compute_workgroup_size_{axis}"] = int(v)
    ir = dataclasses.asdict(Limits())
    for name, cap in ir.items():
        if isinstance(cap, int):
            limits[name] = min(limits.get(name, cap), cap)
    reference = caps.backend == "reference"
    info = getattr(backend, "adapter_info", None)
    kind = "reference" if reference else _adapter_type(dict(info).get("adapter_type") if info else None)
    return AdapterFacts(caps.backend, kind, features, limits, automatic=not reference)


_FACTS: weakref.WeakKeyDictionary[Any, AdapterFacts] = weakref.WeakKeyDictionary()
_FACTS_LOCK = threading.Lock()


def facts_for(backend: Backend) -> AdapterFacts:
    """:func:`facts_of` ``backend``, cached per backend object (asked every time of one that is not
    weak-referenceable); ``vyre.ops.api.facts``."""
    try:
        with _FACTS_LOCK:
            hit = _FACTS.get(backend)
    except TypeError:  # not weak-referenceable: ask every time
        return facts_of(backend)
    if hit is None:
        hit = facts_of(backend)
        with _FACTS_LOCK:
            _FACTS[backend] = hit
    return hit


def names(spec: OpSpec) -> list[str]:
    """Every variant of ``spec``, the generic kernel last (the preference order)."""
    return [v.name for v in spec.variants] + [GENERIC]


def find(spec: OpSpec, name: str) -> Variant | None:
    """The variant called ``name`` (None for the generic kernel); DispatchError for an unknown name."""
    if name == GENERIC:
        return None
    for v in spec.variants:
        if v.name == name:
            return v
    raise DispatchError(f"{spec.id} has no kernel variant {name!r}; it has {', '.join(names(spec))}",
                        fix=f"pass variant= one of {names(spec)}, or leave it out to let vyre choose")


def choose(spec: OpSpec, params: dict[str, Any], facts: AdapterFacts, force: str | None = None) -> str:
    """The variant to run: ``force`` after checking it can run, else the best applicable one."""
    if force is not None:
        v = find(spec, force)
        if v is None:
            return GENERIC
        if not v.applies_to(params):
            raise DispatchError(f"{spec.id} variant {force!r} does not handle these params ({params})",
                                fix="leave variant= out (vyre falls back to the generic kernel)")
        lacks = v.missing(facts)
        if lacks:
            raise UnsupportedFeatureError(
                f"{spec.id} variant {force!r} cannot run on this {facts.backend} backend: it lacks "
                f"{', '.join(lacks)}", fix="leave variant= out, or run on an adapter that has it")
        return force
    if not facts.automatic:
        return GENERIC
    for v in spec.variants:
        if v.automatic and v.applies_to(params) and not v.missing(facts) \
                and (not v.prefer_on or facts.adapter_type in v.prefer_on):
            return v.name
    return GENERIC


def build(spec: OpSpec, name: str, params: dict[str, Any]) -> Pipeline:
    """The pipeline of variant ``name`` for ``params``."""
    v = find(spec, name)
    return spec.build(**params) if v is None else v.build(**params)


__all__ = ["GENERIC", "Variant", "AdapterFacts", "facts_of", "facts_for", "names", "find", "choose", "build"]
