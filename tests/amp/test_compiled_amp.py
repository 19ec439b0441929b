"""A training step with autocast and a GradScaler inside ``vyre.compile``: traced once, replayed, and equal
bit for bit to the same step run eagerly (parameters, loss, and the scaler's scale and growth tracker after
every step), through steps whose float16 gradients overflow (skipped on the device, the scale backed off)
and steps that grow the scale. The scaler is closed over (its arrays are written in place, so a replay
updates them) or passed as an argument (``scaler.arrays``)."""

from __future__ import annotations

import numpy as np
import pytest

import vyre
import vyre.array as xp
import vyre.nn.functional as F
from vyre import amp

LR, MOMENTUM = 0.05, 0.9


def _make_step(scaler):
    def loss_fn(p, x, y):
        with amp.autocast():
            h = F.relu(F.linear(x, p["w1"], p["b1"]))
            loss = F.cross_entropy(F.linear(h, p["w2"], p["b2"]), y)
        return scaler.scale(loss), loss

    grad = vyre.value_and_grad(loss_fn, has_aux=True)

    def step(p, buf, x, y, state=None):
        (_, loss), g = grad(p, x, y)
        g = scaler.unscale_(g)
        skip = scaler.found_inf()
        new_buf = {k: xp.where(skip, buf[k], MOMENTUM * buf[k] + g[k]) for k in p}
        new_p = {k: xp.where(skip, p[k], p[k] - LR * new_buf[k]) for k in p}
        scaler.update()
        return new_p, new_buf, loss

    return step


def _data(rng):
    xs = [rng.standard_normal((16, 32)).astype(np.float32) for _ in range(8)]
    xs[2] *= 3000.0  # float16 activations and gradients overflow: the step is skipped, the scale backs off
    xs[5] *= 3000.0
    ys = [rng.integers(0, 10, 16).astype(np.int32) for _ in range(8)]
    return xs, ys


@pytest.mark.parametrize("as_argument", [False, True], ids=["closed-over", "argument"])
def test_compiled_amp_step_equals_eager_bit_for_bit(xb, as_argument):
    rng = np.random.default_rng(0)
    init = {"w1": rng.standard_normal((64, 32)) * 0.2, "b1": np.zeros(64), "w2": rng.standard_normal((10, 64)) * 0.2,
            "b2": np.zeros(10)}
    xs, ys = _data(rng)
    with xp.use(xb):
        runs = {}
        for mode in ("compiled", "eager"):
            scaler = amp.GradScaler(init_scale=2.0 ** 12, growth_interval=2)
            fn = _make_step(scaler)
            step = vyre.compile(fn) if mode == "compiled" else fn
            p = {k: xp.asarray(v.astype(np.float32)) for k, v in init.items()}
            buf = {k: xp.zeros_like(v) for k, v in p.items()}
            record = []
            for x, y in zip(xs, ys):
                extra = (scaler.arrays,) if as_argument else ()
                p, buf, loss = step(p, buf, xp.asarray(x), xp.asarray(y), *extra)
                xp.evaluate([*p.values(), *buf.values(), loss])  # eager: evaluated together, as the trace does
                record.append(({k: np.asarray(v) for k, v in p.items()}, np.asarray(loss),
                               np.asarray(scaler.arrays["scale"]), int(scaler.arrays["growth_tracker"])))
            runs[mode] = record
            if mode == "compiled":
                assert (step.traces, step.replays) == (1, len(xs) - 1)
    scales = [float(r[2]) for r in runs["eager"]]
    # the scripted overflows were found (backed off) and growth happened in between
    assert scales[2] == scales[1] / 2 and scales[5] < scales[4] and max(scales) > 2.0 ** 12
    for k, (c, e) in enumerate(zip(runs["compiled"], runs["eager"], strict=True)):
        for name in init:
            assert c[0][name].tobytes() == e[0][name].tobytes(), (k, name)
        assert c[1].tobytes() == e[1].tobytes() and c[2].tobytes() == e[2].tobytes() and c[3] == e[3], k
    skipped = runs["eager"][2][0]
    assert all(np.array_equal(skipped[n], runs["eager"][1][0][n]) for n in init)  # a skipped step changes nothing


def test_compiled_step_with_vyre_optim_and_scaler_step_equals_eager(xb):
    """``scaler.step(optimizer, grads)`` inside vyre.compile: Adam's parameters and state (updated in place
    by the optimizer) and the scaler's, equal bit for bit to the eager run, overflowing steps skipped."""
    import vyre.nn as nn
    import vyre.optim as optim
    import vyre.random as vr

    rng = np.random.default_rng(1)
    xs, ys = _data(rng)
    with xp.use(xb):
        runs = {}
        for mode in ("compiled", "eager"):
            k1, k2 = (vr.split(vr.key(5))[i] for i in range(2))
            model = nn.Sequential(nn.Linear(32, 64, key=k1), nn.ReLU(), nn.Linear(64, 10, key=k2))
            opt = optim.Adam(model, lr=0.01)
            scaler = amp.GradScaler(init_scale=2.0 ** 12, growth_interval=2)

            def loss_fn(values, x, y, model=model, scaler=scaler):
                with amp.autocast():
                    loss = F.cross_entropy(nn.functional_call(model, values, x), y)
                return scaler.scale(loss), loss

            grad = vyre.value_and_grad(loss_fn, has_aux=True)

            def step(x, y, model=model, opt=opt, scaler=scaler, grad=grad):
                (_, loss), g = grad(model.parameter_values(), x, y)
                scaler.step(opt, g)
                scaler.update()
                return loss

            fn = vyre.compile(step) if mode == "compiled" else step
            record = []
            for x, y in zip(xs, ys):
                loss = fn(xp.asarray(x), xp.asarray(y))
                record.append(([np.asarray(p.value) for p in model.parameters()], np.asarray(loss),
                               scaler.get_scale()))
            runs[mode] = record
            if mode == "compiled":
                assert (fn.traces, fn.replays) == (1, len(xs) - 1)
    assert [r[2] for r in runs["eager"]][1:3] == [8192.0, 4096.0]  # grown, then backed off at the overflow
    assert all(np.array_equal(a, b) for a, b in zip(runs["eager"][2][0], runs["eager"][1][0]))  # skipped
    for k, (c, e) in enumerate(zip(runs["compiled"], runs["eager"], strict=True)):
        assert all(a.tobytes() == b.tobytes() for a, b in zip(c[0], e[0])), k
        assert c[1].tobytes() == e[1].tobytes() and c[2] == e[2], k
