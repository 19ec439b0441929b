"""vyre.compile composes with vyre.autograd: a compiled gradient step (value_and_grad inside) replays
bit-identically to the same step run eagerly, on both backends."""

from __future__ import annotations

import numpy as np

import vyre
import vyre.array as xp
from vyre.autograd import value_and_grad


def test_a_compiled_gradient_step_matches_eager(xb):
    def loss(w, x, y):
        return xp.mean((xp.tanh(x @ w) - y) ** 2)

    vg = value_and_grad(loss)

    @vyre.compile
    def step(w, x, y):
        value, g = vg(w, x, y)
        return w - 0.1 * g, value

    rng = np.random.default_rng(3)
    w = we = xp.asarray(rng.standard_normal((4, 3)).astype(np.float32))
    for _ in range(4):
        x = xp.asarray(rng.standard_normal((8, 4)).astype(np.float32))
        y = xp.asarray(rng.standard_normal((8, 3)).astype(np.float32))
        w, value = step(w, x, y)
        ve, ge = vg(we, x, y)
        we = we - 0.1 * ge
        np.testing.assert_array_equal(np.asarray(w), np.asarray(we))
        np.testing.assert_array_equal(np.asarray(value), np.asarray(ve))
    assert (step.traces, step.replays) == (1, 3)
