"""The GPT of test_transformer.py at the issue's size (d_model 128, 4 heads, 2 layers, context 128, GELU,
untied head) trained by vyre (one ``vyre.compile`` step per batch) and by torch from the same initial
weights (copied), on the same batches in the same order (a seeded numpy Generator over the help-topics
corpus), with the same AdamW (vyre.optim.AdamW inside the compiled step against torch.optim.AdamW; lr 3e-3,
betas (0.9, 0.999), eps 1e-8, weight decay 0.01 on every parameter):
after 200 steps at batch 32 the mean loss of the last 10 steps and the held-out loss agree within 2%, and
the first step's loss (same weights, same batch) within 1e-4. Needs torch (the GPU machine): skipped where it
is not importable. ``VYRE_TRANSFORMER_STEPS`` changes the step count."""

from __future__ import annotations

import math
import os
import time

import numpy as np
import pytest
from test_transformer import batch, corpus, trainer

import vyre.array as xp
import vyre.nn as nn
import vyre.random as vr

torch = pytest.importorskip("torch")

STEPS = int(os.environ.get("VYRE_TRANSFORMER_STEPS", "200"))
BATCH, CONTEXT, D, HEADS, LAYERS, LR = 32, 128, 128, 4, 2, 3e-3


class TorchLayer(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.ln1 = torch.nn.LayerNorm(D)
        self.attn = torch.nn.MultiheadAttention(D, HEADS, batch_first=True)
        self.ln2 = torch.nn.LayerNorm(D)
        self.fc1 = torch.nn.Linear(D, 4 * D)
        self.fc2 = torch.nn.Linear(4 * D, D)

    def forward(self, x, mask):
        h = self.ln1(x)
        x = x + self.attn(h, h, h, attn_mask=mask, need_weights=False)[0]
        return x + self.fc2(torch.nn.functional.gelu(self.fc1(self.ln2(x))))


class TorchGPT(torch.nn.Module):
    def __init__(self, vocab):
        super().__init__()
        self.tok_emb = torch.nn.Parameter(torch.zeros(vocab, D))
        self.pos_emb = torch.nn.Parameter(torch.zeros(CONTEXT, D))
        for i in range(LAYERS):
            setattr(self, f"h{i}", TorchLayer())
        self.ln_f = torch.nn.LayerNorm(D)
        self.head = torch.nn.Linear(D, vocab)

    def forward(self, ids):
        length = ids.shape[1]
        mask = torch.ones(length, length, dtype=torch.bool, device=ids.device).triu(1)  # True: not allowed
        x = self.tok_emb[ids] + self.pos_emb[:length]
        for i in range(LAYERS):
            x = getattr(self, f"h{i}")(x, mask)
        return self.head(self.ln_f(x))


def _data():
    train, held, vocab = corpus()
    rng = np.random.default_rng(2026)
    batches = [batch(train, rng, BATCH, CONTEXT) for _ in range(STEPS)]
    return batches, batch(held, np.random.default_rng(7), 64, CONTEXT), vocab


def _vyre_run(gpu, batches, held, vocab):
    with xp.use(gpu):
        model = nn.GPT(len(vocab), CONTEXT, D, HEADS, LAYERS, key=vr.key(0))
        init = {k: np.asarray(a) for k, a in model.parameter_values().items()}
        _, step = trainer(model, LR)
        start = time.perf_counter()
        losses = [step(xp.asarray(x), xp.asarray(y)) for x, y in batches]
        curve = [float(loss) for loss in losses]   # read after the loop: the steps do not wait for the host
        elapsed = time.perf_counter() - start
        assert (step.traces, step.replays) == (1, STEPS - 1)
        hx, hy = (xp.asarray(a) for a in held)
        held_loss = float(nn.lm_loss(model(hx), hy))
    return init, curve, held_loss, elapsed


def _torch_run(init, batches, held, vocab):
    dev = "cuda" if torch.cuda.is_available() else "cpu"
    torch.backends.cuda.matmul.allow_tf32 = False   # float32 matmuls, as vyre's
    net = TorchGPT(len(vocab)).to(dev)
    params = dict(net.named_parameters())
    assert sorted(params) == sorted(init)           # the same names: h0.attn.in_proj_weight, ...
    with torch.no_grad():
        for k, a in init.items():
            params[k].copy_(torch.tensor(a))
    opt = torch.optim.AdamW(net.parameters(), lr=LR, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01)
    data = [tuple(torch.tensor(a, device=dev, dtype=torch.long) for a in b) for b in batches]
    start = time.perf_counter()
    losses = []
    for x, y in data:
        loss = torch.nn.functional.cross_entropy(net(x).reshape(-1, len(vocab)), y.reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.detach())
    curve = [float(loss) for loss in losses]
    elapsed = time.perf_counter() - start
    with torch.no_grad():
        hx, hy = (torch.tensor(a, device=dev, dtype=torch.long) for a in held)
        held_loss = float(torch.nn.functional.cross_entropy(net(hx).reshape(-1, len(vocab)), hy.reshape(-1)))
    return curve, held_loss, elapsed


def test_vyre_trains_the_transformer_like_torch(gpu):
    batches, held, vocab = _data()
    init, vcurve, vheld, vtime = _vyre_run(gpu, batches, held, vocab)
    tcurve, theld, ttime = _torch_run(init, batches, held, vocab)
    vlast, tlast = float(np.mean(vcurve[-10:])), float(np.mean(tcurve[-10:]))
    print(f"GPT {STEPS} steps: vyre {vtime:.1f} s, torch {ttime:.1f} s; first loss vyre {vcurve[0]:.5f}, torch "
          f"{tcurve[0]:.5f}; last-10 mean vyre {vlast:.4f}, torch {tlast:.4f}; held out vyre {vheld:.4f}, "
          f"torch {theld:.4f}")
    assert abs(vcurve[0] - math.log(len(vocab))) < 0.5
    np.testing.assert_allclose(vcurve[0], tcurve[0], rtol=1e-4)   # same weights and batch: the same loss
    assert abs(vlast - tlast) <= 0.02 * tlast, (vlast, tlast)
    assert abs(vheld - theld) <= 0.02 * theld, (vheld, theld)
    assert vlast < vcurve[0] - 1.0                                 # it learned something
