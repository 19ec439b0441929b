"""SGD (plain, momentum with dampening, Nesterov, weight decay), Adam (with L2 decay) and AdamW, several
steps on given gradients, against float64 numpy implementations of PyTorch's documented update rules
(torch.optim's pseudocode). Tolerance: rtol 2e-5, atol 1e-6 (float32 state on vyre, five steps)."""

from __future__ import annotations

import math

import numpy as np
import pytest

import vyre.array as xp
import vyre.nn as nn
import vyre.optim as optim
import vyre.random as vr
from vyre.array._kernels.fused import storage_limit
from vyre.errors import ArgumentTypeError, InvalidArgumentError

RNG = np.random.default_rng(11)
SHAPES = [(3, 4), (5,)]
STEPS = 5


def _setup():
    p0 = [RNG.standard_normal(s).astype(np.float32) for s in SHAPES]
    grads = [[RNG.standard_normal(s).astype(np.float32) for s in SHAPES] for _ in range(STEPS)]
    return p0, grads


def _np_sgd(p, gs, lr, momentum=0.0, dampening=0.0, weight_decay=0.0, nesterov=False):
    p, buf = p.astype(np.float64), None
    for t, g in enumerate(gs):
        g = g.astype(np.float64) + weight_decay * p
        if momentum:
            buf = g.copy() if t == 0 else momentum * buf + (1 - dampening) * g
            g = g + momentum * buf if nesterov else buf
        p = p - lr * g
    return p


def _np_adam(p, gs, lr, b1, b2, eps, weight_decay=0.0, decoupled=False):
    p, m, v = p.astype(np.float64), 0.0, 0.0
    for t, g in enumerate(gs, start=1):
        g = g.astype(np.float64)
        if decoupled:
            p = p * (1 - lr * weight_decay)
        else:
            g = g + weight_decay * p
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        p = p - lr * (m / (1 - b1 ** t)) / (np.sqrt(v / (1 - b2 ** t)) + eps)
    return p


CASES = [
    ("sgd", lambda ps: optim.SGD(ps, lr=0.1), lambda p, g: _np_sgd(p, g, 0.1)),
    ("momentum", lambda ps: optim.SGD(ps, lr=0.05, momentum=0.9, dampening=0.1, weight_decay=0.01),
     lambda p, g: _np_sgd(p, g, 0.05, 0.9, 0.1, 0.01)),
    ("nesterov", lambda ps: optim.SGD(ps, lr=0.05, momentum=0.8, nesterov=True, weight_decay=0.1),
     lambda p, g: _np_sgd(p, g, 0.05, 0.8, 0.0, 0.1, True)),
    ("adam", lambda ps: optim.Adam(ps, lr=0.01, betas=(0.8, 0.99), eps=1e-6),
     lambda p, g: _np_adam(p, g, 0.01, 0.8, 0.99, 1e-6)),
    ("adam_l2", lambda ps: optim.Adam(ps, lr=0.01, weight_decay=0.1),
     lambda p, g: _np_adam(p, g, 0.01, 0.9, 0.999, 1e-8, 0.1)),
    ("adamw", lambda ps: optim.AdamW(ps, lr=0.02, weight_decay=0.5),
     lambda p, g: _np_adam(p, g, 0.02, 0.9, 0.999, 1e-8, 0.5, decoupled=True)),
]


@pytest.mark.parametrize("name, make, ref", CASES, ids=[c[0] for c in CASES])
def test_steps_match_pytorch_rules(xb, name, make, ref):
    p0, grads = _setup()
    params = [nn.Parameter(xp.asarray(p)) for p in p0]
    opt = make(params)
    for gs in grads:
        opt.step([xp.asarray(g) for g in gs])
    for i, p in enumerate(params):
        assert p.value.device is xb and not p.value.is_lazy   # evaluated by step
        want = ref(p0[i], [gs[i] for gs in grads])
        np.testing.assert_allclose(np.asarray(p.value), want, rtol=2e-5, atol=1e-6)


def test_dict_gradients_and_skipped_parameters(xb):
    lin = nn.Linear(3, 2, key=vr.key(0))
    opt = optim.SGD(lin, lr=0.5)                                   # a module: names from named_parameters
    w0, b0 = np.asarray(lin.weight.value), np.asarray(lin.bias.value)
    opt.step({"weight": xp.ones((2, 3))})                          # bias left out: unchanged
    np.testing.assert_allclose(np.asarray(lin.weight.value), w0 - 0.5, rtol=1e-6)
    np.testing.assert_array_equal(np.asarray(lin.bias.value), b0)
    opt.step([None, xp.ones(2)])
    np.testing.assert_allclose(np.asarray(lin.bias.value), b0 - 0.5, rtol=1e-6)
    assert opt.step_counts() == [1, 1]


def test_adam_step_is_one_submission_and_builds_nothing_after_warmup(xb):
    p = nn.Parameter(xp.ones((256,)))
    g = xp.full((256,), 0.25)
    g.evaluate()
    opt = optim.Adam([p], lr=0.1)
    opt.step([g])
    opt.step([g])                        # the later-steps structure (state read back): built here
    xp.reset_fusion_stats()
    opt.step([g])
    stats = xp.fusion_stats()
    # one kernel writing m, v and the parameter (9 storage buffers: where the device has them; the reference
    # backend keeps WebGPU's default 8, so m and v get a kernel of their own) and one advancing the step
    # counts, in one submission; the learning rate and the counts are device data: a new step builds nothing
    kernels = 2 if storage_limit(xb) >= 9 else 3
    assert stats["submissions"] == 1 and stats["kernels_dispatched"] == kernels and stats["kernels_built"] == 0


def test_bad_arguments(ref_backend):
    p = nn.Parameter(xp.zeros((2,), device=ref_backend))
    with pytest.raises(InvalidArgumentError):
        optim.SGD([p], lr=-1.0)
    with pytest.raises(InvalidArgumentError):
        optim.SGD([p], lr=0.1, nesterov=True)                    # Nesterov without momentum
    with pytest.raises(InvalidArgumentError):
        optim.Adam([p], betas=(0.9, 1.0))
    with pytest.raises(InvalidArgumentError):
        optim.Adam([], lr=0.1)
    with pytest.raises(ArgumentTypeError):
        optim.Adam([xp.zeros(2, device=ref_backend)])
    opt = optim.Adam([p])
    with pytest.raises(InvalidArgumentError):
        opt.step([xp.zeros((3,), device=ref_backend)])           # wrong shape
    with pytest.raises(InvalidArgumentError):
        opt.step([])                                              # wrong count
    with pytest.raises(ArgumentTypeError):
        opt.step([np.zeros(2, np.float32)])
    with pytest.raises(InvalidArgumentError):
        opt.step({"w": xp.zeros((2,), device=ref_backend)})     # unknown name
    assert opt.step_counts() == [0] and math.isclose(opt.lr, 1e-3)
