"""python -m benches.report [--results DIR] [--out MD] [--plot PNG]

Regenerates docs/performance.md from every ``*.json`` result file in benches/results/
(one section per adapter: the targets table, one table per metric, the scaling plot). With
matplotlib it draws each adapter's scaling curves into docs/performance-<adapter>.png; without
it, it embeds those already there, or else docs/performance.png (``python -m benches --plot``).
Also home of the targets (issue 5, section 3), evaluated here and by ``python -m benches``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benches" / "results"
DOC = ROOT / "docs" / "performance.md"
PLOT = ROOT / "docs" / "performance.png"

#: The targets of issues 5, 11 and 13 (set for one NVIDIA H200 through Vulkan, torch in the same run).
#: kind "ratio": the baseline's ratio (baseline time / vyre time) >= min;
#: "value": vyre's value >= min or <= max; "transfer": both, at every measured size.
TARGETS: list[dict[str, Any]] = [
    {"id": "elementwise", "label": "elementwise bandwidth", "metric": "elementwise.bandwidth", "pick": "largest",
     "kind": "ratio", "baseline": "torch", "min": 0.95, "requirement": ">= 0.95x torch's bandwidth"},
    {"id": "reduce", "label": "full reduction (reduce.sum f32)", "metric": "reduce.bandwidth", "pick": "largest",
     "kind": "ratio", "baseline": "torch", "min": 0.8, "requirement": ">= 0.8x torch.sum"},
    {"id": "upload", "label": "upload (resident)", "metric": "transfer.upload", "kind": "transfer",
     "baseline": "raw_wgpu", "min_ratio": 8.0, "min": 20.0,
     "requirement": ">= 8x raw queue.write_buffer and >= 20 GB/s, at every size"},
    {"id": "readback", "label": "readback (resident)", "metric": "transfer.readback", "kind": "transfer",
     "baseline": "raw_wgpu", "min_ratio": 8.0, "min": 20.0,
     "requirement": ">= 8x raw queue.read_buffer and >= 20 GB/s, at every size"},
    {"id": "sequence", "label": "resident sequence, per dispatch", "metric": "sequence.per_dispatch",
     "pick": "largest", "kind": "value", "max": 4.0, "requirement": "<= 4 µs per dispatch"},
    {"id": "round_trip", "label": "single-dispatch round trip", "metric": "latency.round_trip", "pick": "largest",
     "kind": "value", "max": 150.0, "requirement": "<= 150 µs"},
    {"id": "matmul_f32", "label": "f32 matmul 4096^3", "metric": "matmul.f32", "pick": {"n": 4096},
     "kind": "value", "min": 20.0, "requirement": ">= 20 TFLOP/s"},
    {"id": "matmul_f16", "label": "f16 matmul", "metric": "matmul.f16", "pick": "largest_with_baseline",
     "kind": "ratio", "baseline": "torch", "min": 0.3, "requirement": ">= 0.3x torch fp16"},
    {"id": "fft", "label": "batched complex FFT 2^20 x 16", "metric": "fft.gflops",
     "pick": {"n": 1048576, "batch": 16}, "kind": "ratio", "baseline": "torch", "min": 0.5,
     "requirement": ">= 0.5x torch.fft.fft"},
    {"id": "search", "label": "similarity search 2^20 x 128, 1024 queries, k=10 (ip)", "metric": "search.ip",
     "pick": "largest", "kind": "ratio", "baseline": "torch", "min": 0.5,
     "requirement": ">= 0.5x torch matmul + topk"},
    # issue 11: device arrays, synchronized wall time per evaluation (benches/arrays.py)
    {"id": "arrays_chain", "label": "arrays: (a * 2 + b) * c - 1, f32 2^26", "metric": "arrays.fused_chain",
     "pick": {"n": 1 << 26}, "kind": "ratio", "baseline": "torch", "min": 1.5, "requirement": ">= 1.5x torch eager"},
    {"id": "arrays_sum", "label": "arrays: (a * b).sum(), f32 2^26", "metric": "arrays.fused_sum",
     "pick": {"n": 1 << 26}, "kind": "ratio", "baseline": "torch", "min": 1.3, "requirement": ">= 1.3x torch eager"},
    {"id": "arrays_small", "label": "arrays: 10 ops on 1024 elements + download", "metric": "arrays.small_chain",
     "pick": "largest", "kind": "ratio", "baseline": "torch", "min": 1.0,
     "requirement": ">= 1.0x torch eager + .cpu()"},
    {"id": "arrays_matmul", "label": "arrays: a @ b f32 4096^2", "metric": "arrays.matmul", "pick": {"n": 4096},
     "kind": "ratio", "baseline": "vyre_ops", "min": 0.95, "requirement": ">= 0.95x the vyre.ops matmul (within 5%)"},
    # issue 13: performance to the hardware (kind "vs_metric": vyre's value >= min x another vyre row's of the
    # same params; "ratio_all": the baseline ratio >= min at every measured size from min_n)
    {"id": "f16_packed", "label": "packed f16 matmul 4096^3 (matmul.f16_fast)", "metric": "matmul.f16_fast",
     "pick": {"n": 4096}, "kind": "vs_metric", "other": "matmul.f32", "min": 2.0,
     "requirement": ">= 2x vyre's f32 matmul rate in the same run"},
    {"id": "matmul_f32_torch", "label": "f32 matmul 4096^3 vs torch", "metric": "matmul.f32", "pick": {"n": 4096},
     "kind": "ratio", "baseline": "torch", "min": 0.8, "requirement": ">= 0.8x torch (TF32 off)"},
    {"id": "elementwise_sizes", "label": "elementwise zip.add f32 from 2^20", "metric": "scaling.elementwise",
     "kind": "ratio_all", "min_n": 1 << 20, "baseline": "torch", "min": 1.0,
     "requirement": ">= 1.0x torch at every size from 2^20"},
    {"id": "reduce_torch", "label": "reduce.sum f32 (largest size) vs torch", "metric": "reduce.bandwidth",
     "pick": "largest", "kind": "ratio", "baseline": "torch", "min": 1.0, "requirement": ">= 1.0x torch.sum"},
    {"id": "round_trip_torch", "label": "saxpy 1024 round trip vs torch", "metric": "latency.round_trip",
     "pick": "largest", "kind": "ratio", "baseline": "torch", "min": 1.0,
     "requirement": "no slower than torch H2D + kernel + D2H"},
]


def _size(rec: dict) -> float:
    p = rec.get("params", {})
    for key in ("n", "bytes", "dispatches"):
        if key in p:
            return float(p[key])
    return 0.0


def _pick(recs: list[dict], how, baseline: str | None) -> dict | None:
    recs = [r for r in recs if r.get("available")]
    if not recs:
        return None
    if isinstance(how, dict):
        hit = [r for r in recs if all(r["params"].get(k) == v for k, v in how.items())]
        return hit[-1] if hit else None
    if how == "largest_with_baseline" and baseline:
        with_b = [r for r in recs if r["baselines"].get(baseline, {}).get("available")]
        recs = with_b or recs
    return max(recs, key=_size)


def _fmt(v, unit=""):
    if v is None:
        return "n.a."
    s = f"{v:.3g}" if abs(v) < 1000 else f"{v:,.0f}"
    return f"{s} {unit}".strip()


def _status(ok: bool | None) -> str:
    return "n.a." if ok is None else ("pass" if ok else "fail")


def _ratio_all(t: dict, recs: list[dict]) -> dict:
    """The lowest baseline ratio over every available row of size >= ``min_n``."""
    recs = [r for r in recs if r.get("available") and _size(r) >= t["min_n"]]
    have = [(r, r["baselines"].get(t["baseline"], {})) for r in recs]
    have = [(r, b) for r, b in have if b.get("available")]
    if not have:
        return {"measured": "not measured", "status": "n.a."}
    worst, wb = min(have, key=lambda rb: rb[1]["ratio"])
    ok = all(b["ratio"] >= t["min"] for _, b in have)
    return {"measured": f"{wb['ratio']:.2f}x at the lowest ({worst['name']}; {len(have)} sizes)", "status": _status(ok)}


def _vs_metric(t: dict, recs: list[dict], results: list[dict]) -> dict:
    """vyre's value of ``metric`` over its value of ``other`` at the same picked params."""
    rec = _pick(recs, t.get("pick", "largest"), None)
    if rec is None:
        return {"measured": "not measured", "status": "n.a."}
    others = [r for r in results if r.get("metric") == t["other"] and r.get("available")
              and all(r["params"].get(k) == v for k, v in (t.get("pick") or {}).items())]
    if not others:
        return {"measured": f"{_fmt(rec['value'], rec['unit'])}; {t['other']} not measured ({rec['name']})",
                "status": "n.a."}
    o = others[-1]
    ratio = rec["value"] / o["value"]
    return {"measured": f"{ratio:.2f}x ({_fmt(rec['value'], rec['unit'])} vs {_fmt(o['value'], o['unit'])}, "
                        f"{rec['name']})", "status": _status(ratio >= t["min"])}


def evaluate_targets(doc: dict) -> list[dict]:
    """One row per target: label, requirement, measured (text), status (pass / fail / n.a.), detail."""
    rows = []
    results = doc.get("results", [])
    for t in TARGETS:
        recs = [r for r in results if r.get("metric") == t["metric"]]
        row = {"id": t["id"], "label": t["label"], "requirement": t["requirement"]}
        if t["kind"] == "ratio_all":
            rows.append({**row, **_ratio_all(t, recs)})
            continue
        if t["kind"] == "vs_metric":
            rows.append({**row, **_vs_metric(t, recs, results)})
            continue
        if t["kind"] == "transfer":
            recs = [r for r in recs if r.get("available")]
            if not recs:
                rows.append({**row, "measured": "not measured", "status": "n.a."})
                continue
            oks, parts = [], []
            worst_v = min(recs, key=lambda r: r["value"])
            ratios = [(r, r["baselines"].get(t["baseline"], {})) for r in recs]
            have = [(r, b) for r, b in ratios if b.get("available")]
            oks.append(worst_v["value"] >= t["min"])
            parts.append(f"{_fmt(worst_v['value'], 'GB/s')} (slowest, {worst_v['name']})")
            if have:
                worst_r, wb = min(have, key=lambda rb: rb[1]["ratio"])
                oks.append(all(b["ratio"] >= t["min_ratio"] for _, b in have) and len(have) == len(recs))
                parts.append(f"{wb['ratio']:.2f}x raw (lowest, {worst_r['name']})")
            else:
                parts.append("raw baseline missing")
            status = "fail" if not all(oks) else ("pass" if have and len(have) == len(recs) else "n.a.")
            rows.append({**row, "measured": "; ".join(parts), "status": status})
            continue
        rec = _pick(recs, t.get("pick", "largest"), t.get("baseline"))
        if rec is None:
            why = "not measured" + (" at this size" if isinstance(t.get("pick"), dict) and recs else "")
            rows.append({**row, "measured": why, "status": "n.a."})
            continue
        if t["kind"] == "value":
            v = rec["value"]
            ok = (v >= t["min"]) if "min" in t else (v <= t["max"])
            rows.append({**row, "measured": f"{_fmt(v, rec['unit'])} ({rec['name']})", "status": _status(ok)})
            continue
        b = rec["baselines"].get(t["baseline"], {})
        if not b.get("available"):
            rows.append({**row, "measured": f"{_fmt(rec['value'], rec['unit'])}; {t['baseline']}: "
                                             f"{b.get('note', 'not measured')} ({rec['name']})", "status": "n.a."})
            continue
        ok = b["ratio"] >= t["min"]
        rows.append({**row, "measured": f"{b['ratio']:.2f}x ({_fmt(rec['value'], rec['unit'])} vs "
                                         f"{_fmt(b['value'], rec['unit'])}, {rec['name']})", "status": _status(ok)})
    return rows


def targets_markdown(rows: list[dict]) -> str:
    out = ["| target | requirement | measured | status |", "|---|---|---|---|"]
    for r in rows:
        out.append(f"| {r['label']} | {r['requirement']} | {r['measured']} | **{r['status']}** |")
    return "\n".join(out)


# ----------------------------------------------------------------------------- tables
TITLES = {
    "elementwise.bandwidth": "Elementwise bandwidth (zip.add f32; bytes read + written)",
    "reduce.bandwidth": "Full-reduction bandwidth (reduce.sum f32; bytes read)",
    "matmul.f32": "f32 matmul (2·n³ flops per launch)",
    "matmul.f16": "f16 matmul (f32 accumulation)",
    "transfer.upload": "Upload (host → device)",
    "transfer.readback": "Readback (device → host)",
    "latency.round_trip": "Single-dispatch round trip (small saxpy: upload, run, read back)",
    "latency.round_trip.op": "Op call round trip (vyre.ops.zip_add through run_pipeline)",
    "sequence.per_dispatch": "Resident sequence: cost per dispatch (1000 small dispatches)",
    "sequence.per_dispatch.repeated": "Repeated resident sequence: cost per dispatch",
    "sequence.gpu_per_dispatch": "Resident sequence: GPU time per dispatch (timestamps)",
    "sequence.host_per_dispatch": "Resident sequence: host-side cost per dispatch (check, encode, submit; no wait)",
    "compile.cold": "Compile, cold (validate + lower + GPU pipeline, warm process)",
    "compile.cold_process": "Compile, cold, first compile in a fresh process",
    "compile.memory": "Compile, memory-cache hit",
    "compile.disk": "Compile, disk-cache hit in a fresh process",
    "scaling.elementwise": "Scaling: elementwise (zip.add f32)",
    "scaling.reduce": "Scaling: full reduction (reduce.sum f32)",
    "scaling.matmul": "Scaling: f32 matmul n×n×n",
    "arrays.fused_chain": "Arrays: (a * 2 + b) * c - 1 (synchronized wall time per evaluation)",
    "arrays.fused_sum": "Arrays: (a * b).sum() (synchronized wall time per evaluation)",
    "arrays.small_sum": "Arrays: float((a * b).sum()) on 1024 elements (a scalar's round trip)",
    "arrays.small_chain": "Arrays: 10 elementwise ops on 1024 elements, then a download",
    "arrays.matmul": "Arrays: a @ b vs the vyre.ops matmul (synchronized wall time)",
}

BASELINE_NAMES = {"numpy": "numpy (CPU)", "torch": "torch", "cupy": "cupy", "raw_wgpu": "raw wgpu-py",
                  "raw_wgpu_one_pass": "raw wgpu-py, one pass", "raw_wgpu_cwb": "raw compute_with_buffers",
                  "vyre_ops": "vyre.ops (resident)", "taichi": "taichi (Vulkan)",
                  "taichi_tiled": "taichi tiled (Vulkan)", "taichi_strided": "taichi strided (Vulkan)"}


def _cell(b: dict, unit: str) -> str:
    if not b.get("available"):
        return "n.a."
    return f"{_fmt(b['value'])} ({b['ratio']:.2f}x)"


def metric_table(recs: list[dict]) -> list[str]:
    unit = recs[0]["unit"]
    keys = []
    for r in recs:
        for k in r["baselines"]:
            if k not in keys:
                keys.append(k)
    cols = ["case", "vyre"] + [BASELINE_NAMES.get(k, k) for k in keys] + ["check"]
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    methods: dict[str, set] = {"vyre": set()}
    notes: dict[str, set] = {}
    for r in recs:
        vy = f"**{_fmt(r['value'])}**" if r.get("available") else f"n.a. ({r.get('note')})"
        if r.get("available"):
            methods["vyre"].add(r["method"])
        cells = []
        for k in keys:
            b = r["baselines"].get(k, {"available": False, "note": "not run"})
            cells.append(_cell(b, unit))
            if b.get("available"):
                methods.setdefault(k, set()).add(b["method"] + (f" ({b['label']})" if b.get("label") else ""))
            elif b.get("note"):
                notes.setdefault(k, set()).add(b["note"])
        chk = r.get("check")
        c = "" if not chk else ("ok" if chk.get("ok") else "**FAILED**")
        lines.append("| " + " | ".join([r["name"], vy] + cells + [c]) + " |")
    lines.append("")
    lines.append(f"Unit: {unit}" + ("; in parentheses: the ratio baseline time / vyre time (> 1: vyre is faster)."
                                    if keys else "."))
    for k, ms in methods.items():
        if ms:
            lines.append(f"- {BASELINE_NAMES.get(k, k)}: {'; '.join(sorted(ms))}")
    for k, ns in notes.items():
        lines.append(f"- {BASELINE_NAMES.get(k, k)} n.a.: {'; '.join(sorted(ns))}")
    extra = sorted({n for r in recs for n in r.get("notes", [])})
    for n in extra:
        lines.append(f"- note: {n}")
    return lines


def adapter_section(doc: dict, plot: Path | None) -> list[str]:
    a = doc["adapter"]
    lines = [f"## {a['device']} ({a['backend_type']}, {a['adapter_type']})", ""]
    mode = "quick sizes (`--quick`)" if doc.get("quick") else "full sizes"
    lines.append(f"vyre {doc['vyre_version']}, {doc['date']}, {mode}, {doc.get('duration_s', '?')} s. "
                 f"Driver: {a.get('driver') or a.get('description')}. Timestamp queries: "
                 f"{'yes' if a.get('timestamps') else 'no'}.")
    h = doc.get("host", {})
    lines.append(f"Host: {h.get('platform')}, {h.get('cpus')} CPUs, Python {h.get('python')}, "
                 f"numpy {h.get('numpy')}, wgpu {h.get('wgpu')}.")
    bl = []
    for k, d in doc.get("baselines", {}).items():
        if d.get("available"):
            bl.append(f"{k} {d.get('version', '')}" + (f" on {d['device']}" if d.get("device") else ""))
        else:
            bl.append(f"{k}: n.a. ({d.get('note')})")
    lines.append("Baselines: " + "; ".join(bl) + ".")
    lines.append(f"Command: `{doc.get('command')}`.")
    if doc.get("failures"):
        lines.append("Failed benchmark families: " + "; ".join(doc["failures"]) + ".")
    lines += ["", "### Targets", "", targets_markdown(evaluate_targets(doc)), ""]
    order = list(TITLES)
    metrics = sorted({r["metric"] for r in doc["results"]}, key=lambda m: (order.index(m) if m in order else 99, m))
    for m in metrics:
        recs = [r for r in doc["results"] if r["metric"] == m]
        lines += [f"### {TITLES.get(m, m)}", ""] + metric_table(recs) + [""]
    if plot is not None:
        lines += ["### Scaling curves", "", f"![scaling curves on {a['device']}]({plot.name})", ""]
    return lines


METHOD = """\
How to read this: every row is one operation measured several times after a warm-up; the
value is from the median time (the JSON files also hold the minimum and every sample).
**Kernel throughput** (elementwise, reduction, matmul, scaling) is device time on resident
buffers — data already on the GPU, no transfers: k launches go into one
`dispatch_resident_sequence_timed` (one pass, one submit) and the pass's timestamp queries
give the GPU time, divided by k (adapters without timestamp queries: wall clock of the same
sequence; each table says which). Raw wgpu-py kernels are timed the same way; torch and cupy
with CUDA events around k launches; Taichi (its Vulkan backend, same process and GPU; no GPU
timestamps) by wall clock around k launches and `ti.sync()`; numpy with `perf_counter`.
**Transfers** are wall clock until the data is usable (upload: `upload_resident` + `flush()`;
raw: `queue.write_buffer` + a fence). **Round trip** and **sequence** are wall clock per call.
Ratios are baseline time / vyre time for the same work: above 1 vyre is faster. Targets (issue 5) are set for one
NVIDIA H200 through Vulkan with torch in the same run; on other adapters they are shown for
information (and are n.a. where the baseline or size is missing)."""


#: What bounds the rows that miss their targets on the H200, measured with raw probes (issue 13); written by
#: hand, so update it with the probes when the stack changes.
LIMITS = """## Limits measured on the H200 (why some targets are missed)

* **Tensor cores (cooperative matrices).** wgpu 0.32 lists the native feature `cooperative-matrix` on the
  H200, but requesting it fails ("experimental features are not enabled"), and wgpu-native v27's C API has no
  switch to enable it. The f16 matmuls therefore run on the non-tensor f16 units. The IR keeps the features an
  op needs per adapter (`OpSpec` variants), so a cooperative-matrix variant can be added when a wgpu release
  exposes it.
* **Packed f16.** A loop of independent `vec4<f16>` FMAs in plain WGSL, with nothing else, peaks at 64.1
  TFLOP/s on the H200, against 52.0 for the same loop in f32 (1.23x). That is the ceiling of the naga ->
  SPIR-V -> NVIDIA path, below the 2x the hardware sheet gives. `matmul.f16_fast` reaches 44.9 TFLOP/s at
  4096^3 (1.32x vyre's f32 matmul, 70% of that ceiling), or 50.3 with f16 running sums (`sum_f16=True`).
* **Transfers at 16 MiB.** The GPU copy over PCIe takes 0.55 ms. The host copy between the numpy array and
  the mapped staging buffer, with 8 threads, runs at about 20-22 GB/s, against 31-42 GB/s between ordinary
  host buffers. An upload is 0.84 ms of host copy plus the submit (18.1 GB/s); a readback is 0.55 ms of copy
  then 0.83 ms of host copy (14.5 GB/s). Overlapping the two could not pass the host copy's ~20 GB/s.
* **Resident sequences.** wgpu-native's own cost per dispatch: recording `set_pipeline` / `set_bind_group`
  / `dispatch` and finishing the encoder. That is 2.7 µs when consecutive steps share their pipeline and
  bind group, and 5.6 µs when every step changes both, as in the benchmark's ping-pong. vyre's Python adds
  about 0.7 µs per step.
* **Round trip.** The native calls of one `dispatch()` (three `write_buffer`, encoder finish, submit, map and
  wait) take about 85 µs on this host before any Python. torch's whole H2D + kernel + D2H is 65 µs.
"""


def render(docs: list[dict], plots: dict[str, Path], latest_plot: Path | None) -> str:
    lines = ["# Performance", "",
             "Generated by `python -m benches.report` from `benches/results/*.json`; do not edit by hand.",
             "Measure with `python -m benches --json benches/results/ --plot docs/performance.png` "
             "(add `--quick` on lavapipe or CI), then rerun the report.", "", METHOD, ""]
    if not docs:
        lines.append("No result files yet.")
    if latest_plot is not None and latest_plot.exists() and not plots:  # else each section has its own
        lines += ["Scaling curves of the latest `--plot` run (the adapter is in the title):", "",
                  f"![scaling curves]({latest_plot.name})", ""]
    for d in docs:
        lines += adapter_section(d, plots.get(d["adapter"]["slug"]))
    lines += ["", LIMITS]
    return "\n".join(lines).rstrip() + "\n"


# ----------------------------------------------------------------------------- plot
SCALING = (("scaling.elementwise", "elementwise (zip.add f32)", "elements"),
           ("scaling.reduce", "full reduction (reduce.sum f32)", "elements"),
           ("scaling.matmul", "f32 matmul n×n×n", "n"))


def plot_scaling(docs: list[dict], path) -> str:
    """Draw the scaling curves (time per launch vs size, log-log) of ``docs`` into ``path``."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except Exception as exc:  # noqa: BLE001
        return f"no plot: matplotlib is not importable ({type(exc).__name__}); pip install matplotlib"
    recs = [(d, r) for d in docs for r in d.get("results", []) if r.get("bench") == "scaling"]
    if not recs:
        return "no plot: no scaling results"
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.6))
    for ax, (metric, title, xlabel) in zip(axes, SCALING):
        series: dict[str, list] = {}
        for d, r in recs:
            if r["metric"] != metric:
                continue
            tag = "" if len(docs) == 1 else f" [{d['adapter']['slug']}]"
            x = r["params"]["n"]
            if r.get("available"):
                series.setdefault("vyre" + tag, []).append((x, r["time_s"]["median"] * 1e6))
            for k, b in r["baselines"].items():
                if b.get("available"):
                    series.setdefault(BASELINE_NAMES.get(k, k) + tag, []).append((x, b["time_s"]["median"] * 1e6))
        for name, pts in series.items():
            pts.sort()
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", lw=2.2 if name.startswith("vyre") else 1.2,
                    label=name)
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_title(title)
        ax.set_xlabel(xlabel)
        ax.set_ylabel("time per launch (µs)")
        ax.grid(True, which="both", alpha=0.3)
        if series:
            ax.legend(fontsize=8)
    names = ", ".join(sorted({d["adapter"]["device"] for d, _ in recs}))
    fig.suptitle(f"vyre scaling on {names}" + (" (quick sizes)" if any(d.get("quick") for d, _ in recs) else ""))
    fig.tight_layout()
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return f"wrote {path}"


# ----------------------------------------------------------------------------- main
def load(results_dir: Path) -> list[dict]:
    docs = []
    for p in sorted(Path(results_dir).glob("*.json")):
        d = json.loads(p.read_text())
        if d.get("schema", "").startswith("vyre-bench/"):
            docs.append(d)
    return docs


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m benches.report", description="regenerate docs/performance.md")
    p.add_argument("--results", default=str(RESULTS), help="directory of result JSON files")
    p.add_argument("--out", default=str(DOC), help="markdown file to write")
    p.add_argument("--no-plots", action="store_true", help="do not draw per-adapter plots")
    args = p.parse_args(argv)
    docs = load(Path(args.results))
    out = Path(args.out)
    plots: dict[str, Path] = {}
    for d in docs:
        png = out.parent / f"performance-{d['adapter']['slug']}.png"
        if not args.no_plots:
            note = plot_scaling([d], png)
            print(note)
        if png.exists():
            plots[d["adapter"]["slug"]] = png
    latest = out.parent / PLOT.name
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(render(docs, plots, latest if latest.exists() else None))
    print(f"wrote {out} ({len(docs)} result file(s))")
    return 0


if __name__ == "__main__":
    sys.exit(main())
