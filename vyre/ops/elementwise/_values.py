"""Deterministic witness values for the elementwise ops: edge cases plus seeded random fill."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ._kernel import NUMPY

I32_MIN, I32_MAX = -(2**31), 2**31 - 1
F32_MAX = float(np.finfo(np.float32).max)
F32_TINY = float(np.finfo(np.float32).tiny)  # smallest normal: denormals are not portable (flush to zero)
INF, NAN = float("inf"), float("nan")

U32_EDGES = [0, 1, 2, 3, 7, 31, 32, 33, 255, 256, 0xFFFF, 0x7FFFFFFF, 0x80000000, 0x80000001, 0xFFFFFFFE,
             0xFFFFFFFF, 0x12345678, 0xDEADBEEF]
I32_EDGES = [0, 1, -1, 2, -2, 3, -3, 7, -7, 31, 32, 33, -32, I32_MAX, I32_MIN, I32_MIN + 1, I32_MAX - 1,
             65535, -65536, 100000, -100000]


def rng(seed: int) -> np.random.Generator:
    return np.random.default_rng(seed)


def random(dtype: str, n: int, seed: int, lo: float = -100.0, hi: float = 100.0) -> np.ndarray:
    r = rng(seed)
    if dtype == "u32":
        return r.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32)
    if dtype == "i32":
        return r.integers(I32_MIN, I32_MAX, n, dtype=np.int64, endpoint=True).astype(np.int32)
    if dtype == "bool":
        return r.integers(0, 2, n).astype(bool)
    return r.uniform(lo, hi, n).astype(NUMPY[dtype])


def edges(dtype: str, specials: Sequence[float] = ()) -> np.ndarray:
    """The integer edge values, or the given float specials representable in ``dtype``."""
    if dtype == "u32":
        return np.array(U32_EDGES, np.uint32)
    if dtype == "i32":
        return np.array(I32_EDGES, np.int32)
    if dtype == "bool":
        return np.array([False, True])
    big = float(np.finfo(NUMPY[dtype]).max)
    keep = [v for v in specials if not np.isfinite(v) or abs(v) <= big]
    return np.array(keep, dtype=NUMPY[dtype])


def with_edges(dtype: str, n: int, seed: int, specials: Sequence[float] = (), lo: float = -100.0,
               hi: float = 100.0) -> np.ndarray:
    """``n`` values: the edge values first, then seeded random fill in [lo, hi)."""
    e = edges(dtype, specials)[:n]
    return np.concatenate([e, random(dtype, n - e.size, seed, lo, hi)]).astype(NUMPY[dtype])


__all__ = ["I32_MIN", "I32_MAX", "F32_MAX", "F32_TINY", "INF", "NAN", "U32_EDGES", "I32_EDGES", "rng",
           "random", "edges", "with_edges"]
