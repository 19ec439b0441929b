"""GEMM tile shapes side by side on this adapter: ``python -m benches.gemm_sweep [--n 4096]``.

Times ``matmul`` (f32) and ``matmul.f16_fast`` (packed f16) at n^3 for every tile shape listed below that the
kernel builders accept (GPU time from timestamp queries, k launches in one pass), checks a few rows of C
against float64 products, and prints TFLOP/s, best first. Not a benchmark family: what it finds goes into
``default_tiles`` / ``default_packed_tiles`` (vyre/ops/linalg/_gemm.py, _gemm_f16.py) with the numbers.
"""

from __future__ import annotations

import argparse
from typing import Any

import numpy as np

from ._harness import ResidentOp, vyre_kernel


def _t(tm: int, tn: int, tk: int, rm: int, rn: int, **more: Any) -> dict[str, Any]:
    return dict(tile_m=tm, tile_n=tn, tile_k=tk, reg_m=rm, reg_n=rn, **more)


F32 = [_t(64, 64, 16, 8, 8), _t(128, 128, 8, 8, 8), _t(128, 64, 8, 8, 8), _t(64, 128, 8, 8, 8),
       _t(128, 128, 8, 8, 16), _t(128, 128, 8, 16, 8), _t(64, 64, 16, 4, 4), _t(128, 64, 8, 16, 8)]
F16 = [{}, _t(128, 128, 16, 8, 8), _t(128, 64, 16, 8, 8), _t(64, 128, 16, 8, 8), _t(128, 128, 16, 8, 16),
       _t(64, 64, 32, 8, 8), {"block": 32}, {"sum_f16": True, "block": 32}, _t(128, 64, 16, 16, 8)]


def _rows_ok(op: Any, a: np.ndarray, b: np.ndarray, n: int, atol: float) -> bool:
    c = op.output().reshape(n, n).astype(np.float64)
    rows = [0, n // 2, n - 1]
    want = a[rows].astype(np.float64) @ b.astype(np.float64)
    return bool(np.abs(c[rows] - want).max() <= atol)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m benches.gemm_sweep")
    ap.add_argument("--n", type=int, default=4096)
    a_ = ap.parse_args(argv)
    from vyre import WgpuBackend

    gpu = WgpuBackend.acquire()
    n = a_.n
    rng = np.random.default_rng(0)
    out = []
    for op_id, dt, grid in (("matmul", np.float32, F32), ("matmul.f16_fast", np.float16, F16)):
        a = (rng.random((n, n), dtype=np.float32) * 2 - 1).astype(dt)
        b = (rng.random((n, n), dtype=np.float32) * 2 - 1).astype(dt)
        for tiles in grid:
            try:
                op = ResidentOp(gpu, op_id, {"m": n, "k": n, "n": n, **tiles}, [a, b])
            except Exception as exc:  # noqa: BLE001 - a shape the builder refuses: say so, go on
                out.append((0.0, op_id, tiles, f"refused: {exc}"[:90]))
                continue
            try:
                t = vyre_kernel(gpu, op.steps, reps=3, target_s=0.3, max_k=50)
                ok = _rows_ok(op, a, b, n, 1e-3 * n if dt == np.float32 else 2e-2 * n ** 0.5 + 0.5)
                out.append((2 * n ** 3 / t.median / 1e12, op_id, tiles, "ok" if ok else "WRONG"))
            finally:
                op.free()
    for tf, op_id, tiles, note in sorted(out, key=lambda r: (r[1], -r[0])):
        print(f"{op_id:16s} {tf:8.3f} TFLOP/s  {note:6s} {tiles}")


if __name__ == "__main__":
    main()
