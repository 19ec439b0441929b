"""Pure host-side planning: estimated bytes of a job, jobs to workers, arrays to shards, sorted runs merged.

Everything here is deterministic (ties broken by position), so the same batch or array on the same
pool is always split the same way, and float results are reproducible run to run.
"""

from __future__ import annotations

import heapq
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

#: Fixed cost of a job on top of its bytes (launch, bind group, read back), in bytes' worth.
JOB_OVERHEAD = 4096


def job_bytes(inputs: Any) -> int:
    """Estimated bytes a job moves: its input arrays' sizes (inputs the pool cannot size count 0: the
    worker reports them as the job's error) plus :data:`JOB_OVERHEAD`."""
    values = inputs.values() if isinstance(inputs, dict) else (inputs if isinstance(inputs, (list, tuple)) else ())
    total = JOB_OVERHEAD
    for v in values:
        nbytes = getattr(v, "nbytes", None)
        if isinstance(nbytes, (int, np.integer)):
            total += int(nbytes)
        elif isinstance(v, (int, float, np.generic)):
            total += 4
    return total


def assign(weights: Sequence[int], bins: int) -> list[list[int]]:
    """Positions ``0..len(weights)-1`` in ``bins`` groups of near-equal total weight (longest first onto
    the least loaded bin, ties to the lower index); each group in ascending position order."""
    if bins < 1:
        raise ValueError("bins must be >= 1")
    groups: list[list[int]] = [[] for _ in range(bins)]
    heap = [(0, b) for b in range(bins)]
    for k in sorted(range(len(weights)), key=lambda k: (-weights[k], k)):
        load, b = heapq.heappop(heap)
        groups[b].append(k)
        heapq.heappush(heap, (load + int(weights[k]), b))
    return [sorted(g) for g in groups]


def chunks(positions: list[int], weights: Mapping[int, int] | Sequence[int], max_bytes: int,
           max_jobs: int) -> list[list[int]]:
    """``positions`` cut, in order, into runs of at most ``max_jobs`` jobs and ``max_bytes`` (a job heavier
    than ``max_bytes`` alone forms a run): a worker gets several calls, so a dead one loses little."""
    out: list[list[int]] = []
    run: list[int] = []
    size = 0
    for k in positions:
        w = int(weights[k])
        if run and (len(run) >= max_jobs or size + w > max_bytes):
            out.append(run)
            run, size = [], 0
        run.append(k)
        size += w
    if run:
        out.append(run)
    return out


def row_bounds(n: int, parts: int) -> list[tuple[int, int]]:
    """``[start, stop)`` of at most ``parts`` non-empty, near-equal slices of ``n`` rows (as np.array_split)."""
    parts = max(1, min(parts, n))
    base, extra = divmod(n, parts)
    bounds, start = [], 0
    for p in range(parts):
        stop = start + base + (1 if p < extra else 0)
        bounds.append((start, stop))
        start = stop
    return bounds


def merge_sorted(runs: list[np.ndarray]) -> np.ndarray:
    """One ascending array from ascending ``runs``, merged pairwise in a fixed tree order (a k-way merge
    in log2(k) vectorised rounds; equal keys keep the order of their runs)."""
    runs = [np.asarray(r) for r in runs]
    if not runs:
        raise ValueError("merge_sorted needs at least one run")
    while len(runs) > 1:
        merged = [_merge_two(runs[i], runs[i + 1]) for i in range(0, len(runs) - 1, 2)]
        if len(runs) % 2:
            merged.append(runs[-1])
        runs = merged
    return runs[0]


def _merge_two(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    # b[j] goes after every a element <= b[j] (side="right": a's equal keys first, i.e. stable)
    out = np.empty(len(a) + len(b), dtype=np.result_type(a, b))
    where_b = np.searchsorted(a, b, side="right") + np.arange(len(b))
    mask = np.ones(len(out), dtype=bool)
    mask[where_b] = False
    out[where_b] = b
    out[mask] = a
    return out
