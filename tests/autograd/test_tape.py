"""The tape and the transforms: one mechanism, two faces; persistence, stop_gradient, nesting (second
derivatives), watching, structures of sources, seeds, and the errors that stand where a gradient would
otherwise be silently wrong (in-place changes, item assignment, numpy functions, functions without a rule)."""

from __future__ import annotations

import numpy as np
import pytest

import vyre.array as xp
import vyre.autograd as ag
from vyre.errors import ArgumentTypeError, InvalidArgumentError


def _loss(w, b, x):
    return xp.mean(xp.tanh(x @ w + b) ** 2) + 0.1 * xp.sum(w * w)


def _params(be):
    rng = np.random.default_rng(3)
    with xp.use(be):
        return (xp.asarray(rng.normal(size=(4, 3)).astype(np.float32)),
                xp.asarray(rng.normal(size=(3,)).astype(np.float32)),
                xp.asarray(rng.normal(size=(5, 4)).astype(np.float32)))


def test_tape_and_value_and_grad_agree_bit_for_bit(be):
    w, b, x = _params(be)
    with xp.use(be):
        with ag.GradientTape() as tape:
            loss = _loss(w, b, x)
        gw, gb = tape.gradient(loss, [w, b])
        value, (vw, vb) = ag.value_and_grad(_loss, argnums=(0, 1))(w, b, x)
        only_w = ag.grad(_loss)(w, b, x)
        assert float(value) == float(loss)
        np.testing.assert_array_equal(np.asarray(gw), np.asarray(vw))
        np.testing.assert_array_equal(np.asarray(gb), np.asarray(vb))
        np.testing.assert_array_equal(np.asarray(gw), np.asarray(only_w))


def test_non_persistent_tape_gives_one_gradient(be):
    with xp.use(be):
        x = xp.asarray([1.0, 2.0])
        with ag.GradientTape() as tape:
            y = xp.sum(x * x)
        np.testing.assert_array_equal(np.asarray(tape.gradient(y, x)), [2.0, 4.0])
        with pytest.raises(InvalidArgumentError, match="one gradient"):
            tape.gradient(y, x)


def test_persistent_tape_gives_many_then_releases(be):
    with xp.use(be):
        x = xp.asarray([1.0, 2.0])
        with ag.GradientTape(persistent=True) as tape:
            y = x * x
            z = xp.sum(y * x)
        np.testing.assert_array_equal(np.asarray(tape.gradient(z, x)), [3.0, 12.0])
        np.testing.assert_array_equal(np.asarray(tape.gradient(y, x)), [2.0, 4.0])  # non-scalar: sum (seed 1s)
        np.testing.assert_array_equal(np.asarray(tape.gradient(z, y)), [1.0, 2.0])  # an intermediate source
        tape.release()
        np.testing.assert_array_equal(np.asarray(tape.gradient(z, x)), [0.0, 0.0])  # nothing recorded any more


def test_output_gradients_and_structures(be):
    with xp.use(be):
        a, b = xp.asarray([1.0, 2.0, 3.0]), xp.asarray([0.5])
        with ag.GradientTape() as tape:
            y = a * b
        got = tape.gradient(y, {"a": a, "b": b}, output_gradients=xp.asarray([1.0, 0.0, 2.0]))
        assert set(got) == {"a", "b"}
        np.testing.assert_array_equal(np.asarray(got["a"]), [0.5, 0.0, 1.0])
        np.testing.assert_array_equal(np.asarray(got["b"]), [7.0])
        with ag.GradientTape() as tape:
            y = a * 2.0
        ga, unused = tape.gradient(y, (a, b))
        np.testing.assert_array_equal(np.asarray(unused), [0.0])  # not connected: zeros
        with ag.GradientTape() as tape:
            y = a * 2.0
        with pytest.raises(InvalidArgumentError, match="shape"):
            tape.gradient(y, a, output_gradients=xp.asarray([1.0]))


def test_stop_gradient(be):
    with xp.use(be):
        x = xp.asarray([1.0, 2.0, 3.0])
        with ag.GradientTape() as tape:
            y = xp.sum(x * ag.stop_gradient(x))  # d/dx = stop(x), not 2x
        np.testing.assert_array_equal(np.asarray(tape.gradient(y, x)), [1.0, 2.0, 3.0])
        g = ag.grad(lambda v: xp.sum(ag.stop_gradient(v * v) + v))(x)
        np.testing.assert_array_equal(np.asarray(g), [1.0, 1.0, 1.0])


@pytest.mark.parametrize("name", ["tanh", "sin", "xexp"])
def test_second_derivatives(be, name):
    """Nested tapes and grad(grad(f)): f'' of tanh, sin and x * exp(x)."""
    f, f2 = {
        "tanh": (xp.tanh, lambda v: -2 * np.tanh(v) * (1 - np.tanh(v) ** 2)),
        "sin": (xp.sin, lambda v: -np.sin(v)),
        "xexp": (lambda v: v * xp.exp(v), lambda v: (v + 2) * np.exp(v)),
    }[name]
    xs = np.array([-1.0, 0.25, 1.5], dtype=np.float32)
    with xp.use(be):
        x = xp.asarray(xs)
        with ag.GradientTape() as outer:
            with ag.GradientTape() as inner:
                y = xp.sum(f(x))
            dy = inner.gradient(y, x)
        d2 = outer.gradient(dy, x)  # the sum of dy: elementwise, so f'' itself
        np.testing.assert_allclose(np.asarray(d2), f2(xs.astype(np.float64)), rtol=1e-4, atol=1e-5)
        fg = ag.grad(lambda v: xp.sum(ag.grad(lambda u: xp.sum(f(u)))(v)))
        np.testing.assert_allclose(np.asarray(fg(x)), f2(xs.astype(np.float64)), rtol=1e-4, atol=1e-5)


def test_watch_accessed_arrays_false(be):
    with xp.use(be):
        x, c = xp.asarray([1.0, 2.0]), xp.asarray([3.0, 4.0])
        with ag.GradientTape(watch_accessed_arrays=False) as tape:
            tape.watch(x)
            y = xp.sum(x * c) + xp.sum(c * c)  # c * c reads no watched array: not recorded
        gx, gc = tape.gradient(y, [x, c])
        np.testing.assert_array_equal(np.asarray(gx), [3.0, 4.0])
        np.testing.assert_array_equal(np.asarray(gc), [1.0, 2.0])  # through x * c only


def test_value_and_grad_options(be):
    with xp.use(be):
        x = xp.asarray([1.0, 2.0])
        (value, aux), g = ag.value_and_grad(lambda v: (xp.sum(v ** 2), v * 10.0), has_aux=True)(x)
        assert float(value) == 5.0
        np.testing.assert_array_equal(np.asarray(aux), [10.0, 20.0])
        np.testing.assert_array_equal(np.asarray(g), [2.0, 4.0])
        g, aux = ag.grad(lambda v: (xp.sum(v ** 2), 1), has_aux=True)(x)
        assert aux == 1
        # the same array as two differentiated arguments: a gradient each
        ga, gb = ag.grad(lambda p, q: xp.sum(p * 2.0 + q * 3.0), argnums=(0, 1))(x, x)
        np.testing.assert_array_equal(np.asarray(ga), [2.0, 2.0])
        np.testing.assert_array_equal(np.asarray(gb), [3.0, 3.0])
        tree = ag.grad(lambda p: xp.sum(p["w"] * p["b"][0]))({"w": x, "b": [x]})
        np.testing.assert_array_equal(np.asarray(tree["w"]), [1.0, 2.0])
        np.testing.assert_array_equal(np.asarray(tree["b"][0]), [1.0, 2.0])
        with pytest.raises(ArgumentTypeError, match="0-d"):
            ag.grad(lambda v: v * 2.0)(x)


def test_inplace_on_recorded_array_is_refused(be):
    with xp.use(be):
        x = xp.asarray([1.0, 2.0])
        with ag.GradientTape() as tape:
            y = x * x
            with pytest.raises(InvalidArgumentError, match="in-place"):
                x += 1.0
            with pytest.raises(InvalidArgumentError, match="in-place"):
                y[0] = 5.0
            z = xp.zeros((2,))
            with pytest.raises(InvalidArgumentError, match="item assignment"):
                z[:] = y
            loss = xp.sum(y)
        np.testing.assert_array_equal(np.asarray(tape.gradient(loss, x)), [2.0, 4.0])  # unchanged
        x += 1.0  # the tape let go with its gradient: allowed again
        np.testing.assert_array_equal(np.asarray(x), [2.0, 3.0])
        with ag.GradientTape(persistent=True) as kept:
            y = xp.sum(x * 3.0)
        with pytest.raises(InvalidArgumentError, match="in-place"):
            x -= 1.0  # a persistent tape still holds it
        del kept
        x -= 1.0


def test_numpy_function_and_missing_rule_are_errors(be):
    with xp.use(be):
        x = xp.asarray([1.0, 2.0, 2.0])
        with ag.GradientTape() as tape:
            with pytest.raises(ArgumentTypeError, match="not recorded"):
                np.sum(x)
            y = np.exp(x)  # a ufunc: recorded as vyre.array.exp
            u = xp.unique_values(x)
            loss = xp.sum(y) + xp.sum(u)
        with pytest.raises(InvalidArgumentError, match="unique_values has no derivative rule"):
            tape.gradient(loss, x)
        with ag.GradientTape() as tape:
            y = xp.sum(np.exp(x))
        np.testing.assert_allclose(np.asarray(tape.gradient(y, x)), np.exp([1.0, 2.0, 2.0]), rtol=1e-6)


def test_errors_for_bad_targets_and_sources(be):
    with xp.use(be):
        x = xp.asarray([1.0, 2.0])
        i = xp.asarray([1, 2])
        with ag.GradientTape(persistent=True) as tape:
            y = xp.sum(x)
        with pytest.raises(ArgumentTypeError, match="source"):
            tape.gradient(y, i)
        with pytest.raises(ArgumentTypeError, match="target"):
            tape.gradient(i, x)


def test_integer_paths_give_no_gradient(be):
    """argmax, comparisons and integer casts are not differentiable: what flows through them is zero."""
    with xp.use(be):
        x = xp.asarray([1.0, 3.0, 2.0])
        with ag.GradientTape() as tape:
            k = xp.argmax(x)
            y = xp.sum(xp.astype(x > 1.5, xp.float32) * 2.0) + xp.astype(k, xp.float32) + xp.sum(x[k])
        np.testing.assert_array_equal(np.asarray(tape.gradient(y, x)), [0.0, 1.0, 0.0])


def test_backward_of_elementwise_work_fuses_into_one_kernel(be):
    """The rules are lazy vyre.array expressions: the gradient of an elementwise function is one kernel
    (larger graphs may be cut into a few where the fusion planner materialises a shared subexpression)."""
    with xp.use(be):
        x = xp.asarray(np.linspace(-1, 1, 64, dtype=np.float32))
        f = ag.grad(lambda v: xp.sum(xp.sin(v) * xp.exp(v) + v * xp.tanh(v)))
        np.asarray(f(x))  # programs built
        xp.reset_fusion_stats()
        g = np.asarray(f(x))
        assert xp.fusion_stats()["kernels_dispatched"] == 1
    v = np.linspace(-1, 1, 64)
    want = np.cos(v) * np.exp(v) + np.sin(v) * np.exp(v) + np.tanh(v) + v * (1 - np.tanh(v) ** 2)
    np.testing.assert_allclose(g, want, rtol=1e-4, atol=1e-5)


def test_copies_and_iteration_are_recorded(be):
    import copy
    with xp.use(be):
        x = xp.asarray([[1.0, 2.0], [3.0, 4.0]])
        with ag.GradientTape() as tape:
            rows = [r * float(k + 1) for k, r in enumerate(x)]  # __iter__ is x[i]
            y = xp.sum(copy.copy(rows[0]) + copy.deepcopy(rows[1]) * 2.0)
        np.testing.assert_array_equal(np.asarray(tape.gradient(y, x)), [[1.0, 1.0], [4.0, 4.0]])


def test_second_derivatives_through_indexing_reductions_and_matmul(be):
    """The rules are written with recorded functions (the scatter-add included), so they differentiate too."""
    with xp.use(be):
        x = xp.asarray([0.5, -1.0, 2.0])
        idx = xp.asarray([2, 0, 2])
        w = xp.asarray([[1.0, 2.0], [0.5, -1.0], [0.0, 3.0]])
        f = ag.grad(lambda v: xp.sum(ag.grad(lambda u: xp.sum(u[idx] ** 3) + xp.max(u) * xp.sum(u @ w))(v)))
        # with r = rowsum(w), S = u . r, M = max(u): dL/du_i = 3 u_i^2 count_i + [i = argmax] S + M r_i, and
        # the gradient of its sum is 6 u_j count_j + r_j + [j = argmax] sum(r)
        u = np.array([0.5, -1.0, 2.0])
        count = np.array([1, 0, 2])
        rowsum = np.array([3.0, -0.5, 3.0])
        onehot = np.array([0.0, 0.0, 1.0])
        want = 6 * u * count + rowsum + onehot * rowsum.sum()
        np.testing.assert_allclose(np.asarray(f(x)), want, rtol=1e-5)
