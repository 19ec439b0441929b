"""Compile time: cold vs memory-cache hit vs disk-cache hit (fresh process).

Programs: a small saxpy, the two programs of ``reduce.sum`` over 2^20 f32, and the f32
``matmul`` kernel for 1024^3 (a large, unrolled shader).

* cold (warm process): a backend of its own with a temporary disk cache (``VYRE_CACHE_DIR``
  semantics), after ``prepare()``; before each repetition ``invalidate_pipeline_cache``
  drops the programs from memory and disk, so every ``compile`` validates, lowers and
  builds the GPU pipeline again. Baseline: raw wgpu-py ``create_shader_module`` +
  ``create_compute_pipeline`` of the same WGSL (the part no cache of vyre can skip).
* memory: ``compile`` of a cached program.
* disk (fresh process): a new Python process with the same cache directory builds the same
  programs, creates a backend, runs ``prepare()`` and times its first ``compile`` of each
  (a disk hit: no validation, no lowering, only the GPU pipeline).
* cold, fresh process: the same in a process whose cache directory is empty.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from ._harness import Context, Outcome, Timing, host_timing, record

NAME = "compile"
ROOT = Path(__file__).resolve().parent.parent


def groups() -> list[tuple[str, list]]:
    """(label, programs): deterministic, so a child process rebuilds identical programs."""
    from vyre.ops.api import pipeline_for

    from .latency import saxpy_program

    return [
        ("saxpy", [saxpy_program("bench_compile_saxpy")]),
        ("reduce.sum f32 2^20 (2 programs)",
         pipeline_for("reduce.sum", {"shape": (1 << 20,), "dtype": "f32"}).programs),
        ("matmul f32 1024^3", pipeline_for("matmul", {"m": 1024, "k": 1024, "n": 1024}).programs),
    ]


def plan(ctx: Context) -> int:
    return 4 * len(groups())


def _child(cache_dir: str, timeout: float = 300) -> dict:
    env = {**os.environ, "VYRE_CACHE_DIR": cache_dir, "PYTHONPATH": os.pathsep.join(
        [str(ROOT)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p])}
    r = subprocess.run([sys.executable, "-m", "benches.compile", "--child"], capture_output=True, text=True,
                       cwd=ROOT, env=env, timeout=timeout)
    if r.returncode != 0:
        raise RuntimeError(f"compile child failed ({r.returncode}): {r.stderr[-2000:]}")
    return json.loads(r.stdout.strip().splitlines()[-1])


def child_main() -> None:
    """In a fresh process: prepare(), then time the first compile of every group (from VYRE_CACHE_DIR)."""
    t0 = time.perf_counter()
    from vyre import WgpuBackend

    gs = groups()
    gpu = WgpuBackend.acquire()
    gpu.prepare()
    startup = time.perf_counter() - t0
    out: dict[str, Any] = {"startup_s": startup, "groups": {}}
    for label, progs in gs:
        before = gpu.stats()
        t = time.perf_counter()
        for p in progs:
            gpu.compile(p)
        dt = time.perf_counter() - t
        after = gpu.stats()
        out["groups"][label] = {"seconds": dt,
                                "disk_hits": after["disk_cache_hits"] - before["disk_cache_hits"],
                                "lowerings": after["lowerings"] - before["lowerings"]}
    print(json.dumps(out))


def _compile_all(gpu: Any, programs: list) -> list:
    return [gpu.compile(p) for p in programs]


def run(ctx: Context):
    from vyre import WgpuBackend

    reps = ctx.reps
    gs = groups()
    tmp = tempfile.mkdtemp(prefix="vyre-bench-cache-")
    empty = tempfile.mkdtemp(prefix="vyre-bench-cold-")
    gpu = WgpuBackend.new(disk_cache=tmp)
    gpu.prepare()
    raw = ctx.base.raw
    cold, mem, raw_t = {}, {}, {}
    try:
        for label, progs in gs:
            samples = []
            for _ in range(reps + 1):  # the first one also pays one-time imports of this program's path
                gpu.invalidate_pipeline_cache(progs)
                t = time.perf_counter()
                for p in progs:
                    gpu.compile(p)
                samples.append(time.perf_counter() - t)
            cold[label] = Timing(samples[1:], 1, "perf_counter")
            mem[label] = host_timing(functools.partial(_compile_all, gpu, progs), reps=reps, target_s=0.02)
            wgsl = [gpu.compile(p).wgsl for p in progs]

            def raw_build(wgsl: list[str] = wgsl) -> None:
                for w in wgsl:
                    m = raw.device.create_shader_module(code=w)
                    raw.device.create_compute_pipeline(layout="auto", compute={"module": m, "entry_point": "main"})

            raw_t[label] = host_timing(raw_build, reps=reps, inner=1)
        stats = gpu.stats()
        disk_runs = [_child(tmp) for _ in range(2 if not ctx.quick else 1)]
        cold_run = _child(empty)
    finally:
        gpu.shutdown()
        shutil.rmtree(tmp, ignore_errors=True)
        shutil.rmtree(empty, ignore_errors=True)
    for label, progs in gs:
        params = {"programs": len(progs), "group": label}
        yield record(bench=NAME, name=f"{label}: cold", metric="compile.cold", params=params, unit="ms", scale=1e3,
                     vyre=Outcome(cold[label], method="compile() after invalidate_pipeline_cache (validate, lower, "
                                                      "GPU pipeline), warm process"),
                     baselines={"raw_wgpu": Outcome(raw_t[label], method="create_shader_module + "
                                                                         "create_compute_pipeline of the same WGSL")})
        yield record(bench=NAME, name=f"{label}: memory cache", metric="compile.memory", params=params, unit="µs",
                     scale=1e6, vyre=Outcome(mem[label], method="compile() of a cached program"))
        runs = [r["groups"][label] for r in disk_runs]
        hits = all(g["disk_hits"] >= 1 and g["lowerings"] == 0 for g in runs)
        yield record(bench=NAME, name=f"{label}: disk cache, fresh process", metric="compile.disk", params=params,
                     unit="ms", scale=1e3,
                     vyre=Outcome(Timing([g["seconds"] for g in runs], 1, "perf_counter"),
                                  method="first compile() in a new process (after prepare()) with the cache "
                                         "directory filled"),
                     baselines={"raw_wgpu": Outcome(raw_t[label], method="create_shader_module + "
                                                                         "create_compute_pipeline of the same WGSL")},
                     check={"ok": hits, "against": "stats(): disk_cache_hits >= 1 and no lowering in the child"},
                     notes=[f"child process start-up (imports, device, prepare): "
                            f"{disk_runs[0]['startup_s'] * 1e3:.0f} ms"])
        g = cold_run["groups"][label]
        yield record(bench=NAME, name=f"{label}: cold, fresh process", metric="compile.cold_process", params=params,
                     unit="ms", scale=1e3,
                     vyre=Outcome(Timing([g["seconds"]], 1, "perf_counter"),
                                  method="first compile() in a new process (after prepare()) with an empty cache "
                                         "directory (includes first-use imports of the lowering)"),
                     check={"ok": g["lowerings"] >= 1, "against": "stats(): the child lowered the program"})
    ctx.progress.say(f"compile: in-process backend stats: lowerings={stats['lowerings']} "
                     f"disk writes={stats['disk_cache']['writes']}")


if __name__ == "__main__":
    if "--child" in sys.argv:
        child_main()
