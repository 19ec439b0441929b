"""Reductions are deferred into the submission of whatever reads them first: ``float(x.sum())`` is one
submission and one wait (the reduction and the download together), and a deferred reduction keeps the
values of its inputs as they were when it was called (numpy's results), on both backends."""

from __future__ import annotations

import gc

import numpy as np
import pytest

import vyre
from vyre import array_api as xp


def _submits(backend) -> int | None:
    """Queue submissions so far (the GPU's own counter; None on the reference backend)."""
    return backend.stats()["submits"] if backend.name == "wgpu" else None


def _one_submission(backend, fn):
    """``fn()``'s result, asserting it cost one array-level submission (and one queue submit on the GPU)."""
    s0, f0 = _submits(backend), xp.fusion_stats()["submissions"]
    out = fn()
    assert xp.fusion_stats()["submissions"] - f0 == 1
    if s0 is not None:
        assert _submits(backend) - s0 == 1
    return out


def test_scalar_conversions_are_one_round_trip(xb):
    an = np.arange(1, 301, dtype=np.float32)
    a, b = xp.asarray(an), xp.asarray(np.full(300, 0.5, np.float32))
    ints = xp.asarray(np.arange(-50, 250, dtype=np.int32))
    float((a * b).sum())  # warm: programs built, parameter buffers cached
    assert _one_submission(xb, lambda: float((a * b).sum())) == float((an * 0.5).sum())
    assert _one_submission(xb, lambda: int(ints.sum())) == int(np.arange(-50, 250).sum())
    assert _one_submission(xb, lambda: bool(ints.max() > 200)) is True
    assert _one_submission(xb, lambda: float(xp.mean(a))) == pytest.approx(an.mean(), rel=1e-6)
    got = _one_submission(xb, lambda: np.asarray(xp.min(a * -1.0)))
    assert got.shape == () and got == -300.0
    rows = _one_submission(xb, lambda: np.asarray(xp.sum(xp.reshape(a, (3, 100)), axis=1)))
    np.testing.assert_allclose(rows, an.reshape(3, 100).sum(axis=1), rtol=1e-6)


def test_a_pending_elementwise_result_downloads_in_its_submission(xb):
    x = xp.asarray(np.arange(8, dtype=np.int32))
    np.asarray(x * 3 - 1)
    got = _one_submission(xb, lambda: np.asarray(x * 3 - 1))
    np.testing.assert_array_equal(got, np.arange(8) * 3 - 1)


def test_deferred_reduction_feeds_an_expression(xb):
    xn = np.arange(1, 9, dtype=np.float32)
    x = xp.asarray(xn)
    y = x / x.sum()  # the reduction runs in y's submission, before y's kernel
    np.testing.assert_allclose(_one_submission(xb, lambda: np.asarray(y)), xn / xn.sum(), rtol=1e-6)


def test_deferred_reduction_keeps_its_input_values(xb):
    xn = np.arange(10, dtype=np.float32)
    x = xp.asarray(xn)
    s1, s2, s3 = x.sum(), xp.max(x), xp.sum(x * 2)
    x += 100  # a new buffer for x
    assert float(s1) == 45.0
    s4 = x.sum()
    x[...] = 0.0  # in place, unless deferred work reads the buffer (it does: copy first)
    x[2:4] = 7.0
    assert float(s2) == 9.0 and float(s3) == 90.0 and float(s4) == 1045.0
    np.testing.assert_array_equal(np.asarray(x), np.where((np.arange(10) >= 2) & (np.arange(10) < 4), 7, 0))


def test_deferred_reduction_and_a_kernel_launch(xb):
    @vyre.kernel
    def bump(v: vyre.InOut[vyre.i32]):
        i = vyre.tid()
        v[i] = v[i] + 1000

    x = xp.asarray(np.arange(5, dtype=np.int32))
    s = x.sum()
    bump[5](x)
    assert int(s) == 10 and int(x.sum()) == 5010


def test_evaluate_then_read(xb):
    s = xp.asarray(np.ones(7, np.float32)).sum()
    assert s.is_lazy
    s.evaluate()
    assert not s.is_lazy
    assert float(s) == 7.0


def test_unread_reductions_free_their_buffers(xb):
    def count() -> int:
        return xb.stats()["resident"]["handles"] if xb.name == "wgpu" else xb._resident.handles

    x = xp.asarray(np.ones(100_000, np.float32))  # a tree reduction with a partials buffer
    float(x.sum())
    gc.collect()
    start = count()
    for _ in range(5):
        s = (x * 2).sum()
        del s
    gc.collect()
    assert count() == start


# ---- op-library pipelines (run_pipeline_on) are deferred the same way ------------------------------

def _pipe(name: str, outputs: tuple[str, ...], in_place: bool = False):
    """x (f32, 6) -> y = x * 2 and z = x + 1 (with ``in_place``, x itself is doubled too)."""
    from vyre.backends.schedule import BufferSpec, Pipeline, Step
    from vyre.ir.builder import ProgramBuilder
    from vyre.ir.types import DataType

    b = ProgramBuilder(name, 64)
    x = b.buffer("x", "f32", "read_write" if in_place else "read")
    y, z = b.buffer("y", "f32", "write"), b.buffer("z", "f32", "write")
    b.set_grid_from(y)
    i = b.global_index()
    with b.if_(i < y.len()):
        v = b.let(x[i])
        y[i] = v * b.lit(2.0, "f32")
        z[i] = v + b.lit(1.0, "f32")
        if in_place:
            x[i] = v * b.lit(2.0, "f32")
    spec = {k: BufferSpec(DataType.F32, 6) for k in "xyz"}
    return Pipeline(name, spec, ("x",), outputs, (Step(b.build(), ("x", "y", "z"), (1, 1, 1)),))


def test_argmax_is_one_round_trip(xb):
    x = xp.asarray(np.array([3, 9, 2, 9, 1], np.int32))
    int(x.argmax())
    assert _one_submission(xb, lambda: int((x * -1).argmax())) == 4
    assert _one_submission(xb, lambda: int(x.argmax())) == 1


def test_pipeline_inputs_are_captured_at_the_call(xb):
    xn = np.arange(6, dtype=np.float32)
    x = xp.asarray(xn)
    y, z = xp.run_pipeline_on(_pipe("two_outputs", ("y", "z")), [x])
    assert y.is_lazy and z.is_lazy  # deferred
    x[...] = 100.0  # in place unless the deferred run reads the buffer (it does: x moves to a copy)
    x += 1
    xp.reset_fusion_stats()
    np.testing.assert_array_equal(np.asarray(z), xn + 1)  # z first: the run fills y too
    np.testing.assert_array_equal(np.asarray(y), xn * 2)
    assert xp.fusion_stats()["kernels_dispatched"] == 1  # one run for both outputs
    np.testing.assert_array_equal(np.asarray(x), np.full(6, 101, np.float32))


def test_pipeline_writing_its_input_works_on_a_copy(xb):
    xn = np.arange(6, dtype=np.float32)
    x = xp.asarray(xn) + 0  # pending: computed in the same submission
    (xo, y) = xp.run_pipeline_on(_pipe("in_place", ("x", "y"), in_place=True), [x])
    np.testing.assert_array_equal(np.asarray(xo), xn * 2)
    np.testing.assert_array_equal(np.asarray(y), xn * 2)
    np.testing.assert_array_equal(np.asarray(x), xn)  # the caller's array never changes


def test_pipeline_returning_an_unwritten_input(xb):
    x = xp.asarray(np.arange(6, dtype=np.float32))
    (same,) = xp.run_pipeline_on(_pipe("echo", ("x",)), [x])  # nothing to defer: runs at once
    np.testing.assert_array_equal(np.asarray(same), np.arange(6))


def test_unread_pipeline_outputs_are_freed(xb):
    def count() -> int:
        return xb.stats()["resident"]["handles"] if xb.name == "wgpu" else xb._resident.handles

    x = xp.asarray(np.arange(6, dtype=np.float32))
    np.asarray(xp.run_pipeline_on(_pipe("unread", ("y", "z")), [x])[0])
    gc.collect()
    start = count()
    for _ in range(3):
        outs = xp.run_pipeline_on(_pipe("unread", ("y", "z")), [x])
        del outs  # never read: the deferred run and its buffers go (a reference cycle until collected)
    gc.collect()
    assert count() == start
