"""Device arrays (``vyre.array``, issue 11): what a user of the array API waits for, against torch and cupy
eager in the same run.

Rows:

* ``arrays.fused_chain``: ``((a * 2 + b) * c - 1)`` on 2^26 float32 (quick: 2^16); vyre fuses the four
  ops into one generated kernel, torch and cupy eager launch four;
* ``arrays.fused_sum``: ``float((a * b).sum())`` on 2^26 float32 (quick: 2^16); vyre fuses the product
  into the reduction and downloads the scalar in the same submission, eager libraries write ``a * b``
  first (torch and cupy convert with ``float`` too);
* ``arrays.small_sum``: ``float((x * y).sum())`` on 1024 float32: the round trip of a scalar result;
* ``arrays.small_chain``: ten chained elementwise ops on 1024-element arrays, then one download to the
  host (torch ``.cpu()``, cupy ``.get()``): launch and round-trip overhead;
* ``arrays.matmul``: 4096 x 4096 float32 ``a @ b`` (quick: 256) against the ``vyre.ops`` matmul pipeline
  on resident buffers in the same process (``vyre_ops``), and torch/cupy ``a @ b`` (fp32, TF32 off).

Timing, the same for vyre and every baseline: synchronized wall time per evaluation, the median of
``--reps`` samples of ``inner`` back-to-back evaluations (``_harness.host_timing``). One evaluation
includes what the user waits for: building the expression (vyre records it lazily), running it, and
waiting for the device to finish (vyre ``evaluate()`` then a 4-byte download of the result, whose
mapped read waits for that submission -- ``evaluate()`` only submits; ``backend.flush()`` costs the
same, a fence submission and a map; torch ``torch.cuda.synchronize()``; cupy ``Device().synchronize()``);
the small chain and the sums end in a download instead. Inputs are on the device beforehand; outputs
are allocated per evaluation, as user code does.
``ratio`` = baseline time / vyre time (> 1: vyre is faster).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np

from . import _harness
from ._harness import Context, Outcome, ResidentOp, host_timing, over_binding_limit, record

NAME = "arrays"
SMALL_N = 1024
CHAIN_OPS = 10  # ops of the small chain


def _big(ctx: Context) -> int:
    return 1 << 16 if ctx.quick else 1 << 26


def _mat(ctx: Context) -> int:
    return 256 if ctx.quick else 4096


def plan(ctx: Context) -> int:
    return 5


def _wall(ctx: Context, fn: Callable[[], object], method: str, label: str | None = None) -> Outcome:
    # untimed calls first: compile/cache fills, allocator pools, and GPU clocks up (see _harness.calibrated)
    fn()
    end = time.perf_counter() + _harness.WARM_S
    while time.perf_counter() < end:
        fn()
    t = host_timing(fn, reps=ctx.reps, target_s=max(ctx.target_s, 0.05), budget_s=10.0, method=method)
    return Outcome(t, label=label)


VYRE_METHOD = "wall clock per evaluation: record + evaluate() + a 4-byte download (waits for the submission)"
TORCH_METHOD = "wall clock per evaluation: eager ops + torch.cuda.synchronize()"
CUPY_METHOD = "wall clock per evaluation: eager ops + Device().synchronize()"


def _finish(gpu: Any, x: Any) -> None:
    """Evaluate ``x`` and wait for it: a 4-byte read of its buffer, mapped after the work that wrote it."""
    gpu.download_resident_range(x.handle, 0, 4)


def _eager(ctx: Context, body: Callable[[Any, list], Any], host: list[np.ndarray],
           download: bool = False, scalar: bool = False) -> dict[str, Outcome]:
    """torch and cupy timings of ``body(lib, device_arrays)`` (eager), synchronized, downloaded, or
    (``scalar``) converted with ``float``."""
    out: dict[str, Outcome] = {}
    torch, cp = ctx.base.torch, ctx.base.cupy
    if torch is None:
        out["torch"] = Outcome.missing(ctx.base.torch_note)
    else:
        ts = [torch.from_numpy(h).cuda() for h in host]
        fn: Callable[[], object]
        if scalar:
            fn = lambda: float(body(torch, ts))  # noqa: E731
            method = "wall clock per evaluation: eager ops + float()"
        elif download:
            fn = lambda: body(torch, ts).cpu()  # noqa: E731
            method = "wall clock per evaluation: eager ops + .cpu()"
        else:
            def fn() -> None:
                body(torch, ts)
                torch.cuda.synchronize()
            method = TORCH_METHOD
        out["torch"] = _wall(ctx, fn, method)
        del ts
    if cp is None:
        out["cupy"] = Outcome.missing(ctx.base.cupy_note)
    else:
        cs = [cp.asarray(h) for h in host]
        if scalar:
            fn = lambda: float(body(cp, cs))  # noqa: E731
            method = "wall clock per evaluation: eager ops + float()"
        elif download:
            fn = lambda: body(cp, cs).get()  # noqa: E731
            method = "wall clock per evaluation: eager ops + .get()"
        else:
            def fn() -> None:
                body(cp, cs)
                cp.cuda.Device().synchronize()
            method = CUPY_METHOD
        out["cupy"] = _wall(ctx, fn, method)
        del cs
    ctx.release()
    return out


def _chain4(x: Any, b: Any, c: Any) -> Any:
    return (x * 2 + b) * c - 1


def fused_chain(ctx: Context) -> dict:
    import vyre.array as xp

    n = _big(ctx)
    params = {"n": n, "dtype": "f32", "ops": 4, "expr": "(a * 2 + b) * c - 1"}
    name = f"(a * 2 + b) * c - 1, f32 n=2^{n.bit_length() - 1}"
    host = [ctx.rng.random(n, dtype=np.float32) for _ in range(3)]
    gpu = ctx.gpu
    with xp.use(gpu):
        a, b, c = (xp.asarray(h) for h in host)

        def run() -> None:
            _finish(gpu, _chain4(a, b, c))

        vy = _wall(ctx, run, VYRE_METHOD, "one fused kernel")
        xp.reset_fusion_stats()
        got = np.asarray(_chain4(a, b, c).evaluate())
        kernels = xp.fusion_stats()["kernels_dispatched"]
    want = _chain4(*host)
    ok = bool(np.allclose(got, want, rtol=1e-6, atol=1e-6)) and kernels == 1
    check = {"ok": ok, "against": "numpy, rtol 1e-6", "kernels": kernels}
    base = _eager(ctx, lambda lib, t: _chain4(*t), host)
    return record(bench=NAME, name=name, metric="arrays.fused_chain", params=params, unit="ms", vyre=vy,
                  baselines=base, scale=1e3, check=check)


def _sum(ctx: Context, n: int, metric: str) -> dict:
    import vyre.array as xp

    params = {"n": n, "dtype": "f32", "expr": "float((a * b).sum())"}
    name = f"float((a * b).sum()), f32 n=2^{n.bit_length() - 1}"
    host = [ctx.rng.random(n, dtype=np.float32) for _ in range(2)]
    with xp.use(ctx.gpu):
        a, b = (xp.asarray(h) for h in host)
        vy = _wall(ctx, lambda: float((a * b).sum()),
                   "wall clock per evaluation: record + float() (the reduction and the download, one submission)")
        xp.reset_fusion_stats()
        got = float((a * b).sum())
        submissions = xp.fusion_stats()["submissions"]
    want = float(np.dot(host[0].astype(np.float64), host[1].astype(np.float64)))
    ok = abs(got - want) <= 1e-4 * abs(want) and submissions == 1
    check = {"ok": bool(ok), "against": "float64 dot product, relative 1e-4", "got": got, "want": want,
             "submissions": submissions}
    base = _eager(ctx, lambda lib, t: (t[0] * t[1]).sum(), host, scalar=True)
    return record(bench=NAME, name=name, metric=metric, params=params, unit="ms", vyre=vy,
                  baselines=base, scale=1e3, check=check)


def fused_sum(ctx: Context) -> dict:
    return _sum(ctx, _big(ctx), "arrays.fused_sum")


def small_sum(ctx: Context) -> dict:
    return _sum(ctx, SMALL_N, "arrays.small_sum")


def _chain10(x: Any, y: Any) -> Any:
    """Ten elementwise ops, written with the operators every library has."""
    z = x * 1.5 + y          # 2
    z = z - 0.25 * x         # 4
    z = z * z                # 5
    z = z / (y + 2)          # 7
    z = z * 0.5 + x          # 9
    return z - 1             # 10


def small_chain(ctx: Context) -> dict:
    import vyre.array as xp

    n = SMALL_N
    params = {"n": n, "dtype": "f32", "ops": CHAIN_OPS}
    name = f"{CHAIN_OPS} elementwise ops on f32 n={n}, then download"
    host = [ctx.rng.random(n, dtype=np.float32) for _ in range(2)]
    with xp.use(ctx.gpu):
        x, y = (xp.asarray(h) for h in host)
        vy = _wall(ctx, lambda: np.asarray(_chain10(x, y)),
                   "wall clock per evaluation: record + np.asarray (evaluate and download)")
        got = np.asarray(_chain10(x, y))
    want = _chain10(*host)
    ok = bool(np.allclose(got, want, rtol=1e-5, atol=1e-6))
    check = {"ok": ok, "against": "numpy, rtol 1e-5"}
    base = _eager(ctx, lambda lib, t: _chain10(*t), host, download=True)
    return record(bench=NAME, name=name, metric="arrays.small_chain", params=params, unit="µs", vyre=vy,
                  baselines=base, scale=1e6, check=check)


def matmul(ctx: Context) -> dict:
    import vyre.array as xp

    n = _mat(ctx)
    params = {"n": n, "m": n, "k": n, "dtype": "f32", "flops": 2 * n ** 3}
    name = f"a @ b f32 {n}x{n}"
    too_big = over_binding_limit(ctx.gpu, 4 * n * n)
    if too_big:
        return record(bench=NAME, name=name, metric="arrays.matmul", params=params, unit="ms",
                      vyre=Outcome.missing(too_big), scale=1e3)
    host = [(ctx.rng.random((n, n), dtype=np.float32) * 2 - 1) for _ in range(2)]
    gpu = ctx.gpu
    with xp.use(gpu):
        a, b = (xp.asarray(h) for h in host)

        def run() -> None:
            _finish(gpu, a @ b)

        vy = _wall(ctx, run, VYRE_METHOD)
        got = np.asarray(a @ b)
    rows = sorted({0, n // 2, n - 1})
    want = host[0][rows].astype(np.float64) @ host[1].astype(np.float64)
    err = float(np.max(np.abs(got[rows] - want)))
    ok = err <= 1e-4 * n  # f32 accumulation over n products of values in [-1, 1)
    check = {"ok": ok, "rows": rows, "max_abs_error": err, "against": "float64 rows, abs 1e-4 * n"}
    base: dict[str, Outcome] = {}
    op = ResidentOp(gpu, "matmul", {"m": n, "k": n, "n": n}, host)
    try:
        out_handle = op.handles[op.pipe.outputs[0]]

        def run_op() -> None:  # the same wait as the vyre row: a 4-byte read after the submission
            gpu.dispatch_resident_sequence(op.steps)
            gpu.download_resident_range(out_handle, 0, 4)

        base["vyre_ops"] = _wall(ctx, run_op, "wall clock per launch: dispatch_resident_sequence + a 4-byte "
                                 "download", "vyre.ops matmul on resident buffers")
    finally:
        op.free()
    base.update(_eager(ctx, lambda lib, t: t[0] @ t[1], host))
    return record(bench=NAME, name=name, metric="arrays.matmul", params=params, unit="ms", vyre=vy,
                  baselines=base, scale=1e3, check=check)


def run(ctx: Context):
    for fn in (fused_chain, fused_sum, small_sum, small_chain, matmul):
        yield fn(ctx)
        ctx.release()
