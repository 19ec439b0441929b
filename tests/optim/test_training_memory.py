"""A training loop (a module, value_and_grad through functional_call, clip_grad_norm, AdamW, a schedule)
holds the device's resident memory steady: replaced parameter values and optimizer state are freed."""

from __future__ import annotations

import gc

import numpy as np

import vyre.array as xp
import vyre.nn as nn
import vyre.nn.functional as F
import vyre.optim as optim
import vyre.random as vr
from vyre.autograd import value_and_grad


def test_training_loop_holds_resident_memory(gpu):
    rng = np.random.default_rng(0)
    with xp.use(gpu):
        model = nn.Sequential(nn.Linear(6, 8, key=vr.key(0)), nn.SiLU(), nn.LayerNorm(8),
                              nn.Linear(8, 3, key=vr.key(1)))
        x = xp.asarray(rng.standard_normal((16, 6)).astype(np.float32))
        y = xp.asarray(rng.integers(0, 3, 16).astype(np.int32))
        opt = optim.AdamW(model, lr=0.01)
        sched = optim.WarmupCosine(opt, warmup_steps=5, total_steps=100)
        step = value_and_grad(lambda v: F.cross_entropy(nn.functional_call(model, v, x), y, label_smoothing=0.05))

        def train(n):
            loss = None
            for _ in range(n):
                loss, grads = step(model.parameter_values())
                grads, _ = optim.clip_grad_norm(grads, 1.0)
                opt.step(grads)
                sched.step()
            return float(loss)

        first = train(10)                      # programs built, pools warm
        gc.collect()
        before = gpu.stats()["resident"]
        last = train(60)
        gc.collect()
        after = gpu.stats()["resident"]
    assert last < first
    assert after["handles"] == before["handles"], (before, after)
    assert after["bytes"] == before["bytes"], (before, after)
