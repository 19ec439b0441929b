"""vyre.compile's contract: when it traces (exactly when the signature changes), what it refuses
(data-dependent Python, host work: TraceError, also a TypeError, nothing cached), closures, arguments
written in place, kernels, nested compiled functions, one submission per replay, no leaks."""

from __future__ import annotations

import gc

import numpy as np
import pytest
from threaded import run_in_threads

import vyre
import vyre.array as xp
from vyre.errors import TraceError
from vyre.frontend.intrinsics import tid
from vyre.frontend.types import In, InOut, f32


def _x(n=8, seed=0, shape=None):
    rng = np.random.default_rng(seed)
    return xp.asarray(rng.standard_normal(shape or (n,)).astype(np.float32))


def test_retrace_exactly_when_the_signature_changes(xb):
    f = vyre.compile(lambda x, k=1.0: x * k + xp.sum(x))
    f(_x(8)), f(_x(8, 1)), f(_x(8, 2))
    assert (f.traces, f.replays) == (1, 2)
    f(_x(9))  # a new shape
    assert f.traces == 2
    f(_x(8, 3))  # the first signature again: still cached
    assert f.traces == 2
    f(_x(8), k=2.0)  # a Python scalar is part of the signature by value
    f(_x(8), k=2.0)
    assert (f.traces, f.replays) == (3, 4)
    f(xp.astype(_x(8), xp.float16) if xb.capabilities().f16 else _x(8, shape=(2, 4)))  # dtype or rank
    assert f.traces == 4
    np.testing.assert_array_equal(np.asarray(f(_x(8, 5), k=2.0)), np.asarray(_x(8, 5) * 2.0 + xp.sum(_x(8, 5))))


def test_pytrees_kwargs_and_numpy_arguments(xb):
    @vyre.compile
    def f(params, x, *, scale):
        return {"y": params["w"] * x + params["b"], "n": 3, "s": xp.sum(x) * scale}

    p = {"w": _x(4, 1), "b": _x(4, 2)}
    for k in range(3):
        xn = np.arange(4, dtype=np.float32) + k
        out = f(p, xn, scale=0.5)
        assert out["n"] == 3
        np.testing.assert_array_equal(np.asarray(out["y"]), np.asarray(p["w"] * xp.asarray(xn) + p["b"]))
        np.testing.assert_array_equal(np.asarray(out["s"]), np.asarray(xp.sum(xp.asarray(xn)) * 0.5))
    assert f.traces == 1


def test_one_argument_twice_is_its_own_signature(xb):
    f = vyre.compile(lambda a, b: a - b)
    x = _x(8)
    assert float(xp.max(xp.abs(f(x, x)))) == 0.0
    y = _x(8, 1)
    np.testing.assert_array_equal(np.asarray(f(x, y)), np.asarray(x - y))  # not the aliased trace
    assert f.traces == 2


@pytest.mark.parametrize("body", [
    lambda x: x if float(xp.sum(x)) > 0 else -x,
    lambda x: x * 2 if bool(xp.all(x > -100)) else x,
    lambda x: xp.asarray(np.asarray(x) + 1),
    lambda x: xp.nonzero(x > 0)[0],
    lambda x: x[x > 0],
    lambda x: x + int(xp.argmax(x)),
])
def test_data_dependent_python_is_a_trace_error(xb, body):
    f = vyre.compile(body)
    with pytest.raises(TraceError, match="reading array values on the host") as info:
        f(_x(8))
    assert isinstance(info.value, TypeError)
    assert f.traces == 0 and "not traced yet" in f.explain()
    with pytest.raises(TraceError):  # still refused: nothing was cached
        f(_x(8))


def test_host_work_inside_is_a_trace_error(xb):
    prog = vyre.ProgramBuilder("noop", 64)
    buf = prog.buffer("x", "f32", "read_write", count=4)
    prog.set_grid_from(buf)
    buf[prog.lit(0, "u32")] = buf[prog.lit(0, "u32")]
    p = prog.build()
    f = vyre.compile(lambda x: (xb.dispatch(p, [np.zeros(4, np.float32)]), x)[1])
    with pytest.raises(TraceError, match="host inputs, host results"):
        f(_x(4))


def test_closed_over_arrays_are_read_at_each_call_and_retrace_when_replaced(xb):
    g = _x(8, 1)
    f = vyre.compile(lambda x: x * g)
    x = _x(8)
    f(x), f(x)
    assert (f.traces, f.replays) == (1, 1)
    g = _x(8, 7)  # the old g is collected: its buffer may serve another array now
    gc.collect()
    _x(8, 9) + 0  # churn the pool so the freed buffer is reused
    np.testing.assert_array_equal(np.asarray(f(x)), np.asarray(x * g))
    assert f.traces == 2


def test_arguments_written_in_place_get_the_new_contents(xb):
    @vyre.compile
    def f(x, v):
        x[1:3] = v * 2
        return xp.sum(x)

    for k in range(3):
        a, b = _x(6, k), _x(2, 10 + k)
        ea, eb = _x(6, k), _x(2, 10 + k)
        eager = f._fn(ea, eb)
        got = f(a, b)
        np.testing.assert_array_equal(np.asarray(a), np.asarray(ea))
        np.testing.assert_array_equal(np.asarray(got), np.asarray(eager))
    assert f.traces == 1


def test_kernel_launches_are_captured(xb):
    @vyre.kernel
    def saxpy(x: In[f32], y: InOut[f32], a: f32):
        i = tid()
        y[i] = a * x[i] + y[i]

    @vyre.compile
    def f(x, y):
        saxpy[8](x, y, 2.0)
        return y * 1.0

    for k in range(3):
        x, y = _x(8, k), _x(8, k + 5)
        want = 2 * np.asarray(x) + np.asarray(y)
        got = f(x, y)
        np.testing.assert_allclose(np.asarray(got), want, rtol=1e-6)
        np.testing.assert_allclose(np.asarray(y), want, rtol=1e-6)  # the InOut argument, as eagerly
    assert f.traces == 1


def test_constants_created_inside_and_nested_compiled_functions(xb):
    inner = vyre.compile(lambda x: x * xp.asarray([1.0, 2.0, 3.0, 4.0]))
    outer = vyre.compile(lambda x: inner(x) + xp.asarray(np.full(4, 0.5, np.float32)))
    for k in range(3):
        x = _x(4, k)
        np.testing.assert_array_equal(np.asarray(outer(x)),
                                      np.asarray(x * xp.asarray([1.0, 2.0, 3.0, 4.0]) + 0.5))
    assert outer.traces == 1 and inner.traces == 0  # inline inside the outer trace


def test_explain_names_the_captured_steps(xb):
    f = vyre.compile(lambda x: xp.sum(xp.tanh(x) * 2.0))
    text = f.explain(_x(16))
    assert "step(s) in one submission" in text and "in0" in text and "out0" in text
    assert f.traces == 1


def test_bad_uses_are_typed(xb):
    with pytest.raises(TraceError):
        vyre.compile(3)
    f = vyre.compile(lambda x: x)
    with pytest.raises(TraceError, match="cannot be part of a signature"):
        f(object())
    with pytest.raises(TraceError, match="cannot be part of a signature"):
        vyre.compile(lambda: object())()


def test_a_replay_is_one_submission_and_leaks_nothing(gpu):
    with vyre.use(gpu):
        @vyre.compile
        def step(x, w):
            for _ in range(10):
                x = xp.tanh(x * w + 0.1)
                x = x - xp.mean(x)
            return x

        x, w = _x(256), _x(256, 1)
        step(x, w), step(x, w)
        gc.collect()  # earlier tests' garbage (reference cycles holding buffers) is not this loop's to free
        gpu.flush()
        before = gpu.stats()
        for _ in range(50):
            y = step(x, w)
        del y
        gc.collect()
        gpu.flush()
        after = gpu.stats()
        assert after["submits"] - before["submits"] == 50
        assert after["resident"]["handles"] == before["resident"]["handles"]
        assert after["resident"]["bytes"] == before["resident"]["bytes"]
        assert step.traces == 1 and step.replays == 51


def test_clear_frees_the_trace_buffers(xb):
    f = vyre.compile(lambda x: xp.exp(x) + 1)
    x = _x(64)
    f(x)
    gc.collect()
    n = xb._resident.handles if hasattr(xb, "_resident") else None
    f.clear()
    gc.collect()
    if n is not None:
        assert xb._resident.handles < n
    np.testing.assert_array_equal(np.asarray(f(x)), np.asarray(xp.exp(x) + 1))
    assert f.traces == 2


def test_threads_share_a_compiled_function(gpu):
    with vyre.use(gpu):
        f = vyre.compile(lambda x: xp.tanh(x) * 2 + xp.sum(x))
        xs = [_x(64, k) for k in range(8)]
        want = [np.asarray(xp.tanh(x) * 2 + xp.sum(x)) for x in xs]

        def work(k):
            for _ in range(5):
                np.testing.assert_array_equal(np.asarray(f(xs[k])), want[k])

        run_in_threads(work, 8)
        assert f.replays + f.traces == 40 and 1 <= f.traces <= 8
