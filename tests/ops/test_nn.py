"""Focused tests of the nn ops owned with linalg: softmax, layernorm, rmsnorm, attention, conv2d."""

from __future__ import annotations

import math

import numpy as np
import pytest

import vyre.ops
from vyre.errors import DispatchError
from vyre.ops.nn import attention as attention_mod
from vyre.ops.registry import compare, get

BACKENDS = ["reference", "gpu"]


@pytest.fixture(params=BACKENDS)
def backend(request):
    return request.getfixturevalue(request.param)


def _rand(shape, seed, lo=-1.0, hi=1.0):
    return np.random.default_rng(seed).uniform(lo, hi, shape).astype(np.float32)


# ----------------------------------------------------------------------------- softmax
def test_softmax_known_values(backend):
    x = np.log(np.array([[1, 2, 3, 4], [5, 5, 5, 5]], np.float32))
    out = vyre.ops.softmax(backend, x)
    np.testing.assert_allclose(out, [[0.1, 0.2, 0.3, 0.4], [0.25] * 4], rtol=1e-6)


def test_softmax_is_stable_for_huge_logits(backend):
    x = np.array([[1000.0, 999.0, -1000.0], [-3e38, 3e38, 0.0]], np.float32)
    out = vyre.ops.softmax(backend, x)
    assert np.all(np.isfinite(out))
    np.testing.assert_allclose(out[0], [1 / (1 + math.exp(-1)), math.exp(-1) / (1 + math.exp(-1)), 0.0], rtol=1e-6)
    np.testing.assert_array_equal(out[1], [0.0, 1.0, 0.0])


def test_softmax_masked_entries_are_exactly_zero(backend):
    x = _rand((3, 500), 1, -80, 80)
    x[:, ::3] = -np.inf
    out = vyre.ops.softmax(backend, x)
    assert np.all(out[:, ::3] == 0.0)
    np.testing.assert_allclose(out.sum(axis=1), 1.0, rtol=1e-5)


def test_softmax_workgroup_size_follows_cols():
    assert get("softmax").build(rows=2, cols=3).steps[0].program.workgroup_invocations == 32
    assert get("softmax").build(rows=2, cols=100).steps[0].program.workgroup_invocations == 128
    assert get("softmax").build(rows=2, cols=10000).steps[0].program.workgroup_invocations == 256
    assert get("softmax").build(rows=70000, cols=8).steps[0].grid == (70000, 1, 1)  # folded by the backend


def test_softmax_many_rows_fold_the_grid(gpu):
    x = _rand((70000, 3), 2, -5, 5)
    out = vyre.ops.softmax(gpu, x)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    np.testing.assert_allclose(out, e / e.sum(axis=1, keepdims=True), rtol=1e-5, atol=1e-7)


# ----------------------------------------------------------------------------- norms
def test_layernorm_normalizes(backend):
    x = _rand((4, 300), 3, -5, 20)
    gamma, beta = np.ones(300, np.float32), np.zeros(300, np.float32)
    y = vyre.ops.layernorm(backend, x, gamma, beta, eps=0.0)
    np.testing.assert_allclose(y.mean(axis=1), 0.0, atol=1e-5)
    np.testing.assert_allclose(y.var(axis=1), 1.0, rtol=1e-5)


def test_layernorm_gamma_beta_eps(backend):
    x = np.array([[1.0, 3.0], [2.0, 2.0]], np.float32)
    gamma, beta = np.array([2.0, 0.5], np.float32), np.array([10.0, -1.0], np.float32)
    y = vyre.ops.layernorm(backend, x, gamma, beta, eps=0.25)
    r = 1 / math.sqrt(1.0 + 0.25)  # row 0: mean 2, var 1
    np.testing.assert_allclose(y, [[10 - 2 * r, -1 + 0.5 * r], [10.0, -1.0]], rtol=1e-6)


def test_layernorm_far_from_zero_keeps_precision(backend):
    x = (1e4 + _rand((2, 1000), 4)).astype(np.float32)
    g, bta = np.ones(1000, np.float32), np.zeros(1000, np.float32)
    want = get("layernorm").reference(x, g, bta, eps=1e-5)[0]
    np.testing.assert_allclose(vyre.ops.layernorm(backend, x, g, bta), want, atol=2e-4)


def test_rmsnorm_known_values(backend):
    x = np.array([[3.0, 4.0]], np.float32)
    y = vyre.ops.rmsnorm(backend, x, np.array([1.0, 2.0], np.float32), eps=0.0)
    s = math.sqrt(12.5)
    np.testing.assert_allclose(y, [[3 / s, 8 / s]], rtol=1e-6)


def test_norm_param_errors(reference):
    x = np.ones((2, 3), np.float32)
    with pytest.raises(DispatchError, match="gamma"):
        vyre.ops.layernorm(reference, x, np.ones(4, np.float32), np.ones(3, np.float32))
    with pytest.raises(DispatchError, match="float32"):
        vyre.ops.rmsnorm(reference, x.astype(np.float64), np.ones(3, np.float32))
    with pytest.raises(DispatchError, match="2-D"):
        vyre.ops.softmax(reference, np.ones(5, np.float32))


# ----------------------------------------------------------------------------- attention
def _naive_attention(q, k, v, causal):
    """Loop-by-loop attention with the bottom-right causal convention (independent of the op's reference)."""
    bh, lq, d = q.shape
    lk = k.shape[1]
    out = np.zeros((bh, lq, d))
    for h in range(bh):
        for i in range(lq):
            keys = [j for j in range(lk) if not causal or j <= i + (lk - lq)]
            if not keys:
                continue
            s = np.array([q[h, i].astype(np.float64) @ k[h, j] / math.sqrt(d) for j in keys])
            w = np.exp(s - s.max())
            out[h, i] = (w / w.sum()) @ v[h, keys]
    return out.astype(np.float32)


@pytest.mark.parametrize("lq, lk, causal", [(7, 7, True), (3, 40, True), (40, 3, True), (9, 50, False)])
def test_attention_matches_naive(backend, lq, lk, causal):
    q, k, v = _rand((2, lq, 24), 5), _rand((2, lk, 24), 6), _rand((2, lk, 24), 7)
    out = vyre.ops.attention(backend, q, k, v, causal=causal)
    ok, err, detail = compare(out, _naive_attention(q, k, v, causal), get("attention").tolerance)
    assert ok, detail


def test_attention_causal_convention(backend):
    q, k, v = _rand((1, 1, 8), 8), _rand((1, 6, 8), 9), _rand((1, 6, 8), 10)
    # bottom-right alignment: a single query (decoding step) sees every key
    np.testing.assert_allclose(vyre.ops.attention(backend, q, k, v, causal=True),
                               vyre.ops.attention(backend, q, k, v, causal=False), rtol=1e-6)
    # Lq == Lk: the first query sees only the first key
    q2 = _rand((1, 6, 8), 11)
    out = vyre.ops.attention(backend, q2, k, v, causal=True)
    np.testing.assert_allclose(out[0, 0], v[0, 0], rtol=1e-6)
    # Lq > Lk: the first Lq - Lk queries see nothing and give 0
    q3 = _rand((1, 9, 8), 12)
    out = vyre.ops.attention(backend, q3, k, v, causal=True)
    assert np.all(out[0, :3] == 0.0)
    np.testing.assert_allclose(out[0, 3], v[0, 0], rtol=1e-6)


def test_attention_head_dim_128_long_keys(gpu):
    q, k, v = _rand((2, 70, 128), 13), _rand((2, 300, 128), 14), _rand((2, 300, 128), 15)
    out = vyre.ops.attention(gpu, q, k, v, causal=True)
    ok, _, detail = compare(out, get("attention").reference(q, k, v, causal=True)[0], get("attention").tolerance)
    assert ok, detail


def test_attention_never_allocates_scores():
    """Workgroup memory depends on D only, never on the sequence lengths."""
    def wg_bytes(lq, lk):
        p = get("attention").build(bh=1, lq=lq, lk=lk, d=64, causal=True).steps[0].program
        return sum(w.count * w.dtype.element_nbytes for w in p.workgroup)
    assert wg_bytes(16, 16) == wg_bytes(4096, 8192) <= 16384
    for d in (1, 20, 32, 33, 64, 80, 128, 256):
        g, dpt, bk = attention_mod.plan(d)
        assert g * dpt >= d and (2 * bk * d + attention_mod.BQ * bk * g) * 4 <= 16384


def test_attention_param_errors(reference):
    q = np.ones((2, 3, 8), np.float32)
    with pytest.raises(DispatchError, match="line up"):
        vyre.ops.attention(reference, q, np.ones((2, 4, 8), np.float32), np.ones((2, 5, 8), np.float32))
    with pytest.raises(DispatchError, match="float32"):
        vyre.ops.attention(reference, q.astype(np.float16), q, q)


# ----------------------------------------------------------------------------- conv2d
def test_conv2d_box_filter_known_values(backend):
    x = np.ones((1, 1, 4, 5), np.float32)
    w = np.ones((1, 1, 3, 3), np.float32)
    out = vyre.ops.conv2d(backend, x, w, padding=1)
    want = np.array([[4, 6, 6, 6, 4], [6, 9, 9, 9, 6], [6, 9, 9, 9, 6], [4, 6, 6, 6, 4]], np.float32)
    np.testing.assert_array_equal(out, want[None, None])


def test_conv2d_identity_and_bias(backend):
    x = _rand((2, 3, 5, 6), 16)
    w = np.eye(3, dtype=np.float32).reshape(3, 3, 1, 1)
    bias = np.array([1.0, -2.0, 0.5], np.float32)
    out = vyre.ops.conv2d(backend, x, w, bias)
    np.testing.assert_allclose(out, x + bias[None, :, None, None], rtol=1e-6)


@pytest.mark.parametrize("stride, padding, dilation", [(2, 1, 1), (1, 2, 2), ((2, 3), (0, 1), (2, 1)), (3, 0, 1)])
def test_conv2d_geometry(backend, stride, padding, dilation):
    x, w = _rand((2, 3, 11, 13), 17), _rand((4, 3, 3, 2), 18)
    out = vyre.ops.conv2d(backend, x, w, stride=stride, padding=padding, dilation=dilation)
    want = get("conv2d").reference(x, w, stride=stride, padding=padding, dilation=dilation)[0]
    assert out.shape == want.shape
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-5)


def test_conv2d_reference_against_direct_loops():
    x, w = _rand((1, 2, 6, 7), 19), _rand((3, 2, 3, 3), 20)
    got = get("conv2d").reference(x, w, stride=2, padding=1, dilation=1)[0]
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1))).astype(np.float64)
    for o in range(3):
        for i in range(got.shape[2]):
            for j in range(got.shape[3]):
                v = (xp[0, :, 2 * i:2 * i + 3, 2 * j:2 * j + 3] * w[o]).sum()
                assert abs(got[0, o, i, j] - v) < 1e-5


def test_conv2d_param_errors(reference):
    x = np.ones((1, 3, 5, 5), np.float32)
    with pytest.raises(DispatchError, match="channels"):
        vyre.ops.conv2d(reference, x, np.ones((2, 4, 3, 3), np.float32))
    with pytest.raises(DispatchError, match="does not fit"):
        vyre.ops.conv2d(reference, x, np.ones((2, 3, 7, 7), np.float32))
    with pytest.raises(DispatchError, match="bias"):
        vyre.ops.conv2d(reference, x, np.ones((2, 3, 3, 3), np.float32), np.ones(3, np.float32))
