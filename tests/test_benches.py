"""benches/: the harness runs end to end (quick, two families) and writes its JSON schema; the
report renders markdown from a result file and evaluates the targets. No timed assertions."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benches import report  # noqa: E402

from procs import child_env  # noqa: E402

RECORD_KEYS = {"bench", "name", "metric", "params", "unit", "higher_is_better", "available", "baselines", "check",
               "notes"}
TIMED_KEYS = {"value", "best", "method", "time_s"}


def _check_outcome(o: dict, *, baseline: bool) -> None:
    if not o["available"]:
        assert isinstance(o.get("note"), str) and o["note"]
        return
    assert TIMED_KEYS <= set(o), sorted(o)
    assert o["value"] > 0 and o["best"] > 0
    t = o["time_s"]
    assert t["min"] <= t["median"] and len(t["samples"]) >= 1 and t["inner"] >= 1
    assert all(s > 0 for s in t["samples"])
    if baseline:
        assert o["ratio"] > 0


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory, gpu):
    # the gpu fixture decides skip (no adapter) or fail (CI); the run itself is a subprocess
    out = tmp_path_factory.mktemp("bench") / "result.json"
    env = child_env(XDG_RUNTIME_DIR=os.environ.get("XDG_RUNTIME_DIR", "/tmp"))
    r = subprocess.run([sys.executable, "-m", "benches", "--quick", "--only", "latency,sequence", "--json", str(out),
                        "--no-baselines", "torch,cupy"],
                       capture_output=True, text=True, cwd=ROOT, env=env, timeout=300)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    return out, r.stdout


def test_quick_run_writes_the_schema(quick_run):
    path, stdout = quick_run
    doc = json.loads(path.read_text())
    assert doc["schema"] == "vyre-bench/1"
    assert doc["quick"] is True and doc["families"] == ["latency", "sequence"] and doc["failures"] == []
    assert {"device", "backend_type", "adapter_type", "slug", "features", "limits"} <= set(doc["adapter"])
    assert doc["vyre_version"] and doc["date"] and doc["host"]["python"]
    assert doc["baselines"]["numpy"]["available"] and doc["baselines"]["raw_wgpu"]["available"]
    metrics = {r["metric"] for r in doc["results"]}
    assert {"latency.round_trip", "latency.round_trip.op", "sequence.per_dispatch", "sequence.gpu_per_dispatch",
            "sequence.host_per_dispatch"} <= metrics
    for rec in doc["results"]:
        assert RECORD_KEYS <= set(rec), sorted(rec)
        assert rec["bench"] in ("latency", "sequence")
        assert rec["available"], rec
        _check_outcome(rec, baseline=False)
        for b in rec["baselines"].values():
            _check_outcome(b, baseline=True)
        assert rec["check"] is None or rec["check"]["ok"], rec["check"]
    rt = next(r for r in doc["results"] if r["metric"] == "latency.round_trip")
    assert {"raw_wgpu", "raw_wgpu_cwb", "numpy"} <= {k for k, b in rt["baselines"].items() if b["available"]}
    assert not rt["baselines"]["torch"]["available"]  # turned off: n.a. with a note
    seq = next(r for r in doc["results"] if r["metric"] == "sequence.per_dispatch")
    assert seq["params"]["dispatches"] == 1000
    # taichi stays enabled here: without it (CI) both rows carry it as n.a. with the reason; with it, a time
    ti_ok = doc["baselines"]["taichi"]["available"]
    assert rt["baselines"]["taichi"]["available"] == seq["baselines"]["taichi"]["available"] == ti_ok, rt
    ids = {t["id"]: t for t in doc["targets"]}
    assert set(ids) == {t["id"] for t in report.TARGETS}
    assert all(t["status"] in ("pass", "fail", "n.a.") for t in ids.values())
    assert ids["sequence"]["status"] != "n.a." and ids["round_trip"]["status"] != "n.a."
    assert ids["matmul_f32"]["status"] == "n.a."  # not run
    assert "[  1/" in stdout and "| target |" in stdout  # progress lines and the targets table


def test_report_renders_markdown(quick_run, tmp_path):
    path, _ = quick_run
    results = tmp_path / "results"
    results.mkdir()
    (results / "adapter.json").write_text(path.read_text())
    out = tmp_path / "docs" / "performance.md"
    assert report.main(["--results", str(results), "--out", str(out), "--no-plots"]) == 0
    md = out.read_text()
    doc = json.loads(path.read_text())
    assert md.startswith("# Performance")
    assert f"## {doc['adapter']['device']}" in md
    assert "### Targets" in md and "| target | requirement | measured | status |" in md
    assert "Single-dispatch round trip" in md and "Resident sequence: cost per dispatch" in md
    assert "raw wgpu-py" in md and "quick sizes" in md


def _rec(metric, value, unit="GB/s", n=1, baselines=None):
    return {"bench": "x", "name": f"{metric} {n}", "metric": metric, "params": {"n": n}, "unit": unit,
            "available": True, "value": value, "baselines": baselines or {}}


def test_targets_pass_fail_and_na():
    torch = lambda ratio: {"torch": {"available": True, "value": 1.0, "ratio": ratio}}  # noqa: E731
    raw = lambda ratio: {"raw_wgpu": {"available": True, "value": 1.0, "ratio": ratio}}  # noqa: E731
    doc = {"results": [
        _rec("elementwise.bandwidth", 100, n=1 << 20, baselines=torch(0.5)),
        _rec("elementwise.bandwidth", 100, n=1 << 26, baselines=torch(0.97)),  # the largest size counts
        _rec("reduce.bandwidth", 100, baselines={"torch": {"available": False, "note": "no torch"}}),
        _rec("transfer.upload", 25, n=1, baselines=raw(9)),
        _rec("transfer.upload", 30, n=2, baselines=raw(7)),  # one size under 8x: fail
        _rec("transfer.readback", 25, baselines=raw(10)),
        _rec("sequence.per_dispatch", 3.5, unit="µs"),
        _rec("latency.round_trip", 200, unit="µs"),
        _rec("matmul.f32", 25, unit="TFLOP/s", n=2048),
        {**_rec("fft.gflops", 900, unit="GFLOP/s", baselines=torch(0.4)), "params": {"n": 1 << 20, "batch": 16}},
        _rec("search.ip", 14.0, unit="ms", n=1 << 20, baselines=torch(1.3)),
        _rec("arrays.fused_chain", 1.0, unit="ms", n=1 << 26, baselines=torch(2.0)),
        _rec("arrays.fused_sum", 1.0, unit="ms", n=1 << 26, baselines=torch(1.2)),
        _rec("arrays.matmul", 1.0, unit="ms", n=4096,
             baselines={"vyre_ops": {"available": True, "value": 1.0, "ratio": 0.96}}),
    ]}
    got = {r["id"]: r["status"] for r in report.evaluate_targets(doc)}
    assert got == {"elementwise": "pass", "reduce": "n.a.", "upload": "fail", "readback": "pass", "sequence": "pass",
                   "round_trip": "fail", "matmul_f32": "n.a.", "matmul_f16": "n.a.", "fft": "fail", "search": "pass",
                   "arrays_chain": "pass", "arrays_sum": "fail", "arrays_small": "n.a.", "arrays_matmul": "pass",
                   "f16_packed": "n.a.", "matmul_f32_torch": "n.a.", "elementwise_sizes": "n.a.",
                   "reduce_torch": "n.a.", "round_trip_torch": "n.a.", "op_call_torch": "n.a.",
                   "captured_step": "n.a.", "captured_step_graphs": "n.a.", "round_trip_floor": "n.a.",
                   "sequence_cpu": "n.a.", "captured_cpu": "n.a.", "train_mlp_torch": "n.a.", "train_cnn_torch": "n.a.",
                   "train_transformer_torch": "n.a.", "train_transformer_amp": "n.a.", "sort_int32": "n.a.",
                   "sort_float32": "n.a.", "sum_axis0_8192x8192": "n.a.", "sum_axis0_67108864x4": "n.a."}


def test_issue_24_targets():
    base = lambda key, ratio: {key: {"available": True, "value": 1.0, "ratio": ratio}}  # noqa: E731
    doc = {"results": [
        _rec("latency.round_trip.op", 100, unit="µs", baselines=base("torch", 0.7)),  # 1.43x torch's time: pass
        _rec("captured.step_per_kernel", 5.0, unit="µs", baselines=base("torch_cuda_graph", 0.9)),
        _rec("latency.round_trip_cpu", 100, unit="µs", baselines=base("raw_cffi", 0.5)),  # 2x the floor: fail
        _rec("captured.sequence_host_cpu_per_dispatch", 2.0, unit="µs"),
        _rec("captured.step_host_cpu_per_kernel", 3.5, unit="µs"),
    ]}
    got = {r["id"]: r["status"] for r in report.evaluate_targets(doc)}
    assert {k: got[k] for k in ("op_call_torch", "captured_step", "captured_step_graphs", "round_trip_floor",
                                "sequence_cpu", "captured_cpu")} == {
        "op_call_torch": "pass", "captured_step": "fail", "captured_step_graphs": "fail",
        "round_trip_floor": "fail", "sequence_cpu": "pass", "captured_cpu": "fail"}


def test_issue_26_targets():
    base = lambda **ratios: {k: {"available": True, "value": 1.0, "ratio": r} for k, r in ratios.items()}  # noqa: E731
    doc = {"results": [
        _rec("train.mlp_step", 5.0, unit="ms", baselines=base(torch=1.2)),
        _rec("train.cnn_step", 5.0, unit="ms", baselines=base(torch=0.8)),
        _rec("train.transformer_step", 5.0, unit="ms", baselines=base(torch=1.0, vyre_amp=0.75)),
    ]}
    got = {r["id"]: r["status"] for r in report.evaluate_targets(doc)}
    assert {k: got[k] for k in ("train_mlp_torch", "train_cnn_torch", "train_transformer_torch",
                                "train_transformer_amp")} == {
        "train_mlp_torch": "pass", "train_cnn_torch": "fail", "train_transformer_torch": "pass",
        "train_transformer_amp": "fail"}


def test_issue_31_targets():
    base = lambda ratio: {"torch": {"available": True, "value": 1.0, "ratio": ratio}}  # noqa: E731

    def rec(metric, ratio, **params):
        return {**_rec(metric, 1.0, unit="ms", baselines=base(ratio)), "params": params}

    doc = {"results": [
        rec("sort.array", 0.6, n=1 << 24, dtype="int32"),
        rec("sort.array", 0.4, n=1 << 24, dtype="float32"),
        rec("sort.array", 2.0, n=1 << 16, dtype="float32"),  # another size: not the target's row
        rec("reduce.axis0", 0.95, rows=8192, cols=8192, n=8192 * 8192),
        rec("reduce.axis0", 0.5, rows=1 << 26, cols=4, n=1 << 28),
    ]}
    got = {r["id"]: r["status"] for r in report.evaluate_targets(doc)}
    assert {k: got[k] for k in ("sort_int32", "sort_float32", "sum_axis0_8192x8192", "sum_axis0_67108864x4")} == {
        "sort_int32": "pass", "sort_float32": "fail", "sum_axis0_8192x8192": "pass", "sum_axis0_67108864x4": "fail"}


def test_issue_13_targets():
    torch = lambda ratio: {"torch": {"available": True, "value": 1.0, "ratio": ratio}}  # noqa: E731
    scaling = [_rec("scaling.elementwise", 1, n=1 << k, baselines=torch(r)) for k, r in ((18, 0.5), (20, 1.01),
                                                                                         (22, 1.2), (26, 1.0))]
    doc = {"results": [
        *scaling,
        _rec("matmul.f32", 34.0, unit="TFLOP/s", n=4096, baselines=torch(0.67)),
        _rec("matmul.f16_fast", 44.9, unit="TFLOP/s", n=4096),
        _rec("reduce.bandwidth", 100, n=1 << 26, baselines=torch(1.02)),
        _rec("latency.round_trip", 150, unit="µs", baselines=torch(0.4)),
    ]}
    got = {r["id"]: r for r in report.evaluate_targets(doc)}
    assert got["elementwise_sizes"]["status"] == "pass"  # 2^18 is below the target's sizes
    assert "1.00x at the lowest" in got["elementwise_sizes"]["measured"]
    assert got["f16_packed"]["status"] == "fail" and got["f16_packed"]["measured"].startswith("1.32x")
    assert got["matmul_f32_torch"]["status"] == "fail" and got["reduce_torch"]["status"] == "pass"
    assert got["round_trip_torch"]["status"] == "fail"
    doc["results"][3] = _rec("scaling.elementwise", 1, n=1 << 26, baselines=torch(0.99))
    assert {r["id"]: r for r in report.evaluate_targets(doc)}["elementwise_sizes"]["status"] == "fail"


def test_arrays_family_quick(gpu, tmp_path):
    """benches/arrays.py --quick runs on this adapter, its results check out, and its four targets are
    evaluated (n.a. without torch; the matmul row's vyre.ops baseline is always there)."""
    out = tmp_path / "arrays.json"
    env = child_env(XDG_RUNTIME_DIR=os.environ.get("XDG_RUNTIME_DIR", "/tmp"))
    r = subprocess.run([sys.executable, "-m", "benches", "--quick", "--only", "arrays", "--json", str(out),
                        "--no-baselines", "torch,cupy", "--reps", "1"],
                       capture_output=True, text=True, cwd=ROOT, env=env, timeout=300)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    doc = json.loads(out.read_text())
    assert doc["failures"] == []
    recs = {rec["metric"]: rec for rec in doc["results"]}
    assert set(recs) == {"arrays.fused_chain", "arrays.fused_sum", "arrays.small_sum", "arrays.small_chain",
                         "arrays.matmul"}
    for rec in recs.values():
        assert rec["available"] and rec["check"]["ok"], rec
        _check_outcome(rec, baseline=False)
        assert not rec["baselines"]["torch"]["available"]
    assert recs["arrays.fused_chain"]["check"]["kernels"] == 1
    ops = recs["arrays.matmul"]["baselines"]["vyre_ops"]
    _check_outcome(ops, baseline=True)
    ids = {t["id"]: t["status"] for t in doc["targets"]}
    assert ids["arrays_chain"] == ids["arrays_sum"] == ids["arrays_small"] == "n.a."
    assert ids["arrays_matmul"] == "n.a."  # quick size is 256, the target is at 4096


def test_progress_bar_only_on_a_terminal():
    import io

    from benches._harness import Progress

    class Tty(io.StringIO):
        def isatty(self):
            return True

    pipe, tty = io.StringIO(), Tty()
    for stream in (pipe, tty):
        p = Progress(2, stream)
        p.say("-- family")
        p.step("first")
        p.step("second")
        p.close()
    assert "\r" not in pipe.getvalue() and pipe.getvalue().splitlines()[-1].endswith("] second")
    text = tty.getvalue()
    assert "\r" in text and "2/2 [" in text and "run/s]" in text  # a tqdm bar under the lines
    assert "] first\n" in text and "] second\n" in text
