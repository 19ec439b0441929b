"""Where a compiled training step's time goes: ``python -m benches.profile_step [mlp|cnn|transformer] [--amp]``.

Prints the wall time of a replayed step (``vyre.compile``, then flush), the GPU time of all its kernels in
one pass (timestamp queries), and the GPU time per kernel, grouped by program name and grid (each kernel repeated
``--k`` times in one pass), largest first. The gap between the wall time and the summed GPU time is the
host's (replay, submission) plus the copies. Not a benchmark family: a tool for reading a step's profile.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections import defaultdict
from typing import Any

import numpy as np

from ._train_models import MODELS, vyre_init, vyre_trainer


def _gpu_ns(gpu: Any, steps: list[Any], k: int) -> float:
    td = gpu.dispatch_resident_sequence_timed(steps * k)
    return (td.gpu_ns if td.gpu_ns > 0 else td.wall_ns) / k


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m benches.profile_step")
    ap.add_argument("model", choices=[m.name for m in MODELS])
    ap.add_argument("--amp", action="store_true")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--k", type=int, default=20)
    ap.add_argument("--top", type=int, default=25)
    a = ap.parse_args(argv)
    import vyre
    from vyre import WgpuBackend

    gpu = WgpuBackend.acquire()
    spec = next(m for m in MODELS if m.name == a.model)
    x, y = spec.data(np.random.default_rng(7), a.quick)
    with vyre.use(gpu):
        run: Any = vyre_trainer(spec, vyre_init(spec), x, y, compiled=True, amp=a.amp)
        for _ in range(3):
            run()
        gpu.flush()
        walls, calls, cpus = [], [], []
        for _ in range(20):
            t0, c0 = time.perf_counter(), time.process_time()
            run()
            calls.append(time.perf_counter() - t0)
            cpus.append(time.process_time() - c0)
            gpu.flush()
            walls.append(time.perf_counter() - t0)
        replay = next(iter(run.step._cache.values())).replay
        steps = [(s.program, list(s.handles), s.config) for s in replay.steps]
        whole = statistics.median(_gpu_ns(gpu, steps, 1) for _ in range(5))
        # the same kernels without the replay's copies: a resident sequence, and the captured pass alone
        seq, bare = [], []
        for _ in range(10):
            t0 = time.perf_counter()
            gpu.dispatch_resident_sequence(steps)
            gpu.flush()
            t1 = time.perf_counter()
            replay.captured.run()
            gpu.flush()
            seq.append(t1 - t0)
            bare.append(time.perf_counter() - t1)
        per: dict[str, list[float]] = defaultdict(list)
        for st in steps:
            grid = "" if st[2] is None or st[2].grid is None else f" {tuple(st[2].grid)}"
            per[st[0].name + grid].append(_gpu_ns(gpu, [st], a.k))
    total = sum(sum(v) for v in per.values())
    print(f"{spec.name}{' amp' if a.amp else ''} batch {spec.batch(a.quick)} on {gpu.adapter_info.get('device')}: "
          f"{len(steps)} kernels; wall per step {statistics.median(walls) * 1e3:.3f} ms (the call returns after "
          f"{statistics.median(calls) * 1e3:.3f} ms, {statistics.median(cpus) * 1e3:.3f} ms of CPU); GPU time of "
          f"the step in one pass {whole / 1e6:.3f} ms; sum of kernels timed alone {total / 1e6:.3f} ms")
    print(f"wall of the same kernels as one resident sequence {statistics.median(seq) * 1e3:.3f} ms; the captured "
          f"pass without its copies {statistics.median(bare) * 1e3:.3f} ms; {len(replay.state)} state copies, "
          f"{len(replay.writes)} uploads per call")
    print(f"{'program':60s} {'count':>5s} {'total µs':>10s} {'mean µs':>9s}")
    for name, v in sorted(per.items(), key=lambda kv: -sum(kv[1]))[:a.top]:
        print(f"{name[:60]:60s} {len(v):5d} {sum(v) / 1e3:10.1f} {sum(v) / len(v) / 1e3:9.2f}")


if __name__ == "__main__":
    main()
