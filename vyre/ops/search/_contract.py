"""The exactness contract of ``search.knn`` for arbitrary f32 data (see ``knn``'s module doc),
checked against a float64 brute force: used by the tests and the benchmark on random floats,
where rounding makes bit-exact indices impossible to promise."""

from __future__ import annotations

import numpy as np


def _keys(queries: np.ndarray, database: np.ndarray, metric: str) -> tuple[np.ndarray, np.ndarray]:
    """(float64 ranking keys, larger is better: q x n; per-query error budget of the f32 kernel)."""
    qs, xs = queries.astype(np.float64), database.astype(np.float64)
    d = qs.shape[1]
    ip = qs @ xs.T
    eps = d * 2.0 ** -22  # 4x the worst-case relative error of a d-term f32 sum
    if metric == "ip":
        return ip, eps * np.abs(qs).sum(1) * np.abs(xs).max() + 1e-30
    qn, xn = (qs * qs).sum(1), (xs * xs).sum(1)
    key = -np.maximum(qn[:, None] + xn[None, :] - 2 * ip, 0)
    return key, eps * (np.sqrt(qn) + np.sqrt(xn.max())) ** 2 + 1e-30


def contract_errors(queries: np.ndarray, database: np.ndarray, dist: np.ndarray, ids: np.ndarray,
                    metric: str) -> list[str]:
    """Where (dist, ids) break the contract (empty when they keep it): each returned distance within
    the budget of the true one for its index; indices distinct and in range; distances in rank
    order; and no vector outside the result better than the k-th returned one by more than twice
    the budget (only near-ties may swap)."""
    key, tol = _keys(queries, database, metric)
    n = key.shape[1]
    q, k = ids.shape
    errs: list[str] = []
    sign = 1.0 if metric == "ip" else -1.0
    got = sign * dist.astype(np.float64)  # returned keys, larger is better
    for i in range(q):
        row = ids[i].astype(np.int64)
        if (row >= n).any() or len(set(row.tolist())) != k:
            errs.append(f"query {i}: indices not distinct or out of range: {row.tolist()}")
            continue
        true = key[i, row]
        bad = np.abs(got[i] - true) > tol[i]
        if bad.any():
            j = int(np.flatnonzero(bad)[0])
            errs.append(f"query {i} rank {j}: distance {dist[i, j]!r} for index {row[j]}, true {sign * true[j]!r}")
        if (np.diff(got[i]) > 0).any():
            errs.append(f"query {i}: distances out of rank order")
        kth = np.sort(key[i])[::-1][k - 1]  # the true k-th best key
        if (true < kth - 2 * tol[i]).any():
            errs.append(f"query {i}: a returned vector is worse than the true k-th best by more than the budget")
    return errs


__all__ = ["contract_errors"]
