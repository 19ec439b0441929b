"""python -m benches [--quick] [--json OUT] [--plot PNG] [--only NAME[,NAME]] [--skip NAME[,NAME]] [--merge]

Runs the benchmark families in order, one progress line per measurement, then prints the
targets table. ``--json`` writes the results (a directory, or a path ending in ``/``, gets
``<adapter-slug>.json``); with ``--merge`` the records of the families run now replace
theirs in an existing file and the others are kept (for a run split with ``--only``).
``--plot`` draws the scaling curves (needs matplotlib: ``pip install -e '.[bench]'``).
"""

from __future__ import annotations

import argparse
import datetime as dt
import importlib
import json
import sys
import time
from pathlib import Path
from typing import Any

FAMILIES = ("elementwise", "reduce", "matmul", "fft", "search", "sort", "transfer", "latency", "sequence", "compile",
            "scaling", "arrays", "import_time", "captured", "linalg", "train")


def _names(text: str | None) -> list[str]:
    if not text:
        return []
    names = [t.strip() for t in text.split(",") if t.strip()]
    bad = [n for n in names if n not in FAMILIES]
    if bad:
        raise SystemExit(f"unknown benchmark(s) {bad}; known: {', '.join(FAMILIES)}")
    return names


def parse_args(argv=None, prog="python -m benches"):
    p = argparse.ArgumentParser(prog=prog, description=__doc__.split("\n\n")[1],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true", help="small sizes (lavapipe, CI): the whole run in about a minute")
    p.add_argument("--json", metavar="OUT", help="write the results here (a directory: <adapter-slug>.json in it)")
    p.add_argument("--plot", metavar="PNG", help="draw the scaling curves into this PNG (needs matplotlib)")
    p.add_argument("--only", metavar="NAMES", help=f"comma-separated subset of: {', '.join(FAMILIES)}")
    p.add_argument("--skip", metavar="NAMES", help="comma-separated families to leave out")
    p.add_argument("--merge", action="store_true", help="merge into an existing --json file instead of replacing it")
    p.add_argument("--reps", type=int, default=None, help="timed repetitions per measurement (default 5)")
    p.add_argument("--no-baselines", metavar="NAMES", default="",
                   help="comma-separated baselines not to import (torch, cupy, taichi)")
    return p.parse_args(argv)


def out_path(arg: str, adapter_slug: str) -> Path:
    p = Path(arg)
    if arg.endswith("/") or p.is_dir():
        return p / f"{adapter_slug}.json"
    return p


def main(argv=None, prog="python -m benches") -> int:
    args = parse_args(argv, prog)
    only = _names(args.only) or list(FAMILIES)
    skip = set(_names(args.skip))
    families = [f for f in FAMILIES if f in only and f not in skip]

    import numpy as np  # noqa: F401 - fail early without numpy

    import vyre
    from vyre import WgpuBackend

    from . import _harness as H
    from ._baselines import Baselines
    from .report import evaluate_targets, targets_markdown

    t_start = time.perf_counter()
    gpu = WgpuBackend.acquire()
    gpu.prepare()
    info = gpu.adapter_info
    adapter_slug = H.slug(info["device"])
    off = {s.strip() for s in args.no_baselines.split(",") if s.strip()}
    base = Baselines(gpu.adapter_index, use={"torch", "cupy", "taichi"} - off)
    print(f"vyre {vyre.__version__} on {info['device']} ({info['backend_type']}, {info['adapter_type']}); "
          f"{'quick' if args.quick else 'full'} sizes; families: {', '.join(families)}", flush=True)
    for key, d in base.describe().items():
        print(f"  baseline {key}: " + (d.get("version", "") + (f" on {d['device']}" if d.get("device") else "")
                                       if d["available"] else f"n.a. ({d['note']})"), flush=True)

    mods = {f: importlib.import_module(f"benches.{f}") for f in families}
    if args.quick:
        H.WARM_S = 0.02
    ctx = H.Context(gpu=gpu, base=base, quick=args.quick, progress=H.Progress(0),
                    reps=args.reps or (5 if not args.quick else 3), target_s=0.02 if not args.quick else 0.01)
    ctx.progress.total = sum(m.plan(ctx) for m in mods.values())
    if not args.quick:
        H.warm_device(gpu, 2.0)
    failures = []
    for fam, mod in mods.items():
        ctx.progress.say(f"-- {fam}")
        try:
            for rec in mod.run(ctx):
                ctx.emit(rec)
        except Exception as exc:  # noqa: BLE001 - one broken family must not lose the others' results
            import traceback

            traceback.print_exc()
            failures.append(f"{fam}: {type(exc).__name__}: {exc}")
            ctx.progress.say(f"!! {fam} failed: {type(exc).__name__}: {exc}")
        finally:
            ctx.release()
    ctx.progress.close()

    doc: dict[str, Any] = {
        "schema": H.SCHEMA,
        "adapter": {**info, "slug": adapter_slug, "index": gpu.adapter_index,
                    "features": sorted(gpu.features),
                    "limits": {k: gpu.device_limits.get(k) for k in
                               ("max-buffer-size", "max-storage-buffer-binding-size",
                                "max-compute-workgroups-per-dimension", "max-compute-invocations-per-workgroup")},
                    "timestamps": gpu.supports_timestamps()},
        "vyre_version": vyre.__version__,
        "date": dt.datetime.now(dt.UTC).replace(microsecond=0).isoformat(),
        "quick": bool(args.quick),
        "command": f"{prog} " + " ".join(sys.argv[1:] if argv is None else argv),
        "host": H.host_description(),
        "baselines": base.describe(),
        "families": families,
        "failures": failures,
        "duration_s": round(time.perf_counter() - t_start, 1),
        "results": ctx.results,
    }
    if args.json:
        path = out_path(args.json, adapter_slug)
        if args.merge and path.exists():
            old = json.loads(path.read_text())
            kept = [r for r in old.get("results", []) if r["bench"] not in families]
            doc["results"] = kept + doc["results"]
            doc["families"] = [f for f in FAMILIES if f in set(old.get("families", [])) | set(families)]
            doc["failures"] = [x for x in old.get("failures", []) if x.split(":")[0] not in families] + failures
            doc["quick"] = bool(old.get("quick")) or doc["quick"]
        doc["targets"] = evaluate_targets(doc)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(doc, indent=1, default=float) + "\n")
        print(f"wrote {path}", flush=True)
    else:
        doc["targets"] = evaluate_targets(doc)
    if args.plot:
        from .report import plot_scaling

        note = plot_scaling([doc], args.plot)
        print(note, flush=True)
    print(targets_markdown(doc["targets"]), flush=True)
    print(f"done in {time.perf_counter() - t_start:.1f} s", flush=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
