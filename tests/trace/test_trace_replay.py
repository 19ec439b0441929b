"""vyre.compile: a replay gives bit-identical results to running the function eagerly (on both backends),
for random array programs with elementwise work, reductions, indexing and matmul."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import vyre
import vyre.array as xp

# one op per entry: (name, function of (x, w) -> array); x is (r, c), w is (c, c)
OPS = [
    ("add", lambda x, w: x + 1.5),
    ("mul_w", lambda x, w: x * w[0]),
    ("tanh", lambda x, w: xp.tanh(x)),
    ("exp_neg_sq", lambda x, w: xp.exp(-(x * x))),
    ("where", lambda x, w: xp.where(x > 0, x, 0.25 * x)),
    ("sub_mean_rows", lambda x, w: x - xp.mean(x, axis=1, keepdims=True)),
    ("div_max_cols", lambda x, w: x / (xp.max(xp.abs(x), axis=0) + 1.0)),
    ("matmul", lambda x, w: (x @ w) * 0.125),
    ("flip", lambda x, w: xp.flip(x, axis=0)),
    ("slice_pad", lambda x, w: xp.concat([x[:, 1:], x[:, :1]], axis=1)),
    ("take", lambda x, w: xp.take(x, xp.asarray(np.arange(x.shape[0], dtype=np.int32)[::-1].copy()), axis=0)),
    ("cumsum", lambda x, w: xp.cumulative_sum(x, axis=1) * 0.1),
    ("softmaxish", lambda x, w: xp.exp(x - xp.max(x, axis=1, keepdims=True))),
    ("sort", lambda x, w: xp.sort(x, axis=1)),
]


def _program(ops):
    def f(x, w):
        total = xp.sum(x)
        for name in ops:
            x = dict(OPS)[name](x, w)
        return x, total + xp.sum(x, axis=0)
    return f


def _run(xb, f, seed, r, c):
    rng = np.random.default_rng(seed)
    x = xp.asarray(rng.standard_normal((r, c)).astype(np.float32))
    w = xp.asarray(rng.standard_normal((c, c)).astype(np.float32))
    return x, w


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=st.lists(st.sampled_from([n for n, _ in OPS]), min_size=1, max_size=6),
       r=st.integers(1, 9), c=st.integers(1, 9), seed=st.integers(0, 2**16))
def test_replay_is_bit_identical_to_eager(xb, ops, r, c, seed):
    f = _program(ops)
    cf = vyre.compile(f)
    for k in range(3):  # trace, then two replays on new inputs
        x, w = _run(xb, f, seed + k, r, c)
        eager = f(x, w)
        xp.evaluate(list(eager))  # as the trace evaluates its results: together (see docs/compile.md)
        want = [np.asarray(a) for a in eager]
        got = [np.asarray(a) for a in cf(x, w)]
        for g, e in zip(got, want):
            assert g.dtype == e.dtype and g.shape == e.shape
            np.testing.assert_array_equal(g, e)  # bit-identical (same kernels, same order)
    assert cf.traces == 1 and cf.replays == 2
