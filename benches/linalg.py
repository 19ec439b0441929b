"""Device decompositions (``vyre.array.linalg``: eigh, svd, solve, qr) against numpy's LAPACK (CPU) and
torch.linalg (cuSOLVER, where torch with CUDA is importable) in the same run.

Rows ``linalg <fn> <batch>x<n>x<n>``: float32, a batch of ``batch`` n x n matrices (random normal;
symmetric for eigh; solve with one right-hand side column per matrix). Sizes: a batch of small matrices
and single larger ones -- full: 4096 x 16 x 16, 64 x 64 x 64, 1 x 256 x 256, 1 x 1024 x 1024; --quick
(lavapipe, CI): 16 x 16 x 16 and 1 x 64 x 64.

Timing, the same for vyre and every baseline: synchronized wall time per call, the median of ``--reps``
samples (``_harness.host_timing``): vyre from the materialised input array to the results on the device
(the call, then a 4-byte download of the last result, which waits for its submission; solve's singularity
check downloads its per-matrix flags inside the call); torch the call and ``torch.cuda.synchronize()``;
numpy the call. Correctness first: each vyre result is checked by its residual (||A V - V diag(w)||,
||A - U S Vh||, ||A x - b||, ||A - QR||, relative, float64 on the host) at 1e-4 * sqrt(n).
``ratio`` = baseline time / vyre time (> 1: vyre is faster).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from . import _harness
from ._harness import Context, Outcome, host_timing, record

NAME = "linalg"
FUNCS = ("eigh", "svd", "solve", "qr")
METHOD = "wall clock per call: the call + a 4-byte download of the last result (waits for the submission)"


def shapes(ctx: Context) -> list[tuple[int, int]]:
    return [(16, 16), (1, 64)] if ctx.quick else [(4096, 16), (64, 64), (1, 256), (1, 1024)]


def plan(ctx: Context) -> int:
    return len(shapes(ctx)) * len(FUNCS)


def _wall(ctx: Context, fn: Callable[[], object], method: str, label: str | None = None) -> Outcome:
    fn()  # compile and cache fills first
    end = time.perf_counter() + _harness.WARM_S
    while time.perf_counter() < end:
        fn()
    t = host_timing(fn, reps=ctx.reps, target_s=max(ctx.target_s, 0.05), budget_s=20.0, method=method)
    return Outcome(t, label=label)


def _inputs(ctx: Context, fn: str, nb: int, n: int) -> list[np.ndarray]:
    a = ctx.rng.standard_normal((nb, n, n)).astype(np.float32)
    if fn == "eigh":
        a = ((a + np.swapaxes(a, -1, -2)) / 2).astype(np.float32)
    if fn == "solve":
        return [a, ctx.rng.standard_normal((nb, n, 1)).astype(np.float32)]
    return [a]


def _call(lib: Any, fn: str, ts: list[Any]) -> Any:
    la = lib.linalg
    if fn == "eigh":
        return la.eigh(ts[0])
    if fn == "svd":
        return la.svd(ts[0], full_matrices=False)
    if fn == "solve":
        return la.solve(ts[0], ts[1])
    return la.qr(ts[0])


def _residual(fn: str, host: list[np.ndarray], got: Any) -> float:
    a = host[0].astype(np.float64)
    parts = [np.asarray(g, np.float64) for g in (got if isinstance(got, tuple) else (got,))]
    norm = np.sqrt((a ** 2).sum(axis=(-2, -1)))
    if fn == "eigh":
        w, v = parts
        r = a @ v - v * w[:, None, :]
    elif fn == "svd":
        u, s, vh = parts
        r = a - (u * s[:, None, :]) @ vh
    elif fn == "solve":
        b = host[1].astype(np.float64)
        r = a @ parts[0] - b
        norm = norm * np.sqrt((parts[0] ** 2).sum(axis=(-2, -1))) + np.sqrt((b ** 2).sum(axis=(-2, -1)))
    else:
        q, rr = parts
        r = a - q @ rr
    return float((np.sqrt((r ** 2).sum(axis=(-2, -1))) / norm).max())


def case(ctx: Context, fn: str, nb: int, n: int) -> dict:
    import vyre.array as xp

    name = f"{fn} {nb}x{n}x{n}"
    params = {"fn": fn, "batch": nb, "n": n, "dtype": "f32"}
    host = _inputs(ctx, fn, nb, n)
    gpu = ctx.gpu
    with xp.use(gpu):
        arrays = [xp.asarray(h) for h in host]

        def run() -> None:
            out = _call(xp, fn, arrays)
            last = out[-1] if isinstance(out, tuple) else out
            gpu.download_resident_range(last.handle, 0, 4)

        got = _call(xp, fn, arrays)
        err = _residual(fn, host, got)
        tol = 1e-4 * math.sqrt(n)
        check = {"ok": err <= tol, "max_relative_residual": err, "against": f"float64 residual, {tol:.1e}"}
        vy = _wall(ctx, run, METHOD) if check["ok"] else Outcome.missing(f"residual {err:.2e} over {tol:.1e}")
    base: dict[str, Outcome] = {"numpy": _wall(ctx, lambda: _call(np, fn, host), "wall clock per call (CPU)")}
    torch = ctx.base.torch
    if torch is None:
        base["torch"] = Outcome.missing(ctx.base.torch_note)
    else:
        ts = [torch.from_numpy(h).cuda() for h in host]

        def run_torch() -> None:
            _call(torch, fn, ts)
            torch.cuda.synchronize()

        base["torch"] = _wall(ctx, run_torch, "wall clock per call: torch.linalg + torch.cuda.synchronize()")
        del ts
    ctx.release()
    return record(bench=NAME, name=name, metric=f"linalg.{fn}", params=params, unit="ms", vyre=vy,
                  baselines=base, scale=1e3, check=check)


def run(ctx: Context):
    for nb, n in shapes(ctx):
        for fn in FUNCS:
            yield case(ctx, fn, nb, n)
            ctx.release()
