"""Similarity search: ``search.knn`` (a flat index's search) over n x d f32 vectors, q queries, top k.

vyre: the op on resident buffers (database and queries uploaded once; only the kernels are timed):
the fused distance + per-slice top-k program and the slice merge (plus the query and database
norms for l2), device time per search. Baseline: torch on the CUDA device, f32 with TF32 off:
``torch.topk(queries @ database.T, k)`` for ip, and for l2 ``torch.topk(|q|^2 + |x|^2 - 2 q @ x.T,
k, largest=False)`` (norms precomputed, one addmm), CUDA events. The value is milliseconds per
search (lower is better; a baseline's ratio > 1 means vyre is faster).

Check: a few queries (first, middle, last) against a float64 numpy brute force, with the op's
contract for random floats (``vyre.ops.search._contract``: distances within the f32 budget,
indices equal up to near-ties).
"""

from __future__ import annotations

import numpy as np

from ._harness import Context, Outcome, ResidentOp, over_binding_limit, record

NAME = "search"


def cases(ctx: Context) -> list[tuple[int, int, int, int, str]]:
    """(n, d, q, k, metric) per measurement."""
    if ctx.quick:
        return [(4096, 32, 64, 10, "ip"), (4096, 32, 64, 10, "l2")]
    return [(1 << 20, 128, 1024, 10, "ip"), (1 << 20, 128, 1024, 10, "l2")]


def plan(ctx: Context) -> int:
    return len(cases(ctx))


def _rows_check(op: ResidentOp, queries, database, k: int, metric: str) -> dict:
    from vyre.ops.search._contract import contract_errors

    q = queries.shape[0]
    rows = sorted({0, q // 2, q - 1})
    dist, ids = op.output("distances")[rows], op.output("indices")[rows]
    errs = contract_errors(queries[rows], database, dist, ids, metric)
    return {"ok": not errs, "rows": rows, "errors": errs[:3],
            "against": "float64 numpy brute force, f32 error budget, near-ties may swap"}


def measure(ctx: Context, n: int, d: int, q: int, k: int, metric: str) -> dict:
    name = f"search.knn {metric} n=2^{n.bit_length() - 1} d={d} q={q} k={k}"
    params = {"op": "search.knn", "n": n, "d": d, "q": q, "k": k, "metric": metric, "flops": 2 * n * d * q}
    why = over_binding_limit(ctx.gpu, n * d * 4)
    if why:
        return record(bench=NAME, name=name, metric=f"search.{metric}", params=params, unit="ms",
                      vyre=Outcome.missing(why), scale=1e3)
    database = ctx.rng.standard_normal((n, d), dtype=np.float32)
    queries = ctx.rng.standard_normal((q, d), dtype=np.float32)
    op = ResidentOp(ctx.gpu, "search.knn", {"n": n, "d": d, "q": q, "k": k, "metric": metric}, [queries, database])
    try:
        vy = Outcome(ctx.kernel(op.steps, max_k=50))
        ctx.gpu.dispatch_resident_sequence(op.steps)
        check = _rows_check(op, queries, database, k, metric)
    finally:
        op.free()
    if vy.timing is not None:
        vy.extra["tflops"] = 2 * n * d * q / vy.timing.median / 1e12

    def make_torch(torch):
        tq, tx = torch.from_numpy(queries).cuda(), torch.from_numpy(database).cuda()
        if metric == "ip":
            return lambda: torch.topk(tq @ tx.T, k, dim=1)
        qn, xn = (tq * tq).sum(1, keepdim=True), (tx * tx).sum(1)[None, :]
        return lambda: torch.topk(torch.addmm(xn, tq, tx.T, alpha=-2).add_(qn), k, dim=1, largest=False)

    base = {"torch": ctx.torch(make_torch, max_k=50)}
    if base["torch"].timing is not None:
        base["torch"].label = "matmul + topk, fp32, TF32 off"
    ctx.release()
    return record(bench=NAME, name=name, metric=f"search.{metric}", params=params, unit="ms", vyre=vy,
                  baselines=base, scale=1e3, check=check)


def run(ctx: Context):
    for n, d, q, k, metric in cases(ctx):
        yield measure(ctx, n, d, q, k, metric)
