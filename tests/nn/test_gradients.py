"""vyre.autograd differentiates vyre.nn: gradients of conv2d, the pools, the norms, attention, the
activations and the losses (through ``value_and_grad`` and ``functional_call``) against central
differences of float64 numpy forwards, on both backends. Tolerance: rtol 1e-3, atol 1e-4 (float32
forward and backward against float64 differences of O(1) values)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from nn_numpy import attention, central_gradient, conv2d, log_softmax, pool

import vyre.array as xp
import vyre.nn as nn
import vyre.nn.functional as F
import vyre.random as vr
from vyre.autograd import grad, value_and_grad

RNG = np.random.default_rng(5)


def _f32(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def _check(vyre_f, numpy_f, *inputs):
    """Gradients of ``sum(f(*inputs) * r)`` for a fixed random ``r``, with respect to every input."""
    out = numpy_f(*[a.astype(np.float64) for a in inputs])
    r = RNG.standard_normal(np.shape(out))
    loss, grads = value_and_grad(lambda *a: xp.sum(vyre_f(*a) * xp.asarray(r.astype(np.float32))),
                                 argnums=tuple(range(len(inputs))))(*[xp.asarray(a) for a in inputs])
    np.testing.assert_allclose(float(loss), float((out * r).sum()), rtol=1e-4, atol=1e-4)
    for i, g in enumerate(grads):
        def partial(v, i=i):
            args = [a.astype(np.float64) for a in inputs]
            args[i] = v
            return float((numpy_f(*args) * r).sum())
        np.testing.assert_allclose(np.asarray(g), central_gradient(partial, inputs[i]), rtol=1e-3, atol=1e-4)


@pytest.mark.parametrize("stride, padding", [((1, 1), (1, 1)), ((2, 1), (0, 1))])
def test_conv2d_gradients(xb, stride, padding):
    _check(lambda x, w, b: F.conv2d(x, w, b, stride, padding), lambda x, w, b: conv2d(x, w, b, stride, padding),
           _f32(2, 2, 5, 4), _f32(3, 2, 3, 2), _f32(3))


def test_pool_gradients(xb):
    x = _f32(1, 2, 5, 5)   # continuous values: no ties in a max window
    _check(lambda a: F.max_pool2d(a, 3, 2, 1), lambda a: pool(a, 3, 2, 1, np.max, -np.inf), x)
    _check(lambda a: F.avg_pool2d(a, 2), lambda a: pool(a, 2, 2, 0, np.mean, 0.0), x)


def test_norm_gradients(xb):
    def np_ln(x, w, b):
        d = x - x.mean(-1, keepdims=True)
        return d / np.sqrt((d * d).mean(-1, keepdims=True) + 1e-5) * w + b

    _check(lambda x, w, b: F.layer_norm(x, 4, w, b), np_ln, _f32(3, 4), _f32(4), _f32(4))
    _check(lambda x, w: F.rms_norm(x, 4, w), lambda x, w: x / np.sqrt((x * x).mean(-1, keepdims=True) + 1e-6) * w,
           _f32(3, 4), _f32(4))


@pytest.mark.parametrize("causal", [False, True])
def test_attention_gradients(xb, causal):
    _check(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, causal=causal),
           lambda q, k, v: attention(q, k, v, causal), _f32(2, 3, 4), _f32(2, 3, 4), _f32(2, 3, 2))


def test_activation_and_loss_gradients(xb):
    x = _f32(3, 5) * 2
    _check(F.gelu, lambda a: 0.5 * a * (1 + np.vectorize(math.erf)(a / np.sqrt(2))), x)
    _check(F.silu, lambda a: a / (1 + np.exp(-a)), x)
    _check(lambda a: F.log_softmax(a, axis=1), lambda a: log_softmax(a, 1), x)
    labels = np.array([4, 0, 2], dtype=np.int32)

    def np_ce(a, eps=0.1):
        t = np.full(a.shape, eps / 5)
        t[np.arange(3), labels] += 1 - eps
        return -(t * log_softmax(a, 1)).sum(1).mean()

    _check(lambda a: F.cross_entropy(a, xp.asarray(labels), label_smoothing=0.1), np_ce, x)


def test_module_gradients_through_functional_call(xb):
    model = nn.Sequential(nn.Linear(3, 4, key=vr.key(0)), nn.GELU("tanh"), nn.Linear(4, 2, key=vr.key(1)))
    x = _f32(5, 3)
    values = model.parameter_values()
    loss, grads = value_and_grad(lambda v: F.mse_loss(nn.functional_call(model, v, xp.asarray(x)),
                                                      xp.zeros((5, 2))))(values)
    assert list(grads) == list(values)
    w = {k: np.asarray(v).astype(np.float64) for k, v in values.items()}

    def np_loss(name, arr):
        p = dict(w, **{name: arr})
        h = x @ p["0.weight"].T + p["0.bias"]
        h = 0.5 * h * (1 + np.tanh(np.sqrt(2 / np.pi) * (h + 0.044715 * h ** 3)))
        return ((h @ p["2.weight"].T + p["2.bias"]) ** 2).mean()

    for name, g in grads.items():
        np.testing.assert_allclose(np.asarray(g), central_gradient(lambda a, n=name: np_loss(n, a), w[name]),
                                   rtol=1e-3, atol=1e-5)


def test_gelu_gradient_in_float16_is_finite_far_from_zero(xb):
    """erf's small-|x| series is taken only below 0.5, but its x^13 overflows float16 from |x| ~ 4.4: the
    gradient of the branch where() does not take (0) times that inf was NaN (mixed-precision training of the
    transformer skipped every step once a hidden unit grew past ~6). Exact GELU' = Phi(x) + x phi(x)."""
    v = np.array([-30, -8, -6, -5, -1, -0.3, 0, 0.2, 0.7, 3, 5, 6.5, 8, 30, 200], np.float16)
    got = np.asarray(grad(lambda a: xp.sum(F.gelu(a)))(xp.asarray(v)), np.float64)
    x = v.astype(np.float64)
    want = 0.5 * (1 + np.vectorize(math.erf)(x / np.sqrt(2))) + x * np.exp(-x * x / 2) / np.sqrt(2 * np.pi)
    assert np.isfinite(got).all(), got
    np.testing.assert_allclose(got, want, rtol=0, atol=4e-3)  # float16 arithmetic: ~11 bits
