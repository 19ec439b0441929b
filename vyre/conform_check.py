"""Checking one op against its numpy reference on each backend: the cells of ``python -m vyre.conform``.

:func:`check_op` runs an op's witnesses (and every kernel variant that applies) on each backend and
returns the op's certificate entry; :mod:`vyre.conform` opens the backends, runs every op through
this and writes the certificate. The hashes here identify witnesses and outputs in the certificate.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

if TYPE_CHECKING:
    from .backends.base import Backend
    from .backends.schedule import Pipeline
    from .ops.registry import OpSpec, Tolerance, Witness
    from .ops.variants import Variant

# why (each vyre.ops import in a function below): import time; vyre.conform and this module load numpy only
# (vyre.ops loads pydantic, the IR and every op: ~0.5 s), so `python -m vyre.conform --help` and the
# certificate helpers stay light

PASS, FAIL, SKIP, ERROR = "pass", "fail", "skip", "error"
GENERIC = "generic"  # the op's build (vyre.ops.variants.GENERIC, not imported: nothing heavy at import)

# ----------------------------------------------------------------------------- hashing
def _plain(v: Any) -> Any:
    if isinstance(v, dict):
        return {str(k): _plain(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    if isinstance(v, np.generic):
        return v.item()
    return v


def array_hash(a: npt.ArrayLike) -> str:
    """sha256 of an array's dtype, shape and bytes."""
    a = np.ascontiguousarray(a)
    h = hashlib.sha256(f"{a.dtype.str}|{a.shape}|".encode())
    h.update(a.tobytes())
    return h.hexdigest()


def witness_hash(params: dict, inputs: Iterable[npt.ArrayLike]) -> str:
    """sha256 of the witness params (canonical JSON) and every input's dtype, shape and bytes."""
    h = hashlib.sha256(json.dumps(_plain(params), sort_keys=True, separators=(",", ":")).encode())
    for a in inputs:
        h.update(array_hash(a).encode())
    return h.hexdigest()


def _number(x: float) -> float | str:
    """A float for JSON: non-finite values as strings (strict JSON has no inf/nan)."""
    x = float(x)
    if np.isnan(x):
        return "nan"
    if np.isinf(x):
        return "inf" if x > 0 else "-inf"
    return x



# ----------------------------------------------------------------------------- checking
@dataclass
class _Backend:
    name: str
    runner: Backend | None = None  # the backend object, None when it could not be opened
    error: str = ""
    features: frozenset[str] | None = None  # its adapter's features; None: no op needs anything of it

def _quick(witnesses: list[Witness]) -> list[Witness]:
    size = lambda w: sum(np.asarray(a).nbytes for a in w.inputs)  # noqa: E731
    return [min(witnesses, key=size)]


def _cell(spec: OpSpec, backend: _Backend, pipe: Pipeline, w: Witness, want: list[np.ndarray],
          tol: Tolerance) -> tuple[dict, list[str], float]:
    """(cell, output hashes, largest error) of one witness on one backend."""
    from .ops.api import execute  # why: import time (above)
    from .ops.registry import compare  # why: import time (above)

    missing = sorted(set(spec.needs_of(w.params)) - backend.features) if backend.features is not None else []
    if backend.runner is None:
        return {"status": ERROR, "detail": backend.error}, [], 0.0
    if missing:
        return {"status": SKIP, "detail": f"adapter lacks {', '.join(missing)}"}, [], 0.0
    try:
        got = execute(backend.runner, pipe, list(w.inputs))
    except Exception as exc:
        first = str(exc).splitlines()[0] if str(exc) else ""
        return {"status": ERROR, "detail": f"{type(exc).__name__}: {first}"}, [], 0.0
    hashes = [array_hash(g) for g in got]
    if len(got) != len(want):
        return {"status": FAIL, "detail": f"{len(got)} outputs, the reference has {len(want)}"}, hashes, 0.0
    worst, details, ok_all = 0.0, [], True
    for k, (g, r) in enumerate(zip(got, want)):
        ok, err, detail = compare(g, r, tol)
        worst = max(worst, err)
        ok_all &= ok
        if not ok:
            details.append(f"output {k}: {detail}")
    cell = {"status": PASS if ok_all else FAIL, "max_error": _number(worst),
            "error_unit": "ulp" if tol.kind == "ulp" else "abs"}
    if details:
        cell["detail"] = "; ".join(details)
    return cell, hashes, worst


def _variant_cells(spec: OpSpec, v: Variant, backends: list[_Backend], w: Witness, want: list[np.ndarray],
                   tol: Tolerance) -> tuple[dict, dict[str, float]]:
    """{backend: cell} of variant ``v`` on witness ``w``, and the largest error per backend."""
    from .ops.api import facts  # why: import time (above)

    try:
        pipe = v.build(**w.params)
    except Exception as exc:
        detail = f"build: {type(exc).__name__}: {exc}"
        return {b.name: {"status": ERROR, "detail": detail} for b in backends}, {}
    cells, worst = {}, {}
    for b in backends:
        lacks = v.missing(facts(b.runner)) if b.runner is not None else []
        if lacks:
            cells[b.name] = {"status": SKIP, "detail": f"adapter lacks {', '.join(lacks)}"}
            continue
        cell, hashes, err = _cell(spec, b, pipe, w, want, tol)
        if hashes:
            cell["outputs"] = hashes
        cell["fingerprints"] = [p.fingerprint for p in pipe.programs]
        cells[b.name] = cell
        if "error_unit" in cell:
            worst[b.name] = err
    return cells, worst


def _chosen(spec: OpSpec, backends: list[_Backend], params: dict) -> dict[str, str]:
    from .ops.api import facts  # why: import time (above)
    from .ops.variants import choose  # why: import time (above)

    out = {}
    for b in backends:
        if b.runner is not None:
            try:
                out[b.name] = choose(spec, params, facts(b.runner))
            except Exception as exc:  # a backend without capabilities(): say so, the cells say the rest
                out[b.name] = f"error: {type(exc).__name__}"
    return out


def _op_status(statuses: list[str]) -> str:
    if not statuses:
        return SKIP
    if ERROR in statuses:
        return ERROR
    if FAIL in statuses:
        return FAIL
    return SKIP if all(s == SKIP for s in statuses) else PASS


def check_op(spec: OpSpec, backends: list[_Backend], quick: bool = False) -> dict:
    """Run one op's witnesses on every backend against its numpy reference."""
    entry: dict[str, Any] = {"id": spec.id, "category": spec.category, "summary": spec.summary,
                             "tolerance": spec.tolerance.describe(), "programs": [], "witnesses": [], "cells": {},
                             "max_error": {}}
    try:
        witnesses = spec.witnesses()
        if quick:
            witnesses = _quick(witnesses)
    except Exception as exc:
        entry["error"] = f"witnesses(): {type(exc).__name__}: {exc}"
        entry["cells"] = {b.name: ERROR for b in backends}
        return entry
    fingerprints: dict[str, None] = {}
    per_backend: dict[str, list[str]] = {b.name: [] for b in backends}
    worst: dict[str, dict[str, float]] = {b.name: {} for b in backends}  # backend -> unit -> error
    per_variant: dict[str, dict[str, list[str]]] = {v: {b.name: [] for b in backends} for v in spec.variant_names()}
    for w in witnesses:
        item: dict[str, Any] = {"name": w.name, "params": _plain(w.params), "hash": witness_hash(w.params, w.inputs),
                                "tolerance": spec.tolerance_of(w.params).describe(), "outputs": {}, "cells": {}}
        try:
            pipe = spec.build(**w.params)
            item["fingerprints"] = [p.fingerprint for p in pipe.programs]
            fingerprints.update(dict.fromkeys(item["fingerprints"]))
            with np.errstate(all="ignore"):
                want = [np.asarray(r) for r in spec.reference(*w.inputs, **w.params)]
            item["outputs"]["numpy"] = [array_hash(r) for r in want]
        except Exception as exc:
            item["error"] = f"{type(exc).__name__}: {exc}"
            for b in backends:
                item["cells"][b.name] = {"status": ERROR, "detail": item["error"]}
                per_backend[b.name].append(ERROR)
            entry["witnesses"].append(item)
            continue
        tol = spec.tolerance_of(w.params)
        unit = "ulp" if tol.kind == "ulp" else "abs"
        for b in backends:
            cell, hashes, err = _cell(spec, b, pipe, w, want, tol)
            item["cells"][b.name] = cell
            if hashes:
                item["outputs"][b.name] = hashes
            per_backend[b.name].append(cell["status"])
            per_variant[GENERIC][b.name].append(cell["status"])
            if "error_unit" in cell:
                worst[b.name][unit] = max(worst[b.name].get(unit, 0.0), err)
        applicable = [v for v in spec.variants if v.applies_to(w.params)]
        if spec.variants:
            item["variants"] = {}
            item["chosen"] = _chosen(spec, backends, w.params)
        for v in applicable:
            cells, errs = _variant_cells(spec, v, backends, w, want, tol)
            item["variants"][v.name] = cells
            for name, cell in cells.items():
                per_backend[name].append(cell["status"])
                per_variant[v.name][name].append(cell["status"])
            for name, err in errs.items():
                worst[name][unit] = max(worst[name].get(unit, 0.0), err)
        entry["witnesses"].append(item)
    entry["programs"] = list(fingerprints)
    entry["cells"] = {b: _op_status(s) for b, s in per_backend.items()}
    entry["variants"] = {v: {b: _op_status(s) for b, s in cells.items()} for v, cells in per_variant.items()}
    entry["max_error"] = {b: {u: _number(e) for u, e in units.items()} for b, units in worst.items()}
    return entry
