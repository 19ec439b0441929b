"""Central finite differences of float64 numpy functions, against vyre's gradients (float32).

``check(be, f_vyre, f_np, inputs, rtol, atol)``: ``inputs`` float32 numpy arrays; the loss is
``sum(f(*inputs) * w)`` with a fixed random weight ``w`` of the output's shape (so every output element
counts differently: a vector-Jacobian product, not only the sum); vyre's gradient of every input (through a
GradientTape) is compared with the central difference of the float64 numpy loss, step ``h`` relative to
each element's magnitude.
"""

from __future__ import annotations

import numpy as np

import vyre.array as xp
import vyre.autograd as ag


def numeric_grad(f_np, inputs, w, h=1e-6):
    xs = [np.asarray(x, dtype=np.float64) for x in inputs]
    grads = []
    for i, x in enumerate(xs):
        g = np.zeros_like(x)
        for j in np.ndindex(x.shape):
            step = h * max(1.0, abs(x[j]))
            hi = [a.copy() for a in xs]
            lo = [a.copy() for a in xs]
            hi[i][j] += step
            lo[i][j] -= step
            g[j] = (np.sum(f_np(*hi) * w) - np.sum(f_np(*lo) * w)) / (2 * step)
        grads.append(g)
    return grads


def vyre_grad(be, f_vyre, inputs, w):
    with xp.use(be):
        xs = [xp.asarray(np.asarray(x, dtype=np.float32)) for x in inputs]
        with ag.GradientTape() as tape:
            out = f_vyre(*xs)
            loss = xp.sum(out * xp.asarray(w.astype(np.float32)))
        got = tape.gradient(loss, xs)
        return [np.asarray(g) for g in got], np.asarray(out)


def check(be, f_vyre, f_np, inputs, rtol=1e-3, atol=1e-4, seed=0):
    inputs = [np.asarray(x, dtype=np.float32) for x in inputs]
    want_out = f_np(*[x.astype(np.float64) for x in inputs])
    w = np.random.default_rng(seed).uniform(0.5, 1.5, np.shape(want_out))
    got, out = vyre_grad(be, f_vyre, inputs, w)
    assert out.shape == np.shape(want_out)
    want = numeric_grad(f_np, inputs, w)
    for i, (a, b) in enumerate(zip(got, want, strict=True)):
        assert a.shape == b.shape, f"input {i}: gradient shape {a.shape}, want {b.shape}"
        np.testing.assert_allclose(a, b, rtol=rtol, atol=atol, err_msg=f"gradient of input {i}")
