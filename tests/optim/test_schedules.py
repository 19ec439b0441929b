"""Learning-rate schedules against their closed forms, and clip_grad_norm against numpy (both backends)."""

from __future__ import annotations

import math

import numpy as np
import pytest

import vyre.array as xp
import vyre.nn as nn
import vyre.optim as optim
from vyre.errors import ArgumentTypeError, InvalidArgumentError


def _opt(lr, backend):
    return optim.SGD([nn.Parameter(xp.zeros((1,), device=backend))], lr=lr)


def test_step_lr(ref_backend):
    opt = _opt(0.5, ref_backend)
    sched = optim.StepLR(opt, step_size=3, gamma=0.1)
    seen = [opt.lr] + [sched.step() for _ in range(9)]
    np.testing.assert_allclose(seen, [0.5 * 0.1 ** (t // 3) for t in range(10)], rtol=1e-12)
    assert opt.lr == seen[-1]


def test_warmup_cosine(ref_backend):
    opt = _opt(1.0, ref_backend)
    sched = optim.WarmupCosine(opt, warmup_steps=4, total_steps=12, min_lr=0.1)
    seen = [opt.lr] + [sched.step() for _ in range(14)]
    want = [t / 4 if t < 4 else 0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * min(1.0, (t - 4) / 8))) for t in range(15)]
    np.testing.assert_allclose(seen, want, rtol=1e-12, atol=1e-15)
    assert seen[4] == 1.0 and seen[12] == pytest.approx(0.1) and seen[14] == pytest.approx(0.1)
    no_warmup = optim.WarmupCosine(_opt(2.0, ref_backend), warmup_steps=0, total_steps=2)
    assert no_warmup.lr_at(0) == 2.0 and no_warmup.lr_at(1) == pytest.approx(1.0) and no_warmup.lr_at(2) == 0.0


def test_schedule_errors(ref_backend):
    with pytest.raises(InvalidArgumentError):
        optim.StepLR(_opt(0.1, ref_backend), step_size=0)
    with pytest.raises(InvalidArgumentError):
        optim.WarmupCosine(_opt(0.1, ref_backend), warmup_steps=5, total_steps=5)
    with pytest.raises(ArgumentTypeError):
        optim.StepLR("adam", step_size=2)  # type: ignore[arg-type]


@pytest.mark.parametrize("max_norm", [0.5, 100.0])
def test_clip_grad_norm(xb, max_norm):
    rng = np.random.default_rng(2)
    gs = [rng.standard_normal((3, 4)).astype(np.float32), rng.standard_normal(5).astype(np.float32)]
    norm64 = math.sqrt(sum(float((g.astype(np.float64) ** 2).sum()) for g in gs))
    coef = min(1.0, max_norm / (norm64 + 1e-6))
    clipped, norm = optim.clip_grad_norm([xp.asarray(g) for g in gs], max_norm)
    assert norm.shape == () and float(norm) == pytest.approx(norm64, rel=1e-6)
    for c, g in zip(clipped, gs, strict=True):
        np.testing.assert_allclose(np.asarray(c), g * coef, rtol=2e-6, atol=1e-7)
    as_dict, _ = optim.clip_grad_norm({"a": xp.asarray(gs[0]), "b": None}, max_norm)
    assert as_dict["b"] is None and as_dict["a"].shape == (3, 4)
    with pytest.raises(InvalidArgumentError):
        optim.clip_grad_norm([xp.asarray(gs[0])], 0.0)
    with pytest.raises(ArgumentTypeError):
        optim.clip_grad_norm(xp.asarray(gs[0]), 1.0)
