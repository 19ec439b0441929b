"""The performance targets of issues 5, 11, 13, 24, 26 and 31 and how a results file meets them
(``docs/performance.md``'s targets table; ``python -m benches`` prints it after a run)."""

from __future__ import annotations

from typing import Any

#: The targets of issues 5, 11, 13, 24 and 26 (set for one NVIDIA H200 through Vulkan, torch in the same run).
#: kind "ratio": the baseline's ratio (baseline time / vyre time) >= min (or <= max: a vyre variant as the
#: "baseline", e.g. the AMP step, that must be faster);
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
    # issue 24: captured steps and the lean host path (H200 rows against torch; the "(lavapipe)" rows are host CPU
    # of the calling thread, for CI's CPU adapter)
    {"id": "op_call_torch", "label": "vyre.ops.zip_add 1024 round trip vs torch", "metric": "latency.round_trip.op",
     "pick": "largest", "kind": "ratio", "baseline": "torch", "min": 1 / 1.5,
     "requirement": "<= 1.5x torch's time"},
    {"id": "captured_step", "label": "vyre.compile step of small kernels, per kernel",
     "metric": "captured.step_per_kernel", "pick": "largest", "kind": "value", "max": 4.0,
     "requirement": "<= 4 µs wall per kernel"},
    {"id": "captured_step_graphs", "label": "vyre.compile step vs torch CUDA graphs",
     "metric": "captured.step_per_kernel", "pick": "largest", "kind": "ratio", "baseline": "torch_cuda_graph",
     "min": 1.0, "requirement": "no slower than torch.cuda.graph replay of the same ops"},
    {"id": "round_trip_floor", "label": "round trip host CPU vs the raw cffi floor (lavapipe)",
     "metric": "latency.round_trip_cpu", "pick": "largest", "kind": "ratio", "baseline": "raw_cffi", "min": 1 / 1.5,
     "requirement": "<= 1.5x the floor's CPU time"},
    {"id": "sequence_cpu", "label": "captured sequence host CPU per dispatch (lavapipe)",
     "metric": "captured.sequence_host_cpu_per_dispatch", "pick": "largest", "kind": "value", "max": 2.5,
     "requirement": "<= 2.5 µs"},
    {"id": "captured_cpu", "label": "vyre.compile step host CPU per kernel (lavapipe)",
     "metric": "captured.step_host_cpu_per_kernel", "pick": "largest", "kind": "value", "max": 3.0,
     "requirement": "<= 3 µs"},
    # issue 26: whole training steps (benches/train.py), compiled, against torch eager in the same process
    *({"id": f"train_{m}_torch", "label": f"train {m} step, compiled, vs torch eager", "metric": f"train.{m}_step",
       "pick": "largest", "kind": "ratio", "baseline": "torch", "min": 1.0, "requirement": "<= torch eager's time"}
      for m in ("mlp", "cnn", "transformer")),
    {"id": "train_transformer_amp", "label": "train transformer step, compiled + AMP vs compiled f32",
     "metric": "train.transformer_step", "pick": "largest", "kind": "ratio", "baseline": "vyre_amp", "max": 0.7,
     "requirement": "<= 0.7x the compiled f32 step's time"},
    # issue 31: sorting at bandwidth (benches/sort.py) and reductions over leading axes (benches/reduce.py)
    *({"id": f"sort_{dt}", "label": f"vyre.array.sort {dt} 2^24 vs torch.sort", "metric": "sort.array",
       "pick": {"n": 1 << 24, "dtype": dt}, "kind": "ratio", "baseline": "torch", "min": 0.5,
       "requirement": ">= 0.5x torch.sort"} for dt in ("int32", "float32")),
    *({"id": f"sum_axis0_{rows}x{cols}", "label": f"sum(axis=0) f32 {label} vs torch", "metric": "reduce.axis0",
       "pick": {"rows": rows, "cols": cols}, "kind": "ratio", "baseline": "torch", "min": 0.9,
       "requirement": ">= 0.9x torch.sum(dim=0)"} for rows, cols, label in ((8192, 8192, "8192x8192"),
                                                                             (1 << 26, 4, "2^26x4"))),
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


def fmt_value(v, unit=""):
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
        return {"measured": f"{fmt_value(rec['value'], rec['unit'])}; {t['other']} not measured ({rec['name']})",
                "status": "n.a."}
    o = others[-1]
    ratio = rec["value"] / o["value"]
    return {"measured": f"{ratio:.2f}x ({fmt_value(rec['value'], rec['unit'])} vs {fmt_value(o['value'], o['unit'])}, "
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
            parts.append(f"{fmt_value(worst_v['value'], 'GB/s')} (slowest, {worst_v['name']})")
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
            rows.append({**row, "measured": f"{fmt_value(v, rec['unit'])} ({rec['name']})", "status": _status(ok)})
            continue
        b = rec["baselines"].get(t["baseline"], {})
        if not b.get("available"):
            rows.append({**row, "measured": f"{fmt_value(rec['value'], rec['unit'])}; {t['baseline']}: "
                                             f"{b.get('note', 'not measured')} ({rec['name']})", "status": "n.a."})
            continue
        ok = b["ratio"] >= t["min"] if "min" in t else b["ratio"] <= t["max"]
        measured = (f"{b['ratio']:.2f}x ({fmt_value(rec['value'], rec['unit'])} vs "
                    f"{fmt_value(b['value'], rec['unit'])}, {rec['name']})")
        rows.append({**row, "measured": measured, "status": _status(ok)})
    return rows


def targets_markdown(rows: list[dict]) -> str:
    out = ["| target | requirement | measured | status |", "|---|---|---|---|"]
    for r in rows:
        out.append(f"| {r['label']} | {r['requirement']} | {r['measured']} | **{r['status']}** |")
    return "\n".join(out)


# ----------------------------------------------------------------------------- tables


__all__ = ["TARGETS", "evaluate_targets", "targets_markdown", "fmt_value"]
