"""Per-adapter tuning: measure an op's candidate kernels once per adapter and shape class, keep the winner.

:func:`tune` (``vyre tune``, ``python -m vyre.tune``) takes each tunable op (:mod:`vyre.ops._tunables`)
and representative shapes; for each shape class it builds every candidate setting (a GEMM tile shape,
a kernel variant), runs it on random inputs and compares the outputs with the op's numpy reference
within the op's tolerance (a candidate that fails is logged and never stored), times the others
(median of a few timed samples: GPU timestamps around resident launches, or the wall clock where the
adapter or backend has none) and stores the fastest in the store (:mod:`vyre.ops._tuning_store`),
keyed by the adapter's identity, the op, the class and :data:`TUNER_VERSION`.

Use: ``vyre.ops.<op>(backend, ...)`` calls :func:`apply` when the caller names no tunable param and no
``variant=``: with a stored winner for this adapter and class it runs that setting, else exactly what
it ran before (no store, no entry: today's defaults). Nothing is measured at call time. Counters
(``hits``: a stored setting ran; ``misses``: a tunable call found none) are per process;
``backend.stats()["tuning"]`` reports them with the store's path and this adapter's entries (once
``vyre.ops`` is in use: the backend layer cannot import the op layer, so this module adds the section).
"""

from __future__ import annotations

import logging
import statistics
import threading
import time
import weakref
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, cast, runtime_checkable

import numpy as np

from ..backends.base import Backend
from ..backends.schedule import Pipeline
from ..backends.wgpu import stats as wgpu_stats
from ..errors import DispatchError
from . import _tuning_store as S
from ._tunables import DEFAULT_OPS, Setting, Tunable, register_tunable, tunables
from .pipeline import ResidentPipeline, execute
from .registry import OpSpec, Tolerance, compare, get
from .variants import GENERIC, AdapterFacts, facts_for
from .variants import build as build_variant

TUNER_VERSION = 1
MARGIN = 0.03  # a candidate must beat the default by this fraction to be stored instead (timing noise)
WARM_S = 0.5  # seconds of device work before each class's timed rounds (GPU clocks up)
log = logging.getLogger("vyre.tuning")

_COUNTS = {"hits": 0, "misses": 0}
_COUNT_LOCK = threading.Lock()
_ADAPTERS: weakref.WeakKeyDictionary[Any, tuple[dict, str]] = weakref.WeakKeyDictionary()


class _TimedRun(Protocol):
    """What a timed resident sequence reports (the wgpu backend's TimedDispatch)."""

    @property
    def source(self) -> str: ...
    @property
    def gpu_ns(self) -> int: ...
    @property
    def wall_ns(self) -> int: ...


@runtime_checkable
class _TimedSequences(Protocol):
    """A backend that times resident sequences on the GPU (WgpuBackend; not part of the Backend protocol)."""

    def dispatch_resident_sequence_timed(self, steps: Any, read: Any = None) -> _TimedRun: ...


def _adapter(backend: Backend) -> tuple[dict, str]:
    """(identity, key) of ``backend``'s adapter, cached per backend object."""
    try:
        hit = _ADAPTERS.get(backend)
    except TypeError:
        hit = None
    if hit is None:
        ident = S.adapter_of(backend)
        hit = (ident, S.adapter_key(ident))
        try:
            _ADAPTERS[backend] = hit
        except TypeError:
            pass
    return hit


def _count(key: str) -> None:
    with _COUNT_LOCK:
        _COUNTS[key] += 1


# ---- use at call time -----------------------------------------------------------------------
def apply(op_id: str, backend: Backend, params: dict, named: Iterable[str],
          facts: Callable[[], AdapterFacts]) -> tuple[dict, str | None]:
    """(params, variant to force or None) for a call of ``op_id`` that named the params ``named`` and no
    variant: the stored winner for this adapter and class when there is one that can run these params,
    else ``params`` unchanged and None."""
    t = tunables().get(op_id)
    if t is None or any(k in t.keys for k in named):
        return params, None
    label = t.shape_class(params)
    store = S.current()
    if label is None or store.path is None:
        return params, None
    entry = store.get(_adapter(backend)[1], op_id, label, TUNER_VERSION)
    if entry is None:
        _count("misses")
        return params, None
    setting = Setting.from_json(entry["setting"])
    why = t.check(params, setting, facts())
    if why is not None:
        log.warning("tuning: ignoring the stored %s setting %s for class %s: %s", op_id, setting.label(), label, why)
        _count("misses")
        return params, None
    _count("hits")
    return {**params, **dict(setting.params)}, setting.variant


# ---- measuring ------------------------------------------------------------------------------
class _Resident(ResidentPipeline):
    """A pipeline on resident buffers (inputs uploaded once), timed as k launches in one sequence."""

    def __init__(self, backend: Backend, pipe: Pipeline, arrays: Sequence[np.ndarray]) -> None:
        super().__init__(backend, pipe, arrays, label="tune")

    def run(self, k: int) -> tuple[float, str]:
        timed = cast(_TimedSequences, self.backend)  # _Timer makes one only for such a backend
        td = timed.dispatch_resident_sequence_timed(self.steps * k)
        ns = td.gpu_ns if td.source == "timestamp" and td.gpu_ns > 0 else td.wall_ns
        return ns / 1e9 / k, "gpu-timestamp" if td.source == "timestamp" else "wall-clock"


class _Timer:
    """One candidate's timed samples: resident launches with GPU timestamps where the backend has them,
    else wall-clock runs of ``execute``."""

    def __init__(self, backend: Backend, pipe: Pipeline, arrays: Sequence[np.ndarray]) -> None:
        self.res = _Resident(backend, pipe, arrays) if isinstance(backend, _TimedSequences) else None
        self._execute: Callable[[], list[np.ndarray]] = lambda: execute(backend, pipe, arrays)
        self.k = 1
        self.times: list[float] = []
        self.method = "wall-clock"

    def sample(self, k: int) -> float:
        if self.res is not None:
            t, self.method = self.res.run(k)
            return t
        t0 = time.perf_counter()
        for _ in range(k):
            self._execute()
        return (time.perf_counter() - t0) / k

    def free(self) -> None:
        if self.res is not None:
            self.res.free()


def _measure_all(timers: Sequence[_Timer], reps: int, target_s: float, warm_s: float, max_k: int = 200) -> None:
    """Fill each timer's ``times`` with ``reps`` samples of about ``target_s``. The candidates are measured
    in interleaved rounds after ``warm_s`` seconds of the first one, so a GPU whose clocks are still rising
    (a discrete GPU idles low between host work; an H200 ran a 4096^3 GEMM 3x slower cold) or drifting
    favours none of them."""
    end = time.perf_counter() + warm_s
    while warm_s > 0 and time.perf_counter() < end:
        timers[0].sample(1)
    for t in timers:
        t.sample(1)
        t.k = int(max(1, min(max_k, target_s / max(t.sample(1), 1e-9))))
    for _ in range(reps):
        for t in timers:
            t.times.append(t.sample(t.k))


# ---- tuning ---------------------------------------------------------------------------------
@dataclass
class Candidate:
    setting: Setting
    ok: bool = False
    time_s: float | None = None
    error: str | None = None

    def to_json(self) -> dict:
        return {"setting": self.setting.to_json(), "label": self.setting.label(), "ok": self.ok,
                "time_s": self.time_s, "error": self.error}


@dataclass
class ClassResult:
    """One (op, shape class): every candidate, the winner and whether it was stored (or why it was skipped)."""

    op_id: str
    shape: tuple[int, ...]
    label: str
    candidates: list[Candidate] = field(default_factory=list)
    winner: Setting | None = None
    method: str = ""
    stored: bool = False
    note: str | None = None

    def to_json(self) -> dict:
        return {"op": self.op_id, "shape": list(self.shape), "class": self.label, "method": self.method,
                "winner": self.winner.to_json() if self.winner else None, "stored": self.stored, "note": self.note,
                "candidates": [c.to_json() for c in self.candidates]}


def _outputs(spec: OpSpec, params: dict, arrays: tuple[np.ndarray, ...]) -> list[np.ndarray]:
    return [np.asarray(w) for w in spec.reference(*arrays, **params)]


def _mismatch(got: list[np.ndarray], want: list[np.ndarray], tol: Tolerance) -> str | None:
    """Why ``got`` is not ``want`` within ``tol`` (None: it is)."""
    if len(got) != len(want):
        return f"{len(got)} outputs, expected {len(want)}"
    bad = []
    for i, (g, w) in enumerate(zip(got, want)):
        ok, _, desc = compare(g.reshape(w.shape) if g.size == w.size else g, w, tol)
        if not ok:
            bad.append(f"output {i}: {desc}")
    return "; ".join(bad) or None


def _tune_class(backend: Backend, t: Tunable, shape: tuple[int, ...], facts: AdapterFacts, quick: bool,
                reps: int, target_s: float, seed: int, warm_s: float = 0.0) -> ClassResult:
    spec = get(t.op_id)
    params = t.params_of(tuple(int(s) for s in shape))
    label = t.shape_class(params) or "-"
    out = ClassResult(t.op_id, tuple(shape), label)
    lacks = sorted(spec.needs_of(params) - facts.features)
    if lacks:
        out.note = f"skipped: the adapter lacks {', '.join(lacks)}"
        return out
    settings = t.candidates(params, facts, quick)
    if len(settings) < 2:
        out.note = f"nothing to choose: {len(settings)} candidate(s) for this class"
        return out
    arrays = t.inputs(params, np.random.default_rng(seed))
    want = _outputs(spec, params, arrays)
    tol = spec.tolerance_of(params)
    pipes: list[tuple[Candidate, Pipeline]] = []
    for s in settings:  # validate every candidate first, then time those that passed together
        c = Candidate(s)
        out.candidates.append(c)
        try:
            pipe = build_variant(spec, s.variant, {**params, **dict(s.params)})
            c.error = _mismatch([np.asarray(g) for g in execute(backend, pipe, arrays)], want, tol)
            if c.error is not None:
                log.warning("tuning %s %s: candidate %s fails validation (%s): not stored",
                            t.op_id, label, s.label(), c.error)
                continue
            pipes.append((c, pipe))
        except Exception as exc:  # noqa: BLE001 - a candidate that cannot build or run just loses
            c.error = f"{type(exc).__name__}: {exc}"
            log.warning("tuning %s %s: candidate %s failed: %s", t.op_id, label, s.label(), c.error)
    timers: list[tuple[Candidate, _Timer]] = []
    try:
        for c, pipe in pipes:
            try:
                timers.append((c, _Timer(backend, pipe, arrays)))
            except Exception as exc:  # noqa: BLE001 - e.g. out of memory for its buffers: it loses
                c.error = f"{type(exc).__name__}: {exc}"
        if timers:
            _measure_all([tm for _, tm in timers], reps, target_s, warm_s)
        for c, tm in timers:
            c.ok, c.time_s, out.method = True, float(statistics.median(tm.times)), tm.method
    except Exception as exc:  # noqa: BLE001 - a failure while timing: nothing of this class is stored
        out.note = f"timing failed: {type(exc).__name__}: {exc}"
        log.warning("tuning %s %s: %s", t.op_id, label, out.note)
        for c, _ in timers:
            c.ok, c.time_s = False, None
    finally:
        for _, tm in timers:
            tm.free()
    timed = [c for c in out.candidates if c.ok and c.time_s is not None]
    if not timed:
        out.note = "no candidate passed validation: nothing stored"
        return out
    best = min(timed, key=lambda c: c.time_s or 0.0)
    first = out.candidates[0]  # what an untuned call runs: it keeps the class unless clearly beaten
    if first.ok and first.time_s is not None and (best.time_s or 0.0) > first.time_s * (1 - MARGIN):
        best = first
    out.winner = best.setting
    return out


def tune(backend: Backend, ops: Sequence[str] | None = None,
         classes: Mapping[str, Sequence[tuple[int, ...]]] | None = None, *, quick: bool = False,
         reps: int | None = None, target_s: float | None = None, store: S.TuningStore | None = None,
         progress: Callable[[ClassResult], None] | None = None) -> list[ClassResult]:
    """Tune ``ops`` (default :data:`~vyre.ops._tunables.DEFAULT_OPS`) on ``backend`` and store the winners.

    ``classes``: {op id: representative shapes} (matmul ``(m, k, n)``, matmul.batched ``(batch, m, k, n)``,
    elementwise and reduce ``(n,)``; default: the op's own list, a short one with ``quick``). Each shape
    stands for its shape class. ``reps`` timed samples (default 3 quick, 5 otherwise) of about ``target_s``
    seconds each. ``progress(result)`` is called after each class. Returns one :class:`ClassResult` per class.
    """
    table = tunables()
    names = list(ops) if ops else [o for o in DEFAULT_OPS if o in table]
    unknown = [o for o in names if o not in table]
    if unknown:
        raise DispatchError(f"not tunable: {', '.join(unknown)}",
                            fix=f"pick ops among {', '.join(sorted(table))}")
    store = store or S.current()
    if store.path is None:
        raise DispatchError("the tuning store is off", fix=f"unset {S.ENV_VAR}=off / VYRE_CACHE_DIR=off")
    reps = reps or (3 if quick else 5)
    target_s = target_s if target_s is not None else (0.005 if quick else 0.05)
    warm_s = 0.0 if quick else WARM_S
    adapter, akey = _adapter(backend)
    facts = facts_for(backend)
    results = []
    for op_id in names:
        t = table[op_id]
        shapes = list((classes or {}).get(op_id) or t.shapes(quick))
        seen: set[str] = set()
        for k, shape in enumerate(shapes):
            r = _tune_class(backend, t, tuple(shape), facts, quick, reps, target_s, seed=1000 + k,
                            warm_s=warm_s)
            if r.label in seen and r.winner is not None:
                r.note = "class already tuned by an earlier shape of this run: kept that one"
                r.winner = None
            seen.add(r.label)
            if r.winner is not None:
                win = next(c for c in r.candidates if c.setting == r.winner)
                store.put(adapter, op_id, r.label, TUNER_VERSION, {
                    "op": op_id, "class": r.label, "tuner": TUNER_VERSION, "setting": r.winner.to_json(),
                    "time_s": win.time_s, "method": r.method, "shape": list(r.shape), "when": S.now_iso(),
                    "candidates": [c.to_json() for c in r.candidates]})
                r.stored = True
                log.info("tuning %s %s: %s (%.3g s) stored for %s", op_id, r.label, r.winner.label(),
                         win.time_s, S.describe_adapter(adapter))
            results.append(r)
            if progress is not None:
                progress(r)
    return results


# ---- reporting ------------------------------------------------------------------------------
def counters() -> dict[str, int]:
    with _COUNT_LOCK:
        return dict(_COUNTS)


def report(adapter: dict) -> dict:
    """The tuning section of ``stats()`` for an adapter identity (see the module doc)."""
    store = S.current()
    akey = S.adapter_key(adapter)
    entries = store.entries(akey)
    return {"store": str(store.path) if store.path else None, "adapter_key": akey, "tuner": TUNER_VERSION,
            "entries": sum(1 for e in entries.values() if e.get("tuner") == TUNER_VERSION),
            "classes": sorted(f"{e.get('op')} {e.get('class')}: {Setting.from_json(e['setting']).label()}"
                              for e in entries.values() if e.get("tuner") == TUNER_VERSION),
            **counters()}


def stats_of(backend: Backend) -> dict:
    """The tuning section for any backend (the wgpu backend's ``stats()`` includes it)."""
    return report(_adapter(backend)[0])


def _install_stats_section() -> None:
    wgpu_stats.add_section("tuning", lambda info: report(S.adapter_from_info(info)))


_install_stats_section()

__all__ = ["TUNER_VERSION", "tune", "apply", "counters", "report", "stats_of", "Candidate", "ClassResult",
           "Setting", "Tunable", "register_tunable", "tunables", "GENERIC"]
