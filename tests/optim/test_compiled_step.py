"""A whole training step -- forward, backward (value_and_grad) and ``opt.step`` -- inside ``vyre.compile``,
the model and the optimizer closed over: traced once, replayed as one submission, and bit for bit the
eager step (same kernels, same order) for SGD with momentum, Adam and AdamW, with a learning rate changed
between steps and with ``skip_if`` (a found-inf flag) skipping a step on the device."""

from __future__ import annotations

import numpy as np
import pytest

import vyre
import vyre.array as xp
import vyre.nn as nn
import vyre.nn.functional as F
import vyre.optim as optim
import vyre.random as vr
from vyre.autograd import value_and_grad
from vyre.errors import ArgumentTypeError, TraceError

RNG = np.random.default_rng(5)
X = [RNG.standard_normal((16, 8)).astype(np.float32) for _ in range(5)]
Y = [RNG.integers(0, 4, 16).astype(np.int32) for _ in range(5)]

OPTS = {
    "sgd": lambda m: optim.SGD(m, lr=0.1, momentum=0.9, dampening=0.1, weight_decay=1e-3),
    "adam": lambda m: optim.Adam(m, lr=0.01, weight_decay=1e-3),
    "adamw": lambda m: optim.AdamW(m, lr=0.01),
}


def _trainer(make, compiled: bool):
    model = nn.Sequential(nn.Linear(8, 16, key=vr.key(1)), nn.ReLU(), nn.Linear(16, 4, key=vr.key(2)))
    opt = make(model)
    grad = value_and_grad(lambda values, x, y: F.cross_entropy(nn.functional_call(model, values, x), y))

    def step(x, y, skip=None):
        loss, grads = grad(model.parameter_values(), x, y)
        opt.step(grads, skip_if=skip)
        return loss

    return model, opt, (vyre.compile(step) if compiled else step)


def _values(model):
    return {k: np.asarray(v) for k, v in model.parameter_values().items()}


@pytest.mark.parametrize("name", sorted(OPTS))
def test_compiled_step_is_the_eager_step_bit_for_bit(xb, name):
    em, eopt, estep = _trainer(OPTS[name], compiled=False)
    cm, copt, cstep = _trainer(OPTS[name], compiled=True)
    for t in range(5):
        x, y = xp.asarray(X[t]), xp.asarray(Y[t])
        if t == 3:  # a schedule's change between steps: written to the device copy, no retrace
            eopt.lr = copt.lr = eopt.lr * 0.5
        el, cl = estep(x, y), cstep(x, y)
        assert np.asarray(el).tobytes() == np.asarray(cl).tobytes(), t
        e, c = _values(em), _values(cm)
        for k in e:
            assert e[k].tobytes() == c[k].tobytes(), (t, k)
    assert cstep.traces == 1 and cstep.replays == 4
    assert copt.step_counts() == eopt.step_counts() == [5] * 4
    for se, sc in zip(eopt.state, copt.state, strict=True):
        for k in se:
            assert np.asarray(se[k]).tobytes() == np.asarray(sc[k]).tobytes()


def test_skip_if_leaves_everything_unchanged(xb):
    model, opt, step = _trainer(OPTS["adam"], compiled=True)
    x, y = xp.asarray(X[0]), xp.asarray(Y[0])
    step(x, y, xp.asarray(False))
    before = _values(model)
    state = [{k: np.asarray(v) for k, v in s.items()} for s in opt.state]
    step(x, y, xp.asarray(True))  # replayed: the flag is data
    assert step.traces == 1
    after = _values(model)
    for k in before:
        np.testing.assert_array_equal(after[k], before[k])
    for s0, s1 in zip(state, opt.state, strict=True):
        for k in s0:
            np.testing.assert_array_equal(np.asarray(s1[k]), s0[k])
    assert opt.step_counts() == [1] * 4
    step(x, y, xp.asarray(False))
    assert opt.step_counts() == [2] * 4
    assert any(not np.array_equal(_values(model)[k], before[k]) for k in before)


def test_lr_inside_a_compiled_function_and_bad_flags_are_refused(xb):
    p = nn.Parameter(xp.ones(4))
    opt = optim.SGD([p], lr=0.1)

    @vyre.compile
    def bad(g):
        opt.lr = 0.2
        opt.step([g])
        return g

    with pytest.raises(TraceError, match="outside vyre.compile"):
        bad(xp.ones(4))
    with pytest.raises(ArgumentTypeError):
        opt.step([xp.ones(4)], skip_if=xp.asarray([True]))
    with pytest.raises(TypeError):
        opt.step([xp.ones(4)], skip_if=True)  # type: ignore[arg-type]
    np.testing.assert_array_equal(np.asarray(p.value), np.ones(4, np.float32))
