"""run_pipeline_on with vector buffers: a vecN pipeline buffer of n elements is an array of n * N scalars
(inputs as they are, intermediates and outputs allocated so); vec3 (padded in storage) is refused with a
typed error before any GPU work. On both backends, vs numpy."""

from __future__ import annotations

import numpy as np
import pytest

from vyre import array as xp
from vyre.backends.schedule import BufferSpec, Pipeline, Step
from vyre.errors import DispatchError
from vyre.ir.builder import ProgramBuilder
from vyre.ir.types import DataType
from vyre.ops.registry import get


def test_vec4_input(xb):
    """reduce.sum loads vec4 when the rows are contiguous and a multiple of 4 long."""
    pipe = get("reduce.sum").build(shape=(6, 64), dtype="i32", axis=1)
    assert pipe.buffers["x"].dtype.lanes == 4
    xn = np.arange(-200, 184, dtype=np.int32).reshape(6, 64)
    (out,) = xp.run_pipeline_on(pipe, [xp.asarray(xn) * 3])  # a pending input, evaluated in the submission
    assert out.shape == (6,) and np.array_equal(np.asarray(out), (xn * 3).sum(axis=1))
    f = np.random.default_rng(0).standard_normal(1 << 12).astype(np.float32)
    (s,) = xp.run_pipeline_on(get("reduce.sum").build(shape=(f.size,), dtype="f32"), [xp.asarray(f)])
    assert abs(float(s) - float(f.astype(np.float64).sum())) <= 1e-4 * np.abs(f).sum()


def _vec_program(lanes: int) -> Pipeline:
    """out[i] = x[i] * 2 over vec<lanes><f32> buffers."""
    t = DataType.vector(DataType.F32, lanes)
    b = ProgramBuilder(f"vec{lanes}_double", 64)
    x = b.buffer("x", t)
    out = b.buffer("out", t, "write")
    b.set_grid_from(out)
    i = b.global_index()
    with b.if_(i < out.len()):
        out[i] = x[i] * b.lit(2.0, "f32")
    prog = b.build()
    return Pipeline(f"vec{lanes}_double", {"x": BufferSpec(t, 5), "out": BufferSpec(t, 5)}, ("x",), ("out",),
                    (Step(prog, ("x", "out"), (1, 1, 1)),))


def test_vec_outputs_and_sizes(xb):
    x = np.arange(20, dtype=np.float32)
    for lanes in (2, 4):
        pipe = _vec_program(lanes)
        (out,) = xp.run_pipeline_on(pipe, [xp.asarray(x[: 5 * lanes])])
        assert out.shape == (5, lanes)  # n elements of N lanes
        assert np.array_equal(np.asarray(out), (x[: 5 * lanes] * 2).reshape(5, lanes))
    with pytest.raises(DispatchError, match="wants 20 x f32"):
        xp.run_pipeline_on(_vec_program(4), [xp.asarray(x[:5])])
    with pytest.raises(DispatchError, match="wants 20 x f32"):
        xp.run_pipeline_on(_vec_program(4), [xp.asarray(x.astype(np.int32))])


def test_vec3_refused(xb):
    with pytest.raises(DispatchError, match="padded"):
        xp.run_pipeline_on(_vec_program(3), [xp.asarray(np.zeros(15, np.float32))])
