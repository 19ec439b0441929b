"""search.knn: brute-force k nearest neighbours of q queries among n database vectors (both f32,
dimension d), distances and top-k fused on the device (kernels: ``_knn``).

Outputs ``distances`` (q x k f32) and ``indices`` (q x k u32, no -1: ``1 <= k <= n`` is
required). Metric ``"ip"``: the largest inner products first; ``"l2"``: the smallest **squared**
L2 distances first (as FAISS), computed as ``max(|q|^2 + |x|^2 - 2 q.x, 0)``. Ties go to the
lower database index. NaN and infinities in the inputs are refused (they have no portable rank).

The q x n distance matrix never goes to memory: each workgroup keeps the top-k of a slice of the
database per query (``q x k`` candidates per slice, ``slices`` param, default about 2048
workgroups in all) and a second program merges the slices. The list lives in registers, so
``k > 64`` runs rounds of 64 results, each a full fused pass bounded by the previous round's last
result (``_plan``): still no distance matrix, but a pass over the database per 64 results.

Exactness contract. The GPU accumulates each inner product with f32 fused multiply-adds in
dimension order; numpy (the reference, float64) rounds differently. Where every distance is
exact in f32 (small-integer data, as in the witnesses: products and sums below 2^24) both
outputs are bit-exact against the numpy brute force, ties included. For other data ``distances``
agree within ``|err| <= d * 2^-22 * max|q| * max|x|`` (ip; l2: ``4 * d * 2^-22 * (max|q| +
max|x|)^2``) and ``indices`` may swap neighbours whose distances differ by less than that;
``tests/ops/test_search.py`` checks this contract on random floats.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...backends.schedule import BufferSpec, Pipeline, Step
from ...errors import DispatchError
from ..registry import EXACT, OpSpec, Witness, register
from ._checks import check_k, check_metric, check_vectors
from ._plan import search_plan


def build(n: int, d: int, q: int, k: int, metric: str, slices: int | None = None) -> Pipeline:
    for label, v in (("n", n), ("d", d), ("q", q), ("k", k)):
        if int(v) < 1:
            raise ValueError(f"search.knn: {label} must be >= 1, got {v}")
    if not k <= n:
        raise ValueError(f"search.knn: need k <= n, got k={k}, n={n}")
    check_metric("search.knn", metric)
    plan = search_plan(n, d, q, k, metric, slices)
    buffers = {name: BufferSpec(dtype, count) for name, (dtype, count) in plan.buffers.items()}
    steps = tuple(Step(program, bind, grid) for program, bind, grid in plan.steps)
    return Pipeline("search.knn", buffers, ("queries", "database"), ("distances", "indices"), steps,
                    output_shapes={"distances": (q, k), "indices": (q, k)})


def brute_force(queries: np.ndarray, database: np.ndarray, k: int, metric: str) -> tuple[np.ndarray, np.ndarray]:
    """numpy brute force in float64: (distances f32, indices u32), ties by the lower index."""
    qs, xs = np.asarray(queries, np.float64), np.asarray(database, np.float64)
    ip = qs @ xs.T
    if metric == "ip":
        key = ip
    else:
        key = -np.maximum((qs * qs).sum(1)[:, None] + (xs * xs).sum(1)[None, :] - 2 * ip, 0)
    order = np.argsort(-key, axis=1, kind="stable")[:, :k]  # stable: equal keys keep the lower index first
    best = np.take_along_axis(key, order, 1)
    return (best if metric == "ip" else -best).astype(np.float32), order.astype(np.uint32)


def reference(queries: np.ndarray, database: np.ndarray, n: int, d: int, q: int, k: int, metric: str,
              slices: int | None = None) -> list[np.ndarray]:
    dist, ids = brute_force(np.asarray(queries).reshape(q, d), np.asarray(database).reshape(n, d), k, metric)
    return [dist, ids]


def params_for(queries: np.ndarray, database: np.ndarray, k: int | None = None, metric: str = "ip",
               slices: int | None = None) -> dict[str, Any]:
    if k is None:
        raise DispatchError("search.knn needs k", fix="call search_knn(backend, queries, database, k=...)")
    metric = check_metric("search.knn", metric)
    database = check_vectors("search.knn", "database", database, None)
    queries = check_vectors("search.knn", "queries", queries, database.shape[1])
    k = check_k("search.knn", k, database.shape[0])
    params = {"n": database.shape[0], "d": database.shape[1], "q": queries.shape[0], "k": k, "metric": metric}
    if slices is not None:
        if isinstance(slices, bool) or not isinstance(slices, (int, np.integer)) or slices < 1:
            raise DispatchError(f"search.knn: slices must be an int >= 1, got {slices!r}", fix="omit slices")
        params["slices"] = int(slices)
    return params


def witnesses() -> list[Witness]:
    r = np.random.default_rng(1515)

    def ints(rows: int, d: int, lo: int = -3, hi: int = 4) -> np.ndarray:
        return r.integers(lo, hi, (rows, d)).astype(np.float32)

    dup = ints(50, 8)
    dup[25:] = dup[:25]  # every vector twice: exact ties, the lower index first
    sets = [
        ("ip_size1", ints(1, 1), ints(1, 1), 1, "ip", None),
        ("ip_ties_q5_n100_d8_k3", ints(5, 8, -1, 2), ints(100, 8, -1, 2), 3, "ip", None),
        ("l2_q70_n150_d12_k10_2slices", ints(70, 12), ints(150, 12), 10, "l2", 2),
        ("l2_k_all_q3_n40_d6", ints(3, 6), ints(40, 6), 40, "l2", None),
        ("ip_k1_q9_n130_d20_1slice", ints(9, 20), ints(130, 20), 1, "ip", 1),
        ("l2_duplicates_self_q6_n50_d8_k5", dup[[0, 3, 25, 30, 49, 7]], dup, 5, "l2", 3),
        ("ip_q64_n256_d32_k16", ints(64, 32), ints(256, 32), 16, "ip", None),
        ("ip_two_rounds_q3_n100_d4_k70", ints(3, 4, -1, 2), ints(100, 4, -1, 2), 70, "ip", 2),
    ]
    out = []
    for name, qs, xs, k, metric, slices in sets:
        params = {"n": xs.shape[0], "d": xs.shape[1], "q": qs.shape[0], "k": k, "metric": metric}
        if slices is not None:
            params["slices"] = slices
        out.append(Witness(name, params, (qs, xs)))
    return out


register(OpSpec(
    id="search.knn", category="search",
    summary="k nearest neighbours (metric ip or squared l2) of f32 queries in an f32 database: distances and "
            "top-k fused; u32 indices, ties: lower index first.",
    build=build, reference=reference, witnesses=witnesses, params_for=params_for, tolerance=EXACT,
))
