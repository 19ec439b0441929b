"""Launches of differentiable kernels on the gradient tape: composed with array operations before and after
in one backward pass, through value_and_grad, and the two examples (examples/nbody_fit.py through 50
launches, examples/learned_blur.py): every gradient against central finite differences of float64 numpy
code (atol 1e-3 of the largest gradient + 1e-5 unless said), on the reference interpreter and the GPU.
The refusals: an Out array the tape holds, a second derivative through a kernel."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

import vyre
import vyre.array as xp
import vyre.autograd as ag
from vyre import In, Out, f32, i32, tid
from vyre.errors import InvalidArgumentError

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
RNG = np.random.default_rng(5)


def example(name):
    spec = importlib.util.spec_from_file_location(f"example_{name}", EXAMPLES / f"{name}.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@vyre.kernel(differentiable=True)
def mix(x: In[f32], w: In[f32], idx: In[i32], out: Out[f32], count: Out[i32]):
    i = tid()
    v = x[i] * w[idx[i]] + vyre.sin(x[i])
    out[i] = v
    count[i] = idx[i] + 1


def fd(f, x, h=1e-6):
    x = np.array(x, np.float64)
    g = np.zeros_like(x)
    for k in np.ndindex(x.shape):
        e = np.zeros_like(x)
        e[k] = h
        g[k] = (f(x + e) - f(x - e)) / (2 * h)
    return g


def close(got, want, atol=1e-5):
    np.testing.assert_allclose(np.asarray(got), want, rtol=0, atol=1e-3 * max(1.0, np.abs(want).max()) + atol)


def test_a_launch_between_array_operations(xb):
    x0, w0 = RNG.uniform(-1, 1, 12).astype(np.float32), RNG.uniform(-1, 1, 3).astype(np.float32)
    idx = RNG.integers(0, 3, 12).astype(np.int32)

    def loss64(x, w):
        y = np.exp(0.5 * x)
        v = y * w[idx] + np.sin(y)
        return float((v * v).sum() + (w ** 2).sum())

    x, w = xp.asarray(x0), xp.asarray(w0)
    with ag.GradientTape() as tape:
        y = xp.exp(0.5 * x)
        out, count = xp.empty((12,), dtype=xp.float32), xp.zeros((12,), dtype=xp.int32)
        mix[12](y, w, xp.asarray(idx), out, count)
        loss = xp.sum(out * out) + xp.sum(w ** 2)
    gx, gw = tape.gradient(loss, [x, w])
    assert np.array_equal(np.asarray(count), idx + 1)
    close(gx, fd(lambda v: loss64(v, w0.astype(np.float64)), x0))
    close(gw, fd(lambda v: loss64(x0.astype(np.float64), v), w0))


def test_value_and_grad_through_a_kernel(xb):
    x0 = RNG.uniform(-1, 1, 9).astype(np.float32)
    idx = np.zeros(9, np.int32)

    def f(x, w):
        out = xp.empty((9,), dtype=xp.float32)
        mix[9](x, w, xp.asarray(idx), out, xp.zeros((9,), dtype=xp.int32))
        return xp.mean(out)

    value, (gx, gw) = ag.value_and_grad(f, argnums=(0, 1))(xp.asarray(x0), xp.asarray([2.0]))
    assert abs(float(value) - float(np.mean(x0 * 2 + np.sin(x0)))) < 1e-6
    close(gx, (2 + np.cos(x0.astype(np.float64))) / 9)
    close(gw, [x0.astype(np.float64).sum() / 9])


def test_an_out_array_the_tape_holds_is_refused(xb):
    x = xp.asarray(RNG.uniform(-1, 1, 4).astype(np.float32))
    with ag.GradientTape():
        out = xp.empty((4,), dtype=xp.float32)
        mix[4](x, xp.asarray([1.0]), xp.zeros((4,), dtype=xp.int32), out, xp.zeros((4,), dtype=xp.int32))
        with pytest.raises(InvalidArgumentError, match="in-place change"):
            mix[4](x, xp.asarray([1.0]), xp.zeros((4,), dtype=xp.int32), out, xp.zeros((4,), dtype=xp.int32))


def test_a_second_derivative_through_a_kernel_is_refused(xb):
    x = xp.asarray(RNG.uniform(-1, 1, 4).astype(np.float32))
    with ag.GradientTape() as outer:
        with ag.GradientTape() as inner:
            out = xp.empty((4,), dtype=xp.float32)
            mix[4](x, xp.asarray([1.0]), xp.zeros((4,), dtype=xp.int32), out, xp.zeros((4,), dtype=xp.int32))
            y = xp.sum(out)
        with pytest.raises(InvalidArgumentError, match="second derivatives"):
            inner.gradient(y, x)
    del outer


def test_nbody_example_gradient_through_50_steps(xb):
    nb = example("nbody_fit")
    p0, m, _, target = nb.problem(seed=3)
    v0 = np.random.default_rng(4).uniform(-0.5, 0.5, (2, nb.N)).astype(np.float32)
    loss, g = nb.loss_and_grad([xp.asarray(p0[0]), xp.asarray(p0[1])], [xp.asarray(v0[0]), xp.asarray(v0[1])],
                               xp.asarray(m), [xp.asarray(target[0]), xp.asarray(target[1])], xb)
    want = nb.fd_gradient(p0, v0.astype(np.float64), m.astype(np.float64), target.astype(np.float64))
    got = np.stack([np.asarray(gi) for gi in g])
    close(got, want)
    assert abs(float(loss) - ((nb.simulate64(p0, v0, m) - target) ** 2).sum()) < 1e-4


def test_learned_blur_example_gradient(xb):
    bl = example("learned_blur")
    img, _, target = bl.problem(seed=2)
    w0 = np.random.default_rng(1).uniform(0, 0.3, 9).astype(np.float32)
    _, g = bl.loss_and_grad(xp.asarray(img), xp.asarray(w0), xp.asarray(target))

    def loss64(w):
        return ((bl.blur64(img, w) - target) ** 2).mean()

    close(g, fd(loss64, w0))


@vyre.kernel
def opaque(x: In[f32], out: Out[f32]):
    i = tid()
    out[i] = x[i] * 2.0


def test_a_gradient_through_a_kernel_not_declared_differentiable_is_refused(xb):
    x = xp.asarray(RNG.uniform(-1, 1, 8).astype(np.float32))
    other = xp.asarray(RNG.uniform(-1, 1, 8).astype(np.float32))
    with ag.GradientTape(persistent=True) as tape:
        y = xp.zeros(8)
        opaque[8](xp.exp(x), y)
        loss = xp.sum(y * y)
        side = xp.sum(other * 3.0)
    with pytest.raises(InvalidArgumentError, match="not differentiable"):
        tape.gradient(loss, x)
    np.testing.assert_allclose(np.asarray(tape.gradient(side, other)), np.full(8, 3.0, np.float32))  # untouched
    tape.release()
