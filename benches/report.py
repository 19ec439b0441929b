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

from ._targets import TARGETS, evaluate_targets, fmt_value, targets_markdown  # noqa: F401  (report.TARGETS)

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benches" / "results"
DOC = ROOT / "docs" / "performance.md"
PLOT = ROOT / "docs" / "performance.png"

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
    "import_time.first_program": "Import time: import vyre and build a first program (fresh process)",
    "import_time.cli_help": "Import time: vyre --help (fresh process)",
    "sort.array": "Sort: vyre.array.sort (synchronized wall time per evaluation)",
    "sort.radix": "Sort: sort.radix of the u32 order keys (device time)",
    "reduce.axis0": "Reduction over the leading axis: x.sum(axis=0) f32 (bytes read)",
}

BASELINE_NAMES = {"numpy": "numpy (CPU)", "torch": "torch", "cupy": "cupy", "raw_wgpu": "raw wgpu-py",
                  "raw_wgpu_one_pass": "raw wgpu-py, one pass", "raw_wgpu_cwb": "raw compute_with_buffers",
                  "vyre_ops": "vyre.ops (resident)", "taichi": "taichi (Vulkan)",
                  "taichi_tiled": "taichi tiled (Vulkan)", "taichi_strided": "taichi strided (Vulkan)",
                  "vyre_one_buffer": "vyre, one staging buffer (chunking off)",
                  "vyre_chunked": "vyre, chunked through a staging ring",
                  "vyre_copy16": "vyre, 16 host-copy threads"}


def _cell(b: dict, unit: str) -> str:
    if not b.get("available"):
        return "n.a."
    return f"{fmt_value(b['value'])} ({b['ratio']:.2f}x)"


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
        vy = f"**{fmt_value(r['value'])}**" if r.get("available") else f"n.a. ({r.get('note')})"
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
* **Array evaluations (issue 11).** One evaluation's native calls: the compute pass (15 µs), finishing the
  encoder (14 µs) and the submit (22 µs), then a round trip to read 4 bytes (30-70 µs). That floor, with no
  Python at all, is above torch's 85-90 µs for ten small ops and a download, and the 2^26 sum's kernels
  (130 µs) plus it pass the 211 µs that 1.3x torch would take. The fused chain's kernel runs at 4.4 TB/s
  (245 µs for 1 GiB) of that row's 419 µs.
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
