"""Test matrices for the device decompositions (tests/array/test_linalg_*.py): random, ill-conditioned
(condition number ~1e4, float32) and rank-deficient stacks, drawn from a seed, in a few sizes so the
programs (built per shape) are shared between examples."""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

SIZES = (1, 2, 5, 8, 13, 32)
BATCHES = ((2,),)  # one batch shape: the programs are built per shape (single matrices: the fixed tests)
KINDS = ("random", "ill", "rankdef")
SETTINGS = {"max_examples": 15, "deadline": None}  # each new shape builds its programs (~0.1 s each)
COND = 1e4


def _orth(rng: np.random.Generator, n: int) -> np.ndarray:
    q, r = np.linalg.qr(rng.standard_normal((n, n)))
    return q * np.sign(np.diag(r))


def matrix(rng: np.random.Generator, batch: tuple[int, ...], m: int, n: int, kind: str) -> np.ndarray:
    """A float64 stack (*batch, m, n) of ``kind``: random normal; 'ill': singular values log-spaced from 1
    down to 1/COND; 'rankdef': rank min(m, n) // 2 (singular values 1 .. 0.1, then exact zeros)."""
    out = np.empty((*batch, m, n))
    k = min(m, n)
    for idx in np.ndindex(*batch):
        if kind == "random" or k == 1 and kind == "ill":
            a = rng.standard_normal((m, n))
        else:
            s = np.logspace(0, -np.log10(COND), k) if kind == "ill" else np.zeros(k)
            if kind == "rankdef":
                r = k // 2  # 0 for one column: the zero matrix
                s[:r] = np.linspace(1.0, 0.1, r)
            a = (_orth(rng, m)[:, :k] * s) @ _orth(rng, n)[:k, :]
        out[idx] = a
    return out


def symmetric(rng: np.random.Generator, batch: tuple[int, ...], n: int, kind: str) -> np.ndarray:
    """A symmetric float64 stack: random (A + A^T) / 2, 'ill' (eigenvalues +-1 .. 1e-4 log-spaced, mixed
    signs) or 'rankdef' (half the eigenvalues exactly zero), with repeated eigenvalues in the last one."""
    out = np.empty((*batch, n, n))
    for idx in np.ndindex(*batch):
        if kind == "random":
            a = rng.standard_normal((n, n))
            out[idx] = (a + a.T) / 2
            continue
        w = np.logspace(0, -np.log10(COND), n) * rng.choice([-1.0, 1.0], n)
        if kind == "rankdef":
            w[n // 2:] = 0.0
        q = _orth(rng, n)
        out[idx] = (q * w) @ q.T
    return out


def shapes() -> st.SearchStrategy[tuple[tuple[int, ...], int, str, int]]:
    """(batch, n, kind, seed) for square inputs."""
    return st.tuples(st.sampled_from(BATCHES), st.sampled_from(SIZES), st.sampled_from(KINDS),
                     st.integers(0, 2**31 - 1))


#: (m, n) of the rectangular inputs: square, tall and wide, a few so the programs are shared
RECT = ((1, 1), (3, 2), (2, 5), (8, 8), (13, 5), (5, 13), (32, 32), (32, 8))


def rect_shapes() -> st.SearchStrategy[tuple[tuple[int, ...], int, int, str, int]]:
    """(batch, m, n, kind, seed) for rectangular inputs."""
    return st.builds(lambda b, mn, k, s: (b, *mn, k, s), st.sampled_from(BATCHES), st.sampled_from(RECT),
                     st.sampled_from(KINDS), st.integers(0, 2**31 - 1))


def nrm(x: np.ndarray) -> np.ndarray:
    """The Frobenius norm of each matrix of a stack."""
    return np.sqrt((np.asarray(x, np.float64) ** 2).sum(axis=(-2, -1)))
