"""A real model, trained: an MLP (64-64-10, ReLU) on scikit-learn's digits (1,797 8x8 images) with
vyre.autograd.value_and_grad through nn.functional_call, cross-entropy and Adam, to >= 90% held-out
accuracy on the GPU backend (lavapipe in CI; a few seconds)."""

from __future__ import annotations

import time

import numpy as np
from extras import require

import vyre.array as xp
import vyre.nn as nn
import vyre.nn.functional as F
import vyre.optim as optim
import vyre.random as vr
from vyre.autograd import value_and_grad

datasets = require("sklearn.datasets", "the digits data set ships with scikit-learn")


def _data():
    d = datasets.load_digits()
    x, y = (d.data / 16.0).astype(np.float32), d.target.astype(np.int32)
    order = np.random.default_rng(0).permutation(len(y))
    train, test = order[:1400], order[1400:]
    return x[train], y[train], x[test], y[test]


def test_mlp_learns_digits(gpu):
    xtr, ytr, xte, yte = _data()
    start = time.perf_counter()
    with xp.use(gpu):
        k1, k2 = (vr.split(vr.key(0))[i] for i in range(2))
        model = nn.Sequential(nn.Linear(64, 64, key=k1), nn.ReLU(), nn.Linear(64, 10, key=k2))
        opt = optim.Adam(model, lr=0.02)
        x, y = xp.asarray(xtr), xp.asarray(ytr)

        def loss_fn(values):
            return F.cross_entropy(nn.functional_call(model, values, x), y)

        step = value_and_grad(loss_fn)
        losses = []
        for _ in range(30):                      # full-batch steps (96.7% here; 97.2% after 40)
            loss, grads = step(model.parameter_values())
            opt.step(grads)
            losses.append(loss)
        first, last = float(losses[0]), float(losses[-1])
        pred = np.asarray(xp.argmax(model(xp.asarray(xte)), axis=1))
    elapsed = time.perf_counter() - start
    accuracy = float((pred == yte).mean())
    print(f"digits MLP: loss {first:.3f} -> {last:.3f}, held-out accuracy {accuracy:.3f}, {elapsed:.1f} s")
    assert last < first / 5
    assert accuracy >= 0.90
