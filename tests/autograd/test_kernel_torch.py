"""Differentiable kernels against torch.autograd, where torch is installed (the GPU machine): the same
computation written in torch (float32, on its CPU), the same inputs and output weights, every input's
gradient compared (atol 1e-3 of the largest gradient + 1e-5 unless said): the n-body example through 50
steps, the learned-blur example (torch's conv2d with replicate padding), and the kernels of
tests/frontend/adjoint_cases.py. Skipped where torch is not importable (CI's lavapipe machine has no torch,
and it is no test extra: pytest.importorskip, as tests/autograd/test_torch_parity.py)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

import vyre.array as xp

torch = pytest.importorskip("torch")

from frontend import adjoint_cases as C  # noqa: E402  (tests/ is on the path, as for doc_pages)

ROOT = Path(__file__).resolve().parents[2]

RNG = np.random.default_rng(9)


def example(name):
    spec = importlib.util.spec_from_file_location(f"example_{name}", ROOT / "examples" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def close(got, want, atol=1e-5):
    want = want.detach().double().numpy() if hasattr(want, "detach") else np.asarray(want)
    np.testing.assert_allclose(np.asarray(got, np.float64), want, rtol=0,
                               atol=1e-3 * max(1.0, float(np.abs(want).max())) + atol)


def t(a):
    return torch.tensor(np.asarray(a), dtype=torch.float32, requires_grad=True)


def test_nbody_example_against_torch(xb):
    nb = example("nbody_fit")
    p0, m, _, target = nb.problem(seed=6)
    v0 = RNG.uniform(-0.5, 0.5, (2, nb.N)).astype(np.float32)
    _, g = nb.loss_and_grad([xp.asarray(p0[0]), xp.asarray(p0[1])], [xp.asarray(v0[0]), xp.asarray(v0[1])],
                            xp.asarray(m), [xp.asarray(target[0]), xp.asarray(target[1])], xb)
    v = t(v0)
    p, vel, mass = torch.tensor(p0), v, torch.tensor(m)
    for _ in range(nb.STEPS):
        d = p[:, None, :] - p[:, :, None]  # d[:, i, j] = p_j - p_i
        r2 = (d ** 2).sum(0) + nb.EPS
        a = (d * (mass[None, None, :] / (r2 * torch.sqrt(r2)))).sum(2)
        vel = vel + nb.DT * a
        p = p + nb.DT * vel
    ((p - torch.tensor(target)) ** 2).sum().backward()
    close(np.stack([np.asarray(gi) for gi in g]), v.grad)


def test_learned_blur_example_against_torch(xb):
    bl = example("learned_blur")
    img, _, target = bl.problem(seed=4)
    w0 = RNG.uniform(0, 0.3, 9).astype(np.float32)
    _, g = bl.loss_and_grad(xp.asarray(img), xp.asarray(w0), xp.asarray(target))
    w = t(w0)
    padded = torch.nn.functional.pad(torch.tensor(img)[None, None], (1, 1, 1, 1), mode="replicate")
    out = torch.nn.functional.conv2d(padded, w.reshape(1, 1, 3, 3))[0, 0]  # conv2d is a correlation
    ((out - torch.tensor(target)) ** 2).mean().backward()
    close(g, w.grad)


def test_kernels_against_torch(ref_backend):
    a, b = RNG.uniform(0.1, 1.0, 30).astype(np.float32), RNG.uniform(0.1, 1.0, 30).astype(np.float32)
    s1, s2 = RNG.standard_normal(30).astype(np.float32), RNG.standard_normal(30).astype(np.float32)
    got = C.binary.vjp(30, [a, b, a, a, 0.7], [s1, s2], backend=ref_backend)
    ta, tb = t(a), t(b)
    p, q = ta, tb
    r = p * q - p / (2.0 + q * q) + torch.minimum(p, q) * 0.7 - torch.maximum(p, 0.5 * q)
    r = r + (2.0 + p) ** q + q ** 3 + torch.remainder(p - 0.1 * q, 0.7)
    r2 = torch.where(p > q, p * q + r, -r)
    ((r * torch.tensor(s1)).sum() + (r2 * torch.tensor(s2)).sum()).backward()
    close(got["a"], ta.grad)
    close(got["b"], tb.grad)

    x, c = RNG.uniform(-1, 1, 16).astype(np.float32), RNG.uniform(-1, 1, 5).astype(np.float32)
    got = C.horner.vjp(16, [x, c, x, 5], [s1[:16]], backend=ref_backend)
    tx, tc = t(x), t(c)
    poly = torch.zeros(16)
    for k in range(4, -1, -1):
        poly = poly * tx + tc[k]
    (poly * torch.tensor(s1[:16])).sum().backward()
    close(got["x"], tx.grad)
    close(got["c"], tc.grad)
