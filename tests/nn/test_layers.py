"""Every layer's forward against a float64 numpy implementation, on both backends (float32 on vyre):
rtol 1e-5 / atol 1e-5 (sums of up to ~50 float32 products of O(1) values) unless a test says otherwise."""

from __future__ import annotations

import math

import numpy as np
import pytest
from nn_numpy import conv2d, pool

import vyre.array as xp
import vyre.nn as nn
import vyre.random as vr
from vyre.errors import ArgumentTypeError, InvalidArgumentError

RNG = np.random.default_rng(3)


def _f32(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def _np(a):
    return np.asarray(a).astype(np.float64)


def _close(got, want, rtol=1e-5, atol=1e-5):
    np.testing.assert_allclose(np.asarray(got), want, rtol=rtol, atol=atol)


def _keys(n, seed=0):
    ks = vr.split(vr.key(seed), n)
    return [ks[i] for i in range(n)]


def test_linear(xb):
    lin = nn.Linear(5, 3, key=vr.key(1))
    x = _f32(4, 5)
    _close(lin(xp.asarray(x)), x @ _np(lin.weight.value).T + _np(lin.bias.value))
    x3 = _f32(2, 4, 5)
    _close(lin(xp.asarray(x3)), x3 @ _np(lin.weight.value).T + _np(lin.bias.value))
    bound = 1 / math.sqrt(5)
    w = _np(lin.weight.value)
    assert lin.weight.shape == (3, 5) and np.abs(w).max() < bound and np.abs(w).max() > bound / 4


@pytest.mark.parametrize("kernel, stride, padding, bias", [
    (3, 1, 0, True), (3, 1, 1, True), (3, 2, 1, False), ((2, 3), (2, 1), (1, 0), True), (1, 1, 0, True)])
def test_conv2d(xb, kernel, stride, padding, bias):
    conv = nn.Conv2d(2, 3, kernel, stride=stride, padding=padding, bias=bias, key=vr.key(2))
    x = _f32(2, 2, 7, 6)
    want = conv2d(x, _np(conv.weight.value), None if conv.bias is None else _np(conv.bias.value),
                    conv.stride, conv.padding)
    got = conv(xp.asarray(x))
    assert got.shape == want.shape
    _close(got, want)


@pytest.mark.parametrize("k, s, p", [(2, None, 0), (3, 2, 1), (3, 1, 0)])
def test_pools(xb, k, s, p):
    x = _f32(2, 3, 7, 7)
    stride = k if s is None else s
    _close(nn.MaxPool2d(k, s, p)(xp.asarray(x)), pool(x, k, stride, p, np.max, -np.inf))
    _close(nn.AvgPool2d(k, s, p)(xp.asarray(x)), pool(x, k, stride, p, np.mean, 0.0))


def test_layer_norm_and_rms_norm(xb):
    x = _f32(3, 4, 6) * 3 + 1
    ln = nn.LayerNorm(6)
    ln.weight.value = xp.asarray(_f32(6))
    ln.bias.value = xp.asarray(_f32(6))
    x64 = x.astype(np.float64)
    mu, var = x64.mean(-1, keepdims=True), x64.var(-1, keepdims=True)
    _close(ln(xp.asarray(x)), (x64 - mu) / np.sqrt(var + 1e-5) * _np(ln.weight.value) + _np(ln.bias.value))
    ln2 = nn.LayerNorm((4, 6), elementwise_affine=False)
    mu2, var2 = x64.mean((1, 2), keepdims=True), x64.var((1, 2), keepdims=True)
    _close(ln2(xp.asarray(x)), (x64 - mu2) / np.sqrt(var2 + 1e-5))
    assert ln2.parameters() == []
    rms = nn.RMSNorm(6)
    rms.weight.value = xp.asarray(_f32(6))
    _close(rms(xp.asarray(x)), x64 / np.sqrt((x64 ** 2).mean(-1, keepdims=True) + 1e-6) * _np(rms.weight.value))


def test_embedding(xb):
    emb = nn.Embedding(10, 4, key=vr.key(3))
    ids = np.array([[1, 9, 1], [0, 4, 7]], dtype=np.int32)
    got = emb(xp.asarray(ids))
    assert got.shape == (2, 3, 4)
    _close(got, _np(emb.weight.value)[ids], rtol=0, atol=0)


def test_dropout(xb):
    x = xp.ones((64, 32), dtype=xp.float32) * 2.0
    k = vr.key(5)
    drop = nn.Dropout(0.25)
    y = np.asarray(drop(x, key=k))
    keep = np.asarray(vr.bernoulli(k, 0.75, (64, 32)))   # the mask is bernoulli(key, 1 - p)
    np.testing.assert_array_equal(y, np.where(keep, np.float32(2.0 / 0.75), 0.0))
    assert 0.65 < keep.mean() < 0.85
    np.testing.assert_array_equal(np.asarray(drop(x, key=k)), y)          # same key, same mask
    assert not np.array_equal(np.asarray(drop(x, key=vr.key(6))), y)
    with pytest.raises(InvalidArgumentError):
        drop(x)                                                            # training needs a key
    drop.eval()
    np.testing.assert_array_equal(np.asarray(drop(x)), np.asarray(x))


def _np_mha(q, k, v, m, causal):
    w, b = _np(m.in_proj_weight.value), _np(m.in_proj_bias.value)
    e, h = m.embed_dim, m.num_heads
    d = e // h

    def proj(x, i):
        y = x.astype(np.float64) @ w[i * e:(i + 1) * e].T + b[i * e:(i + 1) * e]
        return y.reshape(x.shape[0], x.shape[1], h, d).transpose(0, 2, 1, 3)

    qh, kh, vh = proj(q, 0), proj(k, 1), proj(v, 2)
    s = qh @ kh.transpose(0, 1, 3, 2) / math.sqrt(d)
    if causal:
        s = np.where(np.tril(np.ones(s.shape[-2:], dtype=bool)), s, -np.inf)
    p = np.exp(s - s.max(-1, keepdims=True))
    o = (p / p.sum(-1, keepdims=True)) @ vh
    o = o.transpose(0, 2, 1, 3).reshape(q.shape[0], q.shape[1], e)
    return o @ _np(m.out_proj.weight.value).T + _np(m.out_proj.bias.value)


@pytest.mark.parametrize("causal", [False, True])
def test_multihead_attention(xb, causal):
    ka, kb = _keys(2, 9)
    m = nn.MultiheadAttention(8, 2, key=ka)
    # non-zero biases, so the test sees them used
    m.in_proj_bias.value = vr.normal(kb, (24,), stddev=0.5)
    m.out_proj.bias.value = xp.asarray(_f32(8))
    q = _f32(2, 5, 8)
    _close(m(xp.asarray(q), causal=causal), _np_mha(q, q, q, m, causal))
    kv = _f32(2, 3, 8)
    _close(m(xp.asarray(q), xp.asarray(kv)), _np_mha(q, kv, kv, m, False))


def test_sdpa_mask(xb):
    q, k, v = _f32(3, 4), _f32(5, 4), _f32(5, 2)
    mask = RNG.random((3, 5)) < 0.6
    mask[:, 0] = True
    s = q.astype(np.float64) @ k.T.astype(np.float64) / 2.0
    s = np.where(mask, s, -np.inf)
    p = np.exp(s - s.max(-1, keepdims=True))
    want = (p / p.sum(-1, keepdims=True)) @ v
    got = nn.functional.scaled_dot_product_attention(xp.asarray(q), xp.asarray(k), xp.asarray(v), mask=xp.asarray(mask))
    _close(got, want)


def test_sequential(xb):
    k1, k2 = _keys(2, 11)
    model = nn.Sequential(nn.Linear(4, 6, key=k1), nn.Dropout(0.5), nn.Linear(6, 2, key=k2))
    model.eval()
    x = _f32(3, 4)
    h = x @ _np(model[0].weight.value).T + _np(model[0].bias.value)
    _close(model(xp.asarray(x)), h @ _np(model[2].weight.value).T + _np(model[2].bias.value))
    model.train()
    a = np.asarray(model(xp.asarray(x), key=vr.key(1)))
    np.testing.assert_array_equal(np.asarray(model(xp.asarray(x), key=vr.key(1))), a)


def test_activation_modules_and_flatten(xb):
    x = _f32(2, 3, 2, 2)
    x64 = x.astype(np.float64)
    _close(nn.ReLU()(xp.asarray(x)), np.maximum(x64, 0))
    _close(nn.Sigmoid()(xp.asarray(x)), 1 / (1 + np.exp(-x64)))
    _close(nn.Tanh()(xp.asarray(x)), np.tanh(x64))
    _close(nn.SiLU()(xp.asarray(x)), x64 / (1 + np.exp(-x64)))
    _close(nn.GELU("tanh")(xp.asarray(x)), 0.5 * x64 * (1 + np.tanh(np.sqrt(2 / np.pi) * (x64 + 0.044715 * x64 ** 3))))
    flat = nn.Flatten()(xp.asarray(x))
    assert flat.shape == (2, 12)
    _close(flat, x64.reshape(2, 12), rtol=0, atol=0)
    assert nn.Flatten(2)(xp.asarray(x)).shape == (2, 3, 4)


def test_layer_argument_errors(ref_backend):
    k = vr.key(0, device=ref_backend)
    with pytest.raises(ArgumentTypeError):
        nn.Linear(3, 2, key=None)  # a key is required: no hidden global generator
    with pytest.raises(InvalidArgumentError):
        nn.Linear(0, 2, key=k)
    with pytest.raises(InvalidArgumentError):
        nn.MultiheadAttention(6, 4, key=k)
    with pytest.raises(InvalidArgumentError):
        nn.MaxPool2d(2, padding=2)
    with pytest.raises(ArgumentTypeError):
        nn.Conv2d(1, 1, 2.5, key=k)
    with pytest.raises(InvalidArgumentError):
        nn.Dropout(1.5)
    conv = nn.Conv2d(2, 1, 3, key=k)
    with pytest.raises(InvalidArgumentError):
        conv(xp.zeros((1, 3, 5, 5), device=ref_backend))      # 3 channels for 2
    with pytest.raises(InvalidArgumentError):
        conv(xp.zeros((1, 2, 2, 2), device=ref_backend))      # smaller than the kernel
    with pytest.raises(ArgumentTypeError):
        nn.Embedding(4, 2, key=k)(xp.zeros((2,), device=ref_backend))   # float indices
