"""Several independent arrays of one size evaluated together share one kernel with several outputs (an
optimizer step's parameter and moments); the values are those of evaluating each alone (bit-identical on
the reference backend; within an ulp on a GPU, whose compiler may contract a*b+c differently in another
kernel); arrays of other sizes and groups past the device's storage buffers per kernel (WebGPU's default 8
on the reference backend; lavapipe has 32) get kernels of their own."""

from __future__ import annotations

import numpy as np

import vyre.array as xp
from vyre.array._kernels.fused import storage_limit


def _arrays(n, k, seed=0):
    rng = np.random.default_rng(seed)
    hs = [rng.standard_normal(n).astype(np.float32) for _ in range(k)]
    return hs, [xp.asarray(h) for h in hs]


def _kernels(arrays):
    xp.reset_fusion_stats()
    xp.evaluate(arrays)
    return xp.fusion_stats()["kernels_dispatched"]


def test_an_adam_like_step_is_one_kernel_with_the_values_of_separate_ones(xb):
    (P, G, M, V), (p, g, m, v) = _arrays(1000, 4)
    V, v = np.abs(V), xp.abs(v)  # second moments are non-negative (no NaN from sqrt)
    def step():
        m2 = 0.9 * m + 0.1 * g
        v2 = 0.999 * v + 0.001 * g * g
        return [m2, v2, p - 0.01 * m2 / (xp.sqrt(v2) + 1e-8)]
    together = step()
    assert _kernels(together) == 1
    alone = step()
    for a in alone:
        a.evaluate()
    for t, a in zip(together, alone):
        if xb.capabilities().backend == "reference":
            np.testing.assert_array_equal(np.asarray(t), np.asarray(a))
        else:  # a GPU compiler may contract a*b+c into an FMA differently in another kernel (WGSL allows it):
            # the H200 differs by an ulp in ~1% of the elements
            np.testing.assert_allclose(np.asarray(t), np.asarray(a), rtol=3e-7, atol=1e-9)
    want_m = np.float32(0.9) * M + np.float32(0.1) * G
    # |m| reaches 1e-3 by cancellation: an FMA (H200) rounds once where numpy rounds twice
    np.testing.assert_allclose(np.asarray(together[0]), want_m, rtol=1e-6, atol=2e-8)


def test_what_cannot_share_a_kernel(xb):
    (_, _), (a, b) = _arrays(64, 2)
    c = xp.asarray(np.ones(32, np.float32))
    assert _kernels([a + 1, c * 2]) == 2  # other sizes
    first = a * 3
    first.evaluate()
    second = xp.exp(a)
    dependent = first + 1  # a tree over a materialised member: a leaf like any other
    xs = [a * 2, b * 2]
    assert _kernels([*xs, second]) == 1
    np.testing.assert_allclose(np.asarray(dependent), np.asarray(a) * 3 + 1, rtol=1e-6)
    _, many = _arrays(16, 7, seed=3)  # 7 leaves + params + 3 outputs = 11 storage buffers: split below that
    outs = [many[0] + many[1] + many[2] + many[3] + 1.0, many[4] * many[5] * many[6], many[0] - many[6]]
    n = _kernels(outs)
    assert n >= 2 if storage_limit(many[0].device) < 11 else n == 1
    want = [sum(np.asarray(x) for x in many[:4]) + 1, np.asarray(many[4]) * np.asarray(many[5]) * np.asarray(many[6]),
            np.asarray(many[0]) - np.asarray(many[6])]
    for o, w in zip(outs, want):
        np.testing.assert_allclose(np.asarray(o), w, rtol=1e-5)
