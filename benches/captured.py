"""Captured work: a compiled step of 50 small kernels, and a captured resident sequence.

* ``vyre.compile`` step: a function over 1024-element f32 arrays whose trace is 50 kernels (elementwise
  work fused by the array layer, and reductions); vyre replays it as one submission. Wall clock per call
  with a wait at the end (``backend.flush()``), divided by the kernels; and host CPU of the calling thread
  per kernel (no wait). Baselines in the same process: the same function run eagerly by vyre, torch eager
  (the same ops, then ``torch.cuda.synchronize()``) and torch with CUDA graphs (``torch.cuda.graph``
  capture of the same ops, ``replay()`` then synchronize).
* ``capture_resident_sequence``: the 1000-dispatch chain of benches/sequence.py, checked once and
  replayed (wall clock per dispatch including the read; host CPU per dispatch without a wait).
"""

from __future__ import annotations

import numpy as np

from ._harness import Context, Outcome, Timing, cpu_timing, host_timing, record
from .sequence import DISPATCHES, N, expected, programs

NAME = "captured"
ITERS = 10  # per iteration: x*w+b fused with tanh, a mean, the centring fused with the next: 5 kernels


def plan(ctx: Context) -> int:
    return 3


def _step(xp, iters: int):
    def step(x, w):
        for _ in range(iters):
            x = xp.tanh(x * w + 0.1)
            x = x - xp.mean(x)
            x = x * (1.0 / (xp.max(xp.abs(x)) + 1.0))
            x = (x + xp.sum(x) * 1e-3).evaluate() if hasattr(x, "evaluate") else x + xp.sum(x) * 1e-3
        return x
    return step


def run(ctx: Context):
    import vyre
    import vyre.array as xp

    gpu, reps = ctx.gpu, ctx.reps
    rng = ctx.rng
    x0, w0 = rng.standard_normal(1024).astype(np.float32), rng.standard_normal(1024).astype(np.float32)
    with vyre.use(gpu):
        step = _step(xp, ITERS)
        compiled = vyre.compile(step)
        x, w = xp.asarray(x0), xp.asarray(w0)
        want = np.asarray(step(x, w))
        got = np.asarray(compiled(x, w))
        got2 = np.asarray(compiled(x, w))
        kernels = compiled._cache[next(iter(compiled._cache))].replay.captured.steps
        check = {"ok": bool(np.array_equal(got, want) and np.array_equal(got2, want)),
                 "against": "the same function run eagerly by vyre (bit-identical)"}

        def replay_wait():
            compiled(x, w)
            gpu.flush()

        def eager_wait():
            step(x, w).evaluate()
            gpu.flush()

        def per(t: Timing) -> Timing:
            return Timing([s / kernels for s in t.samples], t.inner, t.method)

        wall = per(host_timing(replay_wait, reps=reps, target_s=ctx.target_s * 5))
        base = {"vyre_eager": Outcome(per(host_timing(eager_wait, reps=reps, target_s=ctx.target_s * 5)),
                                      method="the same function without vyre.compile, then flush")}
        cpu = per(cpu_timing(lambda: compiled(x, w), reps, 20))
        gpu.flush()
    torch = ctx.base.torch
    if torch is not None:
        tx, tw = torch.from_numpy(x0).cuda(), torch.from_numpy(w0).cuda()
        tstep = _step(torch, ITERS)

        def t_eager():
            tstep(tx, tw)
            torch.cuda.synchronize()

        base["torch"] = Outcome(per(host_timing(t_eager, reps=reps, target_s=ctx.target_s * 5)),
                                method="the same ops in torch eager, then synchronize")
        sx, sw = tx.clone(), tw.clone()
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            for _ in range(3):
                tstep(sx, sw)
        torch.cuda.current_stream().wait_stream(s)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            tstep(sx, sw)

        def t_graph():
            sx.copy_(tx)
            graph.replay()
            torch.cuda.synchronize()

        base["torch_cuda_graph"] = Outcome(per(host_timing(t_graph, reps=reps, target_s=ctx.target_s * 5)),
                                           method="torch.cuda.graph capture of the same ops; copy input, "
                                                  "replay(), synchronize")
    else:
        base["torch"] = Outcome.missing(ctx.base.torch_note)
        base["torch_cuda_graph"] = Outcome.missing(ctx.base.torch_note)
    params = {"n": 1024, "kernels": kernels}
    yield record(bench=NAME, name=f"vyre.compile step of {kernels} kernels, wall per kernel",
                 metric="captured.step_per_kernel", params=params, unit="µs", scale=1e6,
                 vyre=Outcome(wall, method="replay (copy in, steps, copy out: one submission) then flush; / kernels"),
                 baselines=base, check=check)
    yield record(bench=NAME, name=f"vyre.compile step of {kernels} kernels, host CPU per kernel",
                 metric="captured.step_host_cpu_per_kernel", params=params, unit="µs", scale=1e6,
                 vyre=Outcome(cpu, method="thread CPU time of a replay call (no wait) / kernels"),
                 baselines={}, check=check)

    prog_a, prog_b = programs()
    hx, hy = gpu.allocate_resident(4 * N), gpu.allocate_resident(4 * N)
    try:
        steps = [(prog_a, [hx, hy]) if k % 2 == 0 else (prog_b, [hy, hx]) for k in range(DISPATCHES)]
        gpu.upload_resident(hx, x0)
        cap = gpu.capture_resident_sequence(steps)
        out = cap.run(read=[hx])[0].view(np.float32)
        want_x, _ = expected(x0, DISPATCHES)
        check = {"ok": bool(np.allclose(out, want_x, rtol=1e-5)), "against": "numpy, the same 1000-step chain"}
        t = host_timing(lambda: cap.run(read=[(hx, 0, 16)]), reps=reps, inner=1)
        seq = host_timing(lambda: gpu.dispatch_resident_sequence(steps, read=[(hx, 0, 16)]), reps=reps, inner=1)
        host = cpu_timing(lambda: cap.run(), reps, 1)
        gpu.flush()
    finally:
        gpu.free_resident(hx)
        gpu.free_resident(hy)

    def per_d(t: Timing) -> Timing:
        return Timing([s / DISPATCHES for s in t.samples], t.inner, t.method)

    params = {"dispatches": DISPATCHES, "n": N}
    yield record(bench=NAME, name=f"{DISPATCHES} dispatches, captured sequence",
                 metric="captured.sequence_per_dispatch", params=params, unit="µs", scale=1e6,
                 vyre=Outcome(per_d(t), method="capture_resident_sequence once; run(read 16 bytes): wall / 1000"),
                 baselines={"vyre_sequence": Outcome(per_d(seq), method="dispatch_resident_sequence (checks every "
                                                                        "step per call), read 16 bytes")},
                 check=check)
    yield record(bench=NAME, name=f"{DISPATCHES} dispatches, captured sequence, host CPU",
                 metric="captured.sequence_host_cpu_per_dispatch", params=params, unit="µs", scale=1e6,
                 vyre=Outcome(per_d(host), method="thread CPU time of run() without a read (no wait) / 1000"),
                 baselines={}, check=check)
