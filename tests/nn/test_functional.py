"""vyre.nn.functional's activations, softmax and losses against float64 numpy, on both backends (float32 on
vyre). Tolerances: rtol 1e-5 / atol 1e-6 unless a line says otherwise (float32 rounding of a few ops)."""

from __future__ import annotations

import math

import numpy as np
import pytest

import vyre.array as xp
import vyre.nn.functional as F
from vyre.errors import ArgumentTypeError, InvalidArgumentError

RNG = np.random.default_rng(7)
EDGES = [-100.0, -30.0, -0.5, -1e-3, 0.0, 1e-3, 0.49, 30.0, 100.0]  # overflow, the erf branch switch, zero
X = np.concatenate([RNG.standard_normal(40) * 3, EDGES]).astype(np.float32)
_erf = np.vectorize(math.erf)


def _np_sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def _close(got, want, rtol=1e-5, atol=1e-6):
    np.testing.assert_allclose(np.asarray(got), want, rtol=rtol, atol=atol)


@pytest.mark.parametrize("name, ref, atol", [
    ("relu", lambda x: np.maximum(x, 0.0), 0.0),
    ("sigmoid", _np_sigmoid, 1e-7),
    ("silu", lambda x: x * _np_sigmoid(x), 1e-6),
    ("tanh", np.tanh, 1e-6),
    ("erf", _erf, 3e-7),
    ("gelu", lambda x: 0.5 * x * (1.0 + _erf(x / math.sqrt(2.0))), 1e-6),
])
def test_activations(xb, name, ref, atol):
    x64 = X.astype(np.float64)
    _close(getattr(F, name)(xp.asarray(X)), ref(x64), atol=atol)


def test_gelu_tanh_form(xb):
    x = X.astype(np.float64)
    want = 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))
    _close(F.gelu(xp.asarray(X), approximate="tanh"), want)
    with pytest.raises(InvalidArgumentError):
        F.gelu(xp.asarray(X), approximate="erf")


def _np_log_softmax(x, axis):
    s = x - x.max(axis=axis, keepdims=True)
    return s - np.log(np.exp(s).sum(axis=axis, keepdims=True))


@pytest.mark.parametrize("axis", [-1, 0])
def test_softmax_and_log_softmax_are_stable(xb, axis):
    x = (RNG.standard_normal((5, 7)) * 4).astype(np.float32)
    x[0, 0], x[1, :] = 80.0, -90.0  # exp would overflow / underflow without the shift
    _close(F.log_softmax(xp.asarray(x), axis=axis), _np_log_softmax(x.astype(np.float64), axis), atol=2e-5)
    _close(F.softmax(xp.asarray(x), axis=axis), np.exp(_np_log_softmax(x.astype(np.float64), axis)))
    assert np.isfinite(np.asarray(F.log_softmax(xp.asarray(x), axis=axis))).all()


def _np_ce(logits, labels, eps, reduction):
    lp = _np_log_softmax(logits.astype(np.float64), 1)
    c = logits.shape[1]
    t = np.full(lp.shape, eps / c)
    t[np.arange(len(labels)), labels] += 1.0 - eps
    loss = -(t * lp).sum(1)
    return {"mean": loss.mean(), "sum": loss.sum(), "none": loss}[reduction]


@pytest.mark.parametrize("eps, reduction", [(0.0, "mean"), (0.1, "mean"), (0.2, "sum"), (0.0, "none")])
def test_cross_entropy(xb, eps, reduction):
    logits = (RNG.standard_normal((6, 5)) * 3).astype(np.float32)
    labels = np.array([0, 4, 2, 2, 1, 3], dtype=np.int32)
    got = F.cross_entropy(xp.asarray(logits), xp.asarray(labels), label_smoothing=eps, reduction=reduction)
    _close(got, _np_ce(logits, labels, eps, reduction), atol=1e-5)


def test_nll_and_mse(xb):
    lp = _np_log_softmax(RNG.standard_normal((4, 3)), 1).astype(np.float32)
    labels = np.array([2, 0, 1, 1], dtype=np.int32)
    want = -lp.astype(np.float64)[np.arange(4), labels]
    _close(F.nll_loss(xp.asarray(lp), xp.asarray(labels)), want.mean())
    _close(F.nll_loss(xp.asarray(lp), xp.asarray(labels), reduction="none"), want)
    a, b = RNG.standard_normal((3, 4)).astype(np.float32), RNG.standard_normal((3, 4)).astype(np.float32)
    d = a.astype(np.float64) - b
    _close(F.mse_loss(xp.asarray(a), xp.asarray(b)), (d * d).mean())
    _close(F.mse_loss(xp.asarray(a), xp.asarray(b), reduction="sum"), (d * d).sum(), rtol=2e-5)


def test_bad_arguments_raise_typed_errors(ref_backend):
    logits = xp.zeros((2, 3), device=ref_backend)
    with pytest.raises(ArgumentTypeError):
        F.relu(np.zeros(3, dtype=np.float32))
    with pytest.raises(ArgumentTypeError):
        F.relu(xp.asarray([1, 2], device=ref_backend))            # integers
    with pytest.raises(ArgumentTypeError):
        F.cross_entropy(logits, xp.asarray([0.0, 1.0], device=ref_backend))  # float labels
    with pytest.raises(InvalidArgumentError):
        F.cross_entropy(logits, xp.asarray([0, 1, 2], device=ref_backend))   # one label too many
    with pytest.raises(InvalidArgumentError):
        F.cross_entropy(logits, xp.asarray([0, 1], device=ref_backend), label_smoothing=1.5)
    with pytest.raises(InvalidArgumentError):
        F.mse_loss(logits, logits, reduction="avg")
    with pytest.raises(InvalidArgumentError):
        F.softmax(logits, axis=2)
    with pytest.raises(InvalidArgumentError):
        F.mse_loss(logits, xp.zeros((3, 2), device=ref_backend))
