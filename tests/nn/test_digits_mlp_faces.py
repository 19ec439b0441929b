"""The issue's second model check: an MLP (64-64-10, ReLU) on scikit-learn's digits trained twice from the
same weights, data and optimizer, once through ``GradientTape`` (the model called under the tape, the
gradient of its parameter arrays) and once through ``value_and_grad`` over ``nn.functional_call``: the two
loss curves and final weights agree to float32 rounding (they are one mechanism, so in practice they are
bit-identical; the assertion allows a few float32 ulps). On the GPU backend (lavapipe in CI) and on the
reference interpreter (100 images and 10 steps there: it interprets every kernel)."""

from __future__ import annotations

import numpy as np
from extras import require

import vyre.array as xp
import vyre.nn as nn
import vyre.nn.functional as F
import vyre.optim as optim
import vyre.random as vr
from vyre.autograd import GradientTape, value_and_grad

datasets = require("sklearn.datasets", "the digits data set ships with scikit-learn")



def _data(n: int) -> tuple[np.ndarray, np.ndarray]:
    d = datasets.load_digits()
    order = np.random.default_rng(5).permutation(len(d.target))[:n]
    return (d.data[order] / 16.0).astype(np.float32), d.target[order].astype(np.int32)


def _model() -> nn.Module:
    k1, k2 = (vr.split(vr.key(3))[i] for i in range(2))
    return nn.Sequential(nn.Linear(64, 64, key=k1), nn.ReLU(), nn.Linear(64, 10, key=k2))


def _with_tape(x, y, steps):
    model = _model()
    opt = optim.Adam(model, lr=0.02)
    params = list(model.parameters())
    losses = []
    for _ in range(steps):
        with GradientTape() as tape:
            loss = F.cross_entropy(model(x), y)
        opt.step(tape.gradient(loss, [p.value for p in params]))
        losses.append(float(loss))
    return np.array(losses, np.float32), {k: np.asarray(v) for k, v in model.parameter_values().items()}


def _with_transform(x, y, steps):
    model = _model()
    opt = optim.Adam(model, lr=0.02)
    step = value_and_grad(lambda values: F.cross_entropy(nn.functional_call(model, values, x), y))
    losses = []
    for _ in range(steps):
        loss, grads = step(model.parameter_values())
        opt.step(grads)
        losses.append(float(loss))
    return np.array(losses, np.float32), {k: np.asarray(v) for k, v in model.parameter_values().items()}


def test_tape_and_value_and_grad_train_alike(xb):
    n, steps = (1400, 25) if xb.name != "reference" else (100, 10)  # the interpreter: a smaller run
    xs, ys = _data(n)
    x, y = xp.asarray(xs), xp.asarray(ys)
    tape_losses, tape_w = _with_tape(x, y, steps)
    fn_losses, fn_w = _with_transform(x, y, steps)
    print(f"digits MLP, {n} images: loss {tape_losses[0]:.4f} -> {tape_losses[-1]:.4f} (tape), "
          f"{fn_losses[0]:.4f} -> {fn_losses[-1]:.4f} (value_and_grad); "
          f"bit-identical: {np.array_equal(tape_losses, fn_losses)}")
    assert tape_losses[-1] < tape_losses[0] / 3  # it trains
    np.testing.assert_allclose(fn_losses, tape_losses, rtol=4 * 2.0 ** -23, atol=0)
    assert tape_w.keys() == fn_w.keys()
    for k in tape_w:
        np.testing.assert_allclose(fn_w[k], tape_w[k], rtol=0, atol=1e-6, err_msg=k)
