"""The op registry: every op with its builder, numpy reference, witnesses and tolerance.

An op module registers itself with :func:`register`; :func:`all_ops` imports every op
module under ``vyre.ops`` on first use (never at ``import vyre`` time).
"""

from __future__ import annotations

import importlib
import pkgutil
import threading
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

import vyre.ops as _package  # the package whose op modules _import_all walks (always loaded before this)

from ..backends.schedule import Pipeline
from .variants import GENERIC, Variant


@dataclass(frozen=True)
class Tolerance:
    """How close a backend's output must be to the numpy reference.

    kind "exact": bit-exact (integers, bools, and float ops that are exact such as
    min/max/negation); "ulp": at most ``ulp`` units in the last place (float32/float16);
    "rel": ``|got - want| <= atol + rtol * |want|``.
    """

    kind: str = "exact"
    ulp: int = 0
    rtol: float = 0.0
    atol: float = 0.0

    def describe(self) -> str:
        if self.kind == "exact":
            return "bit-exact"
        if self.kind == "ulp":
            return f"<= {self.ulp} ulp"
        return f"rtol={self.rtol:g} atol={self.atol:g}"


EXACT = Tolerance("exact")


def ulp(n: int) -> Tolerance:
    return Tolerance("ulp", ulp=n)


def rel(rtol: float, atol: float = 0.0) -> Tolerance:
    return Tolerance("rel", rtol=rtol, atol=atol)


def _ordered(a: np.ndarray) -> np.ndarray:
    """Map floats to integers whose difference counts ulps (sign-magnitude to two's complement)."""
    bits = {2: np.int16, 4: np.int32, 8: np.int64}[a.dtype.itemsize]
    i = a.view(bits).astype(np.int64)
    top = np.int64(1) << (8 * a.dtype.itemsize - 1)
    return np.where(i < 0, -(i + top), i)  # -0.0 and +0.0 map to 0


def compare(got: np.ndarray, want: np.ndarray, tol: Tolerance) -> tuple[bool, float, str]:
    """(ok, largest error, description). Error is ulps for "ulp", absolute otherwise."""
    got = np.asarray(got)
    want = np.asarray(want)
    if got.shape != want.shape:
        return False, float("inf"), f"shape {got.shape} != {want.shape}"
    if got.dtype != want.dtype:
        return False, float("inf"), f"dtype {got.dtype} != {want.dtype}"
    if got.size == 0:
        return True, 0.0, "empty"
    if want.dtype.kind not in "fc":
        bad = got != want
        n = int(np.count_nonzero(bad))
        if n:
            idx = int(np.flatnonzero(bad)[0])
            return False, float(n), f"{n} mismatches, first at {idx}: {got.flat[idx]!r} != {want.flat[idx]!r}"
        return True, 0.0, "exact"
    nan_g, nan_w = np.isnan(got), np.isnan(want)
    if not np.array_equal(nan_g, nan_w):
        return False, float("inf"), "NaN positions differ"
    m = ~nan_w
    g, w = got[m], want[m]
    inf = np.isinf(w) | np.isinf(g)
    if not np.array_equal(g[inf], w[inf]):
        return False, float("inf"), "infinities differ"
    g, w = g[~inf], w[~inf]
    if g.size == 0:
        return True, 0.0, "exact"
    if tol.kind == "exact":
        bad = g != w
        err = float(np.max(np.abs(g.astype(np.float64) - w.astype(np.float64))))
        return (not bad.any()), err, "bit-exact" if not bad.any() else f"{int(bad.sum())} mismatches"
    if tol.kind == "ulp":
        d = np.abs(_ordered(g) - _ordered(w))
        err = float(d.max())
        return err <= tol.ulp, err, f"max {err:g} ulp"
    diff = np.abs(g.astype(np.float64) - w.astype(np.float64))
    lim = tol.atol + tol.rtol * np.abs(w.astype(np.float64))
    err = float(diff.max())
    return bool(np.all(diff <= lim)), err, f"max abs err {err:g}"


@dataclass(frozen=True)
class Witness:
    """One deterministic test input: build params plus the input arrays."""

    name: str
    params: dict
    inputs: tuple[np.ndarray, ...]


@dataclass(frozen=True)
class OpSpec:
    """A registered op.

    build(**params) -> Pipeline (one or more programs); reference(*inputs, **params) ->
    list of numpy outputs written directly with numpy; witnesses() -> deterministic
    inputs with edge cases; params_for(*arrays, **kwargs) -> build params for the
    convenience layer (shapes and dtypes taken from the arrays). ``build`` is the generic
    kernel; ``variants`` are alternative kernels, most preferred first (see
    :mod:`vyre.ops.variants`), each held to the same reference and tolerance.
    """

    id: str
    category: str
    summary: str
    build: Callable[..., Pipeline]
    reference: Callable[..., list[np.ndarray]]
    witnesses: Callable[[], list[Witness]]
    params_for: Callable[..., dict]
    tolerance: Tolerance = EXACT
    needs: frozenset = field(default_factory=frozenset)  # adapter features, e.g. {"shader-f16"}
    tolerance_for: Callable[[dict], Tolerance] | None = None  # per-params override (e.g. f16)
    needs_for: Callable[[dict], frozenset] | None = None  # extra per-params features (e.g. f16 params)
    variants: tuple[Variant, ...] = ()  # alternative kernels, most preferred first
    # how the tolerance grows with the params, for docs/ops.md (e.g. "rtol=2^-20 atol=k·2^-22"): a str, or
    # params -> str (None where the params' tolerance is constant); None: docs/ops.md derives the text from
    # tolerance_for at the smallest and largest witness. The worked value next to it is always tolerance_for's
    tolerance_rule: str | Callable[[dict], str | None] | None = None

    def variant_names(self) -> list[str]:
        """Every kernel of this op in preference order, ``"generic"`` (``build``) last."""
        return [v.name for v in self.variants] + [GENERIC]
    # convenience layer only: the caller's arrays -> the pipeline's inputs, and the pipeline's outputs
    # (with the caller's arrays) -> what the caller gets (e.g. complex64 <-> interleaved f32 pairs)
    to_device: Callable[..., tuple] | None = None
    from_device: Callable[[list, tuple], list] | None = None

    def tolerance_of(self, params: dict) -> Tolerance:
        return self.tolerance_for(params) if self.tolerance_for else self.tolerance

    def tolerance_rule_of(self, params: dict) -> str | None:
        """The declared rule text of the tolerance at these params (``tolerance_rule``), or None."""
        rule = self.tolerance_rule
        return rule(params) if callable(rule) else rule

    def needs_of(self, params: dict) -> frozenset:
        """Adapter features these params need: ``needs`` plus ``needs_for(params)``."""
        extra = self.needs_for(params) if self.needs_for else frozenset()
        return frozenset(self.needs) | frozenset(extra)


_REGISTRY: dict[str, OpSpec] = {}
_LOADED = False
_LOADER: int | None = None  # thread importing the op modules
_LOCK = threading.Lock()


def register(spec: OpSpec) -> OpSpec:
    if spec.id in _REGISTRY and _REGISTRY[spec.id] is not spec:
        raise ValueError(f"op id {spec.id!r} registered twice")
    kernels = spec.variant_names()
    if len(set(kernels)) != len(kernels):
        raise ValueError(f"op {spec.id!r}: variant names must be unique and not {GENERIC!r}, got {kernels}")
    _REGISTRY[spec.id] = spec
    return spec


def loading_here() -> bool:
    """This thread is importing the op modules (attribute hooks must not ask for the registry now)."""
    return _LOADER == threading.get_ident()


def _load_all() -> None:
    global _LOADED, _LOADER
    if _LOADED:
        return
    with _LOCK:
        if _LOADED:
            return
        _LOADER = threading.get_ident()
        try:
            _import_all()
        finally:
            _LOADER = None
        _LOADED = True


def _import_all() -> None:
    for mod in sorted(pkgutil.walk_packages(_package.__path__, "vyre.ops."), key=lambda m: m.name):
        if mod.name.rsplit(".", 1)[-1].startswith("_") or mod.name in (
            "vyre.ops.registry", "vyre.ops.pipeline", "vyre.ops.api", "vyre.ops.variants",
            "vyre.ops.namespace", "vyre.ops.catalogue"
        ):
            continue
        importlib.import_module(mod.name)


def all_ops() -> list[OpSpec]:
    _load_all()
    return [_REGISTRY[k] for k in sorted(_REGISTRY)]


def get(op_id: str) -> OpSpec:
    _load_all()
    try:
        return _REGISTRY[op_id]
    except KeyError:
        raise KeyError(f"unknown op {op_id!r}; known: {', '.join(sorted(_REGISTRY))}") from None


__all__ = ["Tolerance", "EXACT", "ulp", "rel", "compare", "Witness", "OpSpec", "Variant", "register", "all_ops",
           "get"]
