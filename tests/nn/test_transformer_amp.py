"""The GPT of test_transformer.py trained in mixed precision (``vyre.amp.autocast``: its linears and
attention in float16 with float32 sums, norms, softmax and the loss in float32; a ``GradScaler``) against
the same training in float32: same weights, same batches, one ``vyre.compile`` step each. Tolerance: the
held-out losses within 2% (float16 rounding of the products, 11 bits)."""

from __future__ import annotations

import numpy as np
from test_transformer import BATCH, CONTEXT, SMALL, WD, batch, corpus, trainer

import vyre
import vyre.array as xp
import vyre.nn as nn
import vyre.optim as optim
import vyre.random as vr
from vyre import amp
from vyre.autograd import value_and_grad


def _train(vocab, batches, hx, hy, mixed):
    """(held-out loss before, after, the scaler or None): 20 compiled AdamW steps from key 0."""
    model = nn.GPT(len(vocab), CONTEXT, **SMALL, key=vr.key(0))
    evaluate = vyre.compile(lambda values, x, y: nn.lm_loss(nn.functional_call(model, values, x), y))
    before = float(evaluate(model.parameter_values(), hx, hy))
    scaler = None
    if mixed:
        opt = optim.AdamW(model, lr=1e-2, weight_decay=WD)
        scaler = amp.GradScaler()

        def scaled(values, x, y):
            with amp.autocast():
                loss = nn.lm_loss(nn.functional_call(model, values, x), y)
            return scaler.scale(loss), loss

        grad = value_and_grad(scaled, has_aux=True)

        @vyre.compile
        def step(x, y):
            (_, loss), g = grad(model.parameter_values(), x, y)
            scaler.step(opt, g)        # unscaled, and skipped on the device on an inf/NaN
            scaler.update()
            return loss
    else:
        _, step = trainer(model, 1e-2)
    for x, y in batches:
        step(x, y)
    assert (step.traces, step.replays) == (1, len(batches) - 1)
    return before, float(evaluate(model.parameter_values(), hx, hy)), scaler


def test_mixed_precision_training_tracks_float32(gpu):
    """20 compiled AdamW steps (batch 8, context 32, d 32) in float32 and under vyre.amp.autocast with a
    GradScaler, from the same weights on the same batches: both lower the held-out loss, and they end
    within 2% of each other."""
    train, held, vocab = corpus()
    rng = np.random.default_rng(0)
    with xp.use(gpu):
        batches = [tuple(xp.asarray(a) for a in batch(train, rng, BATCH, CONTEXT)) for _ in range(20)]
        hx, hy = (xp.asarray(a) for a in batch(held, np.random.default_rng(99), 32, CONTEXT))
        before, f32, _ = _train(vocab, batches, hx, hy, mixed=False)
        _, mixed, scaler = _train(vocab, batches, hx, hy, mixed=True)
        assert scaler.get_scale() == 65536.0      # no overflow in these steps: none skipped
    print(f"held-out loss {before:.4f} -> float32 {f32:.5f}, mixed precision {mixed:.5f} after 20 steps")
    assert f32 < before - 0.5 and mixed < before - 0.5, (before, f32, mixed)
    assert abs(mixed - f32) <= 0.02 * f32, (f32, mixed)
