"""The GPT of test_transformer.py trained in mixed precision (``vyre.amp.autocast``: its linears and
attention in float16 with float32 sums, norms, softmax and the loss in float32; a ``GradScaler``) against
the same training in float32: same weights, same batches, one ``vyre.compile`` step each. Tolerance: the
held-out losses within 2% (float16 rounding of the products, 11 bits)."""

from __future__ import annotations

import numpy as np
from test_transformer import B1, B2, BATCH, CONTEXT, EPS, SMALL, WD, adamw_step, batch, corpus, hp, zeros_like

import vyre
import vyre.array as xp
import vyre.nn as nn
import vyre.random as vr
from vyre import amp
from vyre.autograd import value_and_grad


def test_mixed_precision_training_tracks_float32(gpu):
    """20 compiled steps (batch 8, context 32, d 32) in float32 and under vyre.amp.autocast with a
    GradScaler (its state an argument of the compiled step, a skipped step a where), from the same weights
    on the same batches: both lower the held-out loss, and they end within 2% of each other."""
    train, held, vocab = corpus()
    with xp.use(gpu):
        model = nn.GPT(len(vocab), CONTEXT, **SMALL, key=vr.key(0))
        init = {k: np.asarray(a) for k, a in model.parameter_values().items()}
        rng = np.random.default_rng(0)
        batches = [tuple(xp.asarray(a) for a in batch(train, rng, BATCH, CONTEXT)) for _ in range(20)]
        hx, hy = (xp.asarray(a) for a in batch(held, np.random.default_rng(99), 32, CONTEXT))
        evaluate = vyre.compile(lambda values, x, y: nn.lm_loss(nn.functional_call(model, values, x), y))
        scaler = amp.GradScaler()

        def scaled(values, x, y):
            with amp.autocast():
                loss = nn.lm_loss(nn.functional_call(model, values, x), y)
            return scaler.scale(loss), loss

        grad = value_and_grad(scaled, has_aux=True)

        @vyre.compile
        def amp_step(values, m, v, x, y, h, state):
            (_, loss), g = grad(values, x, y)
            g = scaler.unscale_(g)
            skip = scaler.found_inf()
            m2 = {k: B1 * m[k] + (1.0 - B1) * g[k] for k in values}
            v2 = {k: B2 * v[k] + (1.0 - B2) * (g[k] * g[k]) for k in values}
            new = {k: values[k] * (1.0 - h[0] * WD) - h[1] * m2[k] / (xp.sqrt(v2[k]) * h[2] + EPS) for k in values}
            scaler.update()
            return ({k: xp.where(skip, values[k], new[k]) for k in values}, {k: xp.where(skip, m[k], m2[k]) for k in m},
                    {k: xp.where(skip, v[k], v2[k]) for k in v}, loss)

        before = float(evaluate({k: xp.asarray(a) for k, a in init.items()}, hx, hy))
        after = []
        for fn, extra in ((vyre.compile(adamw_step(model)), ()), (amp_step, (scaler.arrays,))):
            values = {k: xp.asarray(a) for k, a in init.items()}
            m, v = zeros_like(values), zeros_like(values)
            for t, (x, y) in enumerate(batches, 1):
                values, m, v, loss = fn(values, m, v, x, y, xp.asarray(hp(t, 1e-2)), *extra)
            after.append(float(evaluate(values, hx, hy)))
        assert (amp_step.traces, amp_step.replays, evaluate.traces) == (1, 19, 1)
    f32, mixed = after
    print(f"held-out loss {before:.4f} -> float32 {f32:.5f}, mixed precision {mixed:.5f} after 20 steps")
    assert f32 < before - 0.5 and mixed < before - 0.5, (before, f32, mixed)
    assert abs(mixed - f32) <= 0.02 * f32, (f32, mixed)
