"""The digits CNN of test_digits_cnn.py trained by vyre and by torch from the same initial weights, in the
same data order, with the same Adam and cosine schedule: the same held-out accuracy (within 1 point) and loss
curves that stay close. Needs torch (the GPU machine); skipped where it is not importable."""

from __future__ import annotations

import math

import numpy as np
import pytest
from test_digits_cnn import BATCH, EPOCHS, LR, _data, _hp, _model, _step

import vyre.array as xp
import vyre.nn as nn

torch = pytest.importorskip("torch")


def _vyre_run(gpu, xtr, ytr, xte, steps):
    with xp.use(gpu):
        batches = [(xp.asarray(xtr[j:j + BATCH]), xp.asarray(ytr[j:j + BATCH])) for j in range(0, len(ytr), BATCH)]
        model = _model()
        init = {k: np.asarray(a) for k, a in model.parameter_values().items()}
        step = _step(model)
        values = model.parameter_values()
        m = {k: xp.zeros_like(a) for k, a in values.items()}
        v = {k: xp.zeros_like(a) for k, a in values.items()}
        losses = []
        for i in range(steps):
            lr = LR * 0.5 * (1.0 + math.cos(math.pi * i / steps))
            x, y = batches[i % len(batches)]
            values, m, v, loss = step(values, m, v, x, y, xp.asarray(_hp(i + 1, lr)))
            losses.append(loss)
        curve = [float(loss) for loss in losses]
        pred = np.asarray(xp.argmax(nn.functional_call(model, values, xp.asarray(xte)), axis=1))
    return init, curve, pred


def _torch_run(init, xtr, ytr, xte, steps):
    dev = "cuda" if torch.cuda.is_available() else "cpu"
    net = torch.nn.Sequential(torch.nn.Conv2d(1, 16, 3), torch.nn.ReLU(), torch.nn.MaxPool2d(2), torch.nn.Flatten(),
                              torch.nn.Linear(256, 10)).to(dev)
    names = dict(zip(sorted(init), sorted(dict(net.named_parameters()))))  # 0.weight/0.bias, 4.weight/4.bias
    with torch.no_grad():
        for vk, tk in names.items():
            dict(net.named_parameters())[tk].copy_(torch.tensor(init[vk]))
    opt = torch.optim.Adam(net.parameters(), lr=LR)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda i: 0.5 * (1.0 + math.cos(math.pi * i / steps)))
    xs, ys = torch.tensor(xtr, device=dev), torch.tensor(ytr, device=dev, dtype=torch.long)
    curve = []
    for i in range(steps):
        j = (i % (len(ytr) // BATCH)) * BATCH
        loss = torch.nn.functional.cross_entropy(net(xs[j:j + BATCH]), ys[j:j + BATCH])
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
        curve.append(float(loss))
    with torch.no_grad():
        pred = net(torch.tensor(xte, device=dev)).argmax(1).cpu().numpy()
    return curve, pred


def test_vyre_trains_like_torch(gpu):
    xtr, ytr, xte, yte = _data()
    steps = EPOCHS * (len(ytr) // BATCH)
    init, vcurve, vpred = _vyre_run(gpu, xtr, ytr, xte, steps)
    assert sorted(init) == ["0.bias", "0.weight", "4.bias", "4.weight"]
    tcurve, tpred = _torch_run(init, xtr, ytr, xte, steps)
    vacc, tacc = float((vpred == yte).mean()), float((tpred == yte).mean())
    print(f"digits CNN held out: vyre {vacc:.4f}, torch {tacc:.4f}; first losses vyre {vcurve[:3]}, "
          f"torch {tcurve[:3]}; last epoch mean vyre {np.mean(vcurve[-14:]):.4f}, torch {np.mean(tcurve[-14:]):.4f}")
    np.testing.assert_allclose(vcurve[:5], tcurve[:5], rtol=1e-3)  # same weights, data, optimizer: same start
    assert abs(vacc - tacc) <= 0.01 and vacc >= 0.97
    assert abs(float(np.mean(vcurve[-14:])) - float(np.mean(tcurve[-14:]))) < 0.02
