"""Scaling curves: size vs device time per launch for elementwise (zip.add f32), full
reduction (reduce.sum f32) and f32 matmul, with the same methods and baselines as the
elementwise, reduce and matmul benchmarks (the raw wgpu-py matmul is left out here; Taichi's are in).
``--plot`` draws them (time per launch, log-log)."""

from __future__ import annotations

from . import elementwise, matmul, reduce
from ._harness import Context

NAME = "scaling"


def sizes(ctx: Context) -> dict[str, list[int]]:
    if ctx.quick:
        return {"elementwise": [1 << e for e in range(12, 23, 2)], "reduce": [1 << e for e in range(12, 23, 2)],
                "matmul": [64, 128, 256, 512]}
    return {"elementwise": [1 << e for e in range(14, 27, 2)], "reduce": [1 << e for e in range(14, 27, 2)],
            "matmul": [128, 256, 512, 1024, 2048, 4096]}


def plan(ctx: Context) -> int:
    return sum(len(v) for v in sizes(ctx).values())


def run(ctx: Context):
    s = sizes(ctx)
    for n in s["elementwise"]:
        yield elementwise.measure(ctx, n, bench=NAME, metric="scaling.elementwise")
    for n in s["reduce"]:
        yield reduce.measure(ctx, n, bench=NAME, metric="scaling.reduce")
    for n in s["matmul"]:
        yield matmul.measure(ctx, n, "f32", bench=NAME, metric="scaling.matmul",
                             baselines=("numpy", "torch", "cupy", "taichi"))
