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
import json
import platform
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

import numpy as np
import platformdirs

from . import __version__

if TYPE_CHECKING:
    from tqdm import tqdm

    from .backends.base import Backend
    from .ops.registry import OpSpec

from .conform_check import (  # noqa: F401  (re-exported: the certificate's helpers)
    ERROR,
    FAIL,
    GENERIC,
    PASS,
    SKIP,
    _Backend,
    _number,
    _plain,
    array_hash,
    check_op,
    witness_hash,
)

# ----------------------------------------------------------------------------- running
#: What an opener returns: the backend, its adapter features (None when ops need none of it), and
#: the description of its device for the certificate (None when there is no device).
Opened = tuple["Backend", "frozenset[str] | None", "dict[str, Any] | None"]


# why (the backend and vyre.ops imports in the functions below): import time; this module loads numpy only,
# so `--help` and the certificate helpers stay light (vyre.ops and the backends load pydantic, the IR, wgpu)
def _open_reference() -> Opened:
    from .backends.reference import ReferenceBackend  # why: import time (above)

    return ReferenceBackend(), None, None


def _open_wgpu() -> Opened:
    from .backends.wgpu import WgpuBackend  # why: import time (above; wgpu)

    gpu = WgpuBackend.acquire()
    adapter = {**{k: _plain(v) for k, v in dict(gpu.adapter_info).items()}, "features": sorted(gpu.features)}
    return gpu, frozenset(gpu.features), adapter


#: The backend columns of the conformance run, by name: a new backend adds its opener here and
#: every op witness runs on it (``--backend NAME`` alone, or ``all``).
OPENERS: dict[str, Callable[[], Opened]] = {"reference": _open_reference, "wgpu": _open_wgpu}
BACKENDS = tuple(OPENERS)


def _open_backends(names: Iterable[str]) -> tuple[list[_Backend], dict[str, Any]]:
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


def _select(specs: Iterable[OpSpec], prefixes: Sequence[str] | None) -> list[OpSpec]:
    if not prefixes:
        return list(specs)
    return [s for s in specs if any(s.id.startswith(p) or s.category.startswith(p) for p in prefixes)]


class _Progress:
    """A tqdm bar on a terminal; one line per op otherwise (a log, e.g. in CI)."""

    def __init__(self, total: int, stream: TextIO) -> None:
        self.total, self.stream, self.done = total, stream, 0
        self.bar: tqdm | None = None
        if bool(getattr(stream, "isatty", lambda: False)()):
            from tqdm import tqdm  # why: import time (40-70 ms, a sixth of this module's; on a terminal only)

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


def run(specs: Iterable[OpSpec] | None = None, backends: Iterable[str] = BACKENDS, quick: bool = False,
        ops: Sequence[str] | None = None, stream: TextIO | None = None) -> dict:
    """Run the conformance checks; returns the certificate (a JSON-able dict).

    ``specs``: the OpSpecs to check (default: the whole registry), filtered by ``ops``
    (id or category prefixes); ``backends``: names from ``BACKENDS``; ``stream``: where the
    progress goes (None: silent).
    """
    from .ops.registry import all_ops  # why: import time (above)

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
def catalogue_markdown(specs: Iterable[OpSpec] | None = None) -> str:
    """docs/ops.md: the op families, the kernel variants and every op (see :mod:`vyre.ops.catalogue`)."""
    from .ops.catalogue import catalogue_markdown as markdown  # why: import time (above)

    return markdown(specs)


# ----------------------------------------------------------------------------- command line
def default_certificate_path() -> Path:
    """Where the certificate goes without ``--out``: ``conformance.json`` in the user cache directory."""
    return Path(platformdirs.user_cache_dir("vyre")) / "conformance.json"


def execute(backends: Iterable[str] = BACKENDS, prefixes: Sequence[str] = (), out: str | Path | None = None,
            quick: bool = False, specs: Iterable[OpSpec] | None = None, stream: TextIO | None = None) -> int:
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


def main(argv: Sequence[str] | None = None, specs: Iterable[OpSpec] | None = None) -> int:
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
