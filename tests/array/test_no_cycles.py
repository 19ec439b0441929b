"""Evaluating arrays leaves no reference cycles: an array's buffer goes back to the backend when the last
reference goes, not when the garbage collector next runs (a loop would otherwise keep many results on the
device, and every collection would cost the loop time)."""

from __future__ import annotations

import gc

import numpy as np

import vyre.array as xp


def _work(x, y):
    z = (x * 1.5 + y) * (y - 0.25) / (x + 2)
    np.asarray(z)
    float((x * y).sum())
    np.asarray(xp.cumulative_sum(z))
    np.asarray(xp.sort(z - x))
    w = (z * 2)[1:5]
    np.asarray(w)
    x2 = xp.asarray(x)
    x2 += 1
    np.asarray(x2)


def test_evaluations_make_no_cyclic_garbage(xb):
    rng = np.random.default_rng(0)
    with xp.use(xb):
        x = xp.asarray(rng.random(300, dtype=np.float32))
        y = xp.asarray(rng.random(300, dtype=np.float32))
        _work(x, y)  # first use: programs built and cached
        while gc.collect():  # earlier tests' garbage: collecting it can free more (finalizers drop backends)
            pass
        gc.disable()
        try:
            for _ in range(3):
                _work(x, y)
            found = gc.collect()
        finally:
            gc.enable()
    assert found == 0, f"{found} objects were only freed by the garbage collector"
