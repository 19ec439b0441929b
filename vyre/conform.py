"""Op conformance: ``python -m vyre.conform`` runs every op's witnesses on each backend.

The numpy reference of each op is the oracle; every backend's outputs are compared with it
within the op's tolerance. The command prints the op x backend matrix (a progress bar
while it runs: ``\\r``-updated on a terminal, one line per op otherwise), writes a JSON
certificate and exits non-zero when any cell fails::

    python -m vyre.conform [--backend wgpu|reference|all] [--ops PREFIX[,PREFIX]] [--out cert.json] [--quick]
    python -m vyre.conform --catalogue docs/ops.md     # rewrite the op catalogue

(``vyre conform`` is the same run.) The certificate goes to ``--out``, by default
``conformance.json`` in the user cache directory (``platformdirs.user_cache_dir("vyre")``, e.g.
``~/.cache/vyre/conformance.json`` on Linux; :func:`default_certificate_path`); its path is printed.
On a terminal the progress is a tqdm bar; otherwise one line per op.

Certificate: vyre version, adapter identity, and for each op its id, tolerance, program
fingerprints and, per witness, the witness hash (sha256 of params and input bytes), the
output hashes per backend, pass/fail per backend cell and the largest error seen (in ulps
for ulp tolerances, absolute otherwise; per op, the largest per backend and unit).
Kernel variants (:mod:`vyre.ops.variants`): each witness also runs on every variant that applies
to its params, on each backend that can run it (else the cell is a skip saying what it lacks);
the witness's ``variants`` holds those cells, its ``chosen`` the variant ``vyre.ops`` would pick
per backend, and the op's ``variants`` the status per variant and backend (``generic`` included).
A failing variant fails its op's cell. ``--quick`` runs each op's smallest witness only.
``--ops`` selects ops whose id or category starts with a prefix (``--ops elementwise``, ``--ops reduce.sum``).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import platform
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from .backends.base import Backend

PASS, FAIL, SKIP, ERROR = "pass", "fail", "skip", "error"
GENERIC = "generic"  # the op's build (vyre.ops.variants.GENERIC, not imported: nothing heavy at import)


# ----------------------------------------------------------------------------- hashing
def _plain(v):
    if isinstance(v, dict):
        return {str(k): _plain(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    if isinstance(v, np.generic):
        return v.item()
    return v


def array_hash(a) -> str:
    """sha256 of an array's dtype, shape and bytes."""
    a = np.ascontiguousarray(a)
    h = hashlib.sha256(f"{a.dtype.str}|{a.shape}|".encode())
    h.update(a.tobytes())
    return h.hexdigest()


def witness_hash(params: dict, inputs) -> str:
    """sha256 of the witness params (canonical JSON) and every input's dtype, shape and bytes."""
    h = hashlib.sha256(json.dumps(_plain(params), sort_keys=True, separators=(",", ":")).encode())
    for a in inputs:
        h.update(array_hash(a).encode())
    return h.hexdigest()


def _number(x: float):
    """A float for JSON: non-finite values as strings (strict JSON has no inf/nan)."""
    x = float(x)
    if np.isnan(x):
        return "nan"
    if np.isinf(x):
        return "inf" if x > 0 else "-inf"
    return x


# ----------------------------------------------------------------------------- running
@dataclass
class _Backend:
    name: str
    runner: Backend | None = None  # the backend object, None when it could not be opened
    error: str = ""
    features: frozenset[str] | None = None  # its adapter's features; None: no op needs anything of it


#: What an opener returns: the backend, its adapter features (None when ops need none of it), and
#: the description of its device for the certificate (None when there is no device).
Opened = tuple["Backend", "frozenset[str] | None", "dict[str, Any] | None"]


def _open_reference() -> Opened:
    from .backends.reference import ReferenceBackend

    return ReferenceBackend(), None, None


def _open_wgpu() -> Opened:
    from .backends.wgpu import WgpuBackend

    gpu = WgpuBackend.acquire()
    adapter = {**{k: _plain(v) for k, v in dict(gpu.adapter_info).items()}, "features": sorted(gpu.features)}
    return gpu, frozenset(gpu.features), adapter


#: The backend columns of the conformance run, by name: a new backend adds its opener here and
#: every op witness runs on it (``--backend NAME`` alone, or ``all``).
OPENERS: dict[str, Callable[[], Opened]] = {"reference": _open_reference, "wgpu": _open_wgpu}
BACKENDS = tuple(OPENERS)


def _open_backends(names) -> tuple[list[_Backend], dict[str, Any]]:
    out: list[_Backend] = []
    adapter: dict[str, Any] = {}
    for name in names:
        if name not in OPENERS:
            raise ValueError(f"unknown backend {name!r}; choose from {', '.join(BACKENDS)}")
        try:
            runner, features, device = OPENERS[name]()
        except Exception as exc:  # no adapter, no wgpu: every cell of the column errors
            out.append(_Backend(name, None, f"{type(exc).__name__}: {exc}"))
            adapter = {"error": f"{type(exc).__name__}: {exc}"}
            continue
        out.append(_Backend(name, runner, features=features))
        if device is not None:
            adapter = device
    return out, adapter


def _select(specs, prefixes):
    if not prefixes:
        return list(specs)
    return [s for s in specs if any(s.id.startswith(p) or s.category.startswith(p) for p in prefixes)]


def _quick(witnesses):
    size = lambda w: sum(np.asarray(a).nbytes for a in w.inputs)  # noqa: E731
    return [min(witnesses, key=size)]


def _cell(spec, backend: _Backend, pipe, w, want, tol) -> tuple[dict, list[str], float]:
    """(cell, output hashes, largest error) of one witness on one backend."""
    from .ops.api import execute
    from .ops.registry import compare

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


def _variant_cells(spec, v, backends: list[_Backend], w, want, tol) -> tuple[dict, dict[str, float]]:
    """{backend: cell} of variant ``v`` on witness ``w``, and the largest error per backend."""
    from .ops.api import facts

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


def _chosen(spec, backends: list[_Backend], params: dict) -> dict[str, str]:
    from .ops.api import facts
    from .ops.variants import choose

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


def check_op(spec, backends: list[_Backend], quick: bool = False) -> dict:
    """Run one op's witnesses on every backend against its numpy reference."""
    entry = {"id": spec.id, "category": spec.category, "summary": spec.summary,
             "tolerance": spec.tolerance.describe(), "programs": [], "witnesses": [], "cells": {}, "max_error": {}}
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
        item = {"name": w.name, "params": _plain(w.params), "hash": witness_hash(w.params, w.inputs),
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


class _Progress:
    """A tqdm bar on a terminal; one line per op otherwise (a log, e.g. in CI)."""

    def __init__(self, total: int, stream):
        self.total, self.stream, self.done = total, stream, 0
        self.bar = None
        if bool(getattr(stream, "isatty", lambda: False)()):
            from tqdm import tqdm

            self.bar = tqdm(total=total, file=stream, unit="op", dynamic_ncols=True, leave=False, mininterval=0,
                            miniters=1)

    def step(self, entry: dict) -> None:
        self.done += 1
        cells = "  ".join(f"{b} {s.upper()}" for b, s in entry["cells"].items())
        if self.bar is not None:
            self.bar.set_description_str(entry["id"][:32], refresh=False)
            self.bar.update(1)
            if self.done == self.total:
                self.bar.close()
            return
        n = len(entry["witnesses"])
        witnesses = f"{n} witness{'es' if n != 1 else ''}"
        self.stream.write(f"[{self.done}/{self.total}] {entry['id']}: {cells} ({witnesses})\n")
        self.stream.flush()

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def run(specs=None, backends=BACKENDS, quick: bool = False, ops=None, stream=None) -> dict:
    """Run the conformance checks; returns the certificate (a JSON-able dict).

    ``specs``: the OpSpecs to check (default: the whole registry), filtered by ``ops``
    (id or category prefixes); ``backends``: names from ``BACKENDS``; ``stream``: where the
    progress goes (None: silent).
    """
    from . import __version__
    from .ops.registry import all_ops

    specs = _select(all_ops() if specs is None else specs, ops)
    opened, adapter = _open_backends(backends)
    progress = _Progress(len(specs), stream) if stream is not None else None
    started = time.perf_counter()
    entries = []
    try:
        for spec in specs:
            entry = check_op(spec, opened, quick)
            entries.append(entry)
            if progress:
                progress.step(entry)
    finally:
        if progress:
            progress.close()
    counts = {PASS: 0, FAIL: 0, SKIP: 0, ERROR: 0}
    for e in entries:
        for s in e["cells"].values():
            counts[s] += 1
    return {
        "format": "vyre-conformance", "version": 1, "vyre_version": __version__,
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
        "python": platform.python_version(), "numpy": np.__version__, "platform": platform.platform(),
        "oracle": "numpy", "backends": [b.name for b in opened], "adapter": adapter, "quick": quick,
        "ops": entries,
        "summary": {"ops": len(entries), "cells": counts, "seconds": round(time.perf_counter() - started, 2),
                    "passed": bool(entries) and counts[FAIL] == 0 and counts[ERROR] == 0},
    }


def matrix(cert: dict) -> str:
    """The op x backend matrix as plain text (numpy is the oracle every cell is checked against)."""
    names = cert["backends"]
    w = max([len("op")] + [len(e["id"]) for e in cert["ops"]])
    lines = [f"{'op':<{w}}  oracle  " + "  ".join(f"{n:<10}" for n in names)]
    for e in cert["ops"]:
        cells = "  ".join(f"{e['cells'].get(n, '-'):<10}" for n in names)
        lines.append(f"{e['id']:<{w}}  numpy   {cells}")
    c = cert["summary"]["cells"]
    lines.append(f"{cert['summary']['ops']} ops x {len(names)} backend(s): {c[PASS]} pass, {c[FAIL]} fail, "
                 f"{c[ERROR]} error, {c[SKIP]} skip ({cert['summary']['seconds']} s)")
    variants = [(e["id"], v, cells) for e in cert["ops"] for v, cells in e.get("variants", {}).items()
                if v != GENERIC]
    if variants:
        tally = {s: sum(list(c.values()).count(s) for _, _, c in variants) for s in (PASS, FAIL, ERROR, SKIP)}
        lines.append(f"{len(variants)} kernel variant(s) besides generic: {tally[PASS]} pass, {tally[FAIL]} fail, "
                     f"{tally[ERROR]} error, {tally[SKIP]} skip (per backend; see the certificate's variants)")
    failed = [(f"{e['id']}[{wi['name']}]", n, cell) for e in cert["ops"] for wi in e["witnesses"]
              for n, cell in wi["cells"].items() if cell["status"] in (FAIL, ERROR)]
    failed += [(f"{e['id']}@{v}[{wi['name']}]", n, cell) for e in cert["ops"] for wi in e["witnesses"]
               for v, cells in wi.get("variants", {}).items() for n, cell in cells.items()
               if cell["status"] in (FAIL, ERROR)]
    for label, n, cell in failed[:20]:
        lines.append(f"  FAIL {label} on {n}: {cell.get('detail', '')}")
    if len(failed) > 20:
        lines.append(f"  ... and {len(failed) - 20} more failing cells (see the certificate)")
    return "\n".join(lines)


# ----------------------------------------------------------------------------- catalogue
def catalogue_markdown(specs=None) -> str:
    """docs/ops.md: the op families, the kernel variants and every op (see :mod:`vyre.ops.catalogue`)."""
    from .ops.catalogue import catalogue_markdown as markdown

    return markdown(specs)


# ----------------------------------------------------------------------------- command line
def default_certificate_path() -> Path:
    """Where the certificate goes without ``--out``: ``conformance.json`` in the user cache directory."""
    import platformdirs

    return Path(platformdirs.user_cache_dir("vyre")) / "conformance.json"


def execute(backends=BACKENDS, prefixes=(), out: str | Path | None = None, quick: bool = False, specs=None,
            stream=None) -> int:
    """Run, write the certificate (``out``, default :func:`default_certificate_path`), print the matrix and
    the certificate's path to ``stream`` (default stdout); returns the exit status (0 when every cell passed)."""
    stream = sys.stdout if stream is None else stream
    path = Path(out) if out else default_certificate_path()
    cert = run(specs, backends, quick, list(prefixes), stream=stream)
    if not cert["ops"]:
        print(f"no op matches --ops {','.join(prefixes)!r}", file=sys.stderr)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(cert, f, indent=1, sort_keys=True)
        f.write("\n")
    print(matrix(cert), file=stream)
    print(f"certificate: {path}", file=stream)
    return 0 if cert["summary"]["passed"] else 1


def main(argv=None, specs=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m vyre.conform", description=__doc__.split("\n")[0])
    ap.add_argument("--backend", choices=(*BACKENDS, "all"), default="all", help="backend column(s) to run")
    ap.add_argument("--ops", default="", help="comma-separated id or category prefixes (default: every op)")
    ap.add_argument("--out", default=None,
                    help="where to write the JSON certificate (default: conformance.json in the user cache "
                         f"directory, here {default_certificate_path()})")
    ap.add_argument("--quick", action="store_true", help="only each op's smallest witness")
    ap.add_argument("--catalogue", metavar="PATH", help="write the op catalogue (markdown) to PATH and exit")
    args = ap.parse_args(argv)
    if args.catalogue:
        with open(args.catalogue, "w", encoding="utf-8") as f:
            f.write(catalogue_markdown(specs))
        print(f"wrote {args.catalogue}")
        return 0
    backends = BACKENDS if args.backend == "all" else (args.backend,)
    prefixes = [p for p in args.ops.split(",") if p]
    return execute(backends, prefixes, args.out, args.quick, specs)


if __name__ == "__main__":
    sys.exit(main())
