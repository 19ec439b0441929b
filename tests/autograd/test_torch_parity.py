"""vyre.autograd against torch.autograd, where torch is installed (the GPU machine): the same weighted loss
of each function, both in float32, every input's gradient compared (rtol 2e-4, atol 2e-5 unless a case says
otherwise), and a small CNN's full parameter gradients through vyre.nn against the same network in torch
with the same weights. Skipped where torch is not importable (CI's lavapipe machine has no torch)."""

from __future__ import annotations

import numpy as np
import pytest

import vyre.array as xp
import vyre.autograd as ag

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(7)


def _pos(shape):
    return RNG.uniform(0.5, 2.0, shape).astype(np.float32)


def _any(shape):
    return RNG.standard_normal(shape).astype(np.float32)


def _unit(shape):
    return RNG.uniform(-0.9, 0.9, shape).astype(np.float32)


# (name, vyre function, torch function, inputs)
CASES = [
    ("add", lambda a, b: a + b, lambda a, b: a + b, [_any((3, 4)), _any((4,))]),
    ("sub", lambda a, b: a - b, lambda a, b: a - b, [_any((3, 4)), _any((3, 1))]),
    ("mul", lambda a, b: a * b, lambda a, b: a * b, [_any((3, 4)), _any((3, 4))]),
    ("div", lambda a, b: a / b, lambda a, b: a / b, [_any((3, 4)), _pos((3, 4))]),
    ("pow", lambda a, b: a ** b, lambda a, b: a ** b, [_pos((3, 4)), _any((3, 4))]),
    ("sqrt", xp.sqrt, torch.sqrt, [_pos((5,))]),
    ("exp", xp.exp, torch.exp, [_any((5,))]),
    ("expm1", xp.expm1, torch.expm1, [_any((5,))]),
    ("log", xp.log, torch.log, [_pos((5,))]),
    ("log1p", xp.log1p, torch.log1p, [_pos((5,))]),
    ("sin", xp.sin, torch.sin, [_any((5,))]),
    ("cos", xp.cos, torch.cos, [_any((5,))]),
    ("tan", xp.tan, torch.tan, [_unit((5,))]),
    ("tanh", xp.tanh, torch.tanh, [_any((5,))]),
    ("sinh", xp.sinh, torch.sinh, [_any((5,))]),
    ("cosh", xp.cosh, torch.cosh, [_any((5,))]),
    ("asin", xp.asin, torch.asin, [_unit((5,))]),
    ("acos", xp.acos, torch.acos, [_unit((5,))]),
    ("atan", xp.atan, torch.atan, [_any((5,))]),
    ("asinh", xp.asinh, torch.asinh, [_any((5,))]),
    ("atanh", xp.atanh, torch.atanh, [_unit((5,))]),
    ("abs", xp.abs, torch.abs, [_any((5,))]),
    ("atan2", xp.atan2, torch.atan2, [_any((5,)), _pos((5,))]),
    ("hypot", xp.hypot, torch.hypot, [_pos((5,)), _pos((5,))]),
    ("logaddexp", xp.logaddexp, torch.logaddexp, [_any((5,)), _any((5,))]),
    ("maximum", xp.maximum, torch.maximum, [_any((6,)), _any((6,))]),
    ("clip", lambda a: xp.clip(a, -0.5, 0.5), lambda a: torch.clamp(a, -0.5, 0.5), [_any((6,))]),
    ("where", lambda a, b: xp.where(a > 0, a, b), lambda a, b: torch.where(a > 0, a, b), [_any((6,)), _any((6,))]),
    ("sum_axis", lambda a: xp.sum(a, axis=1), lambda a: torch.sum(a, dim=1), [_any((3, 4))]),
    ("mean", lambda a: xp.mean(a, axis=0), lambda a: torch.mean(a, dim=0), [_any((3, 4))]),
    ("prod", lambda a: xp.prod(a, axis=1), lambda a: torch.prod(a, dim=1), [_pos((3, 4))]),
    ("max", lambda a: xp.max(a, axis=1), lambda a: torch.amax(a, dim=1), [_any((3, 4))]),
    ("var", lambda a: xp.var(a, axis=1, correction=1), lambda a: torch.var(a, dim=1, correction=1), [_any((3, 5))]),
    ("std", lambda a: xp.std(a, axis=0), lambda a: torch.std(a, dim=0, correction=0), [_any((4, 3))]),
    ("cumsum", lambda a: xp.cumulative_sum(a, axis=1), lambda a: torch.cumsum(a, dim=1), [_any((3, 4))]),
    ("matmul", lambda a, b: a @ b, lambda a, b: a @ b, [_any((2, 3, 4)), _any((4, 5))]),
    ("tensordot", lambda a, b: xp.tensordot(a, b, axes=1), lambda a, b: torch.tensordot(a, b, dims=1),
     [_any((3, 4)), _any((4, 2))]),
    ("vecdot", lambda a, b: xp.vecdot(a, b), lambda a, b: (a * b).sum(-1), [_any((3, 4)), _any((3, 4))]),
    ("reshape_permute", lambda a: xp.permute_dims(xp.reshape(a, (2, 6)), (1, 0)),
     lambda a: a.reshape(2, 6).permute(1, 0), [_any((3, 4))]),
    ("concat", lambda a, b: xp.concat([a, b], axis=0), lambda a, b: torch.cat([a, b], 0), [_any((2, 3)), _any((1, 3))]),
    ("stack", lambda a, b: xp.stack([a, b], axis=1), lambda a, b: torch.stack([a, b], 1), [_any((2, 3)), _any((2, 3))]),
    ("slice", lambda a: a[1:, ::2], lambda a: a[1:, ::2], [_any((4, 6))]),
    ("take", lambda a: xp.take(a, xp.asarray(np.array([0, 2, 2, 1], np.int32)), axis=0),
     lambda a: a[torch.tensor([0, 2, 2, 1], device=a.device)], [_any((3, 4))]),
    ("mask", lambda a: a[a > 0], lambda a: a[a > 0], [_any((3, 4))]),
    ("sort", lambda a: xp.sort(a, axis=1), lambda a: torch.sort(a, dim=1).values, [_any((3, 5))]),
    ("flip", lambda a: xp.flip(a, axis=1), lambda a: torch.flip(a, [1]), [_any((3, 4))]),
]


@pytest.mark.parametrize("name, fv, ft, inputs", CASES, ids=[c[0] for c in CASES])
def test_rules_match_torch(gpu, name, fv, ft, inputs):
    dev = "cuda" if torch.cuda.is_available() else "cpu"
    with xp.use(gpu):
        xs = [xp.asarray(x) for x in inputs]
        with ag.GradientTape() as tape:
            out = fv(*xs)
        w = RNG.standard_normal(out.shape).astype(np.float32)
        with ag.GradientTape() as tape:
            out = fv(*xs)
            loss = xp.sum(out * xp.asarray(w))
        got = [np.asarray(g) for g in tape.gradient(loss, xs)]
    ts = [torch.tensor(x, device=dev, requires_grad=True) for x in inputs]
    tout = ft(*ts)
    (tout * torch.tensor(w, device=dev)).sum().backward()
    for g, t in zip(got, ts):
        np.testing.assert_allclose(g, t.grad.cpu().numpy(), rtol=2e-4, atol=2e-5, err_msg=name)


def test_cnn_parameter_gradients_match_torch(gpu):
    import vyre.nn as nn
    import vyre.random as vr
    from vyre.nn import functional as F

    dev = "cuda" if torch.cuda.is_available() else "cpu"
    x = RNG.standard_normal((4, 1, 8, 8)).astype(np.float32)
    labels = np.array([1, 0, 3, 2], np.int64)
    with xp.use(gpu):
        key = vr.key(0)
        k1, k2 = vr.split(key)
        conv = nn.Conv2d(1, 4, 3, padding=1, key=k1)
        fc = nn.Linear(4 * 4 * 4, 5, key=k2)
        pool = nn.MaxPool2d(2)

        def loss_of(cw, cb, fw, fb):
            h = F.relu(F.conv2d(xp.asarray(x), cw, cb, padding=1))
            h = xp.reshape(pool(h), (4, -1))
            return F.cross_entropy(F.linear(h, fw, fb), xp.asarray(labels.astype(np.int32)))

        params = [conv.weight.value, conv.bias.value, fc.weight.value, fc.bias.value]
        value, grads = ag.value_and_grad(loss_of, argnums=(0, 1, 2, 3))(*params)
        got = [np.asarray(g) for g in grads]
        host = [np.asarray(p) for p in params]
    tp = [torch.tensor(p, device=dev, requires_grad=True) for p in host]
    tx = torch.tensor(x, device=dev)
    h = torch.relu(torch.nn.functional.conv2d(tx, tp[0], tp[1], padding=1))
    h = torch.nn.functional.max_pool2d(h, 2).reshape(4, -1)
    tl = torch.nn.functional.cross_entropy(h @ tp[2].T + tp[3], torch.tensor(labels, device=dev))
    tl.backward()
    np.testing.assert_allclose(float(value), float(tl), rtol=1e-5)
    for g, t in zip(got, tp):
        np.testing.assert_allclose(g, t.grad.cpu().numpy(), rtol=1e-3, atol=1e-5)
