"""Focused tests of the memory ops (gather, scatter, scatter_add, transpose) beyond the witnesses."""

from __future__ import annotations

import numpy as np
import pytest

import vyre.ops
from vyre.errors import DispatchError
from vyre.ops.registry import get

BACKENDS = ["reference", "gpu"]


@pytest.fixture(params=BACKENDS)
def backend(request):
    return request.getfixturevalue(request.param)


def test_gather_known_values_out_of_range_is_zero(backend):
    src = np.array([10.5, -0.0, np.inf], np.float32)
    out = vyre.ops.memory_gather(backend, src, np.array([2, 0, 3, 0xFFFFFFFF, 1], np.uint32))
    np.testing.assert_array_equal(out, [np.inf, 10.5, 0.0, 0.0, -0.0])
    assert np.signbit(out[4])
    signed = vyre.ops.memory_gather(backend, np.array([1, 2, 3], np.int32), np.array([-1, 1, -(2**31), 2], np.int32))
    np.testing.assert_array_equal(signed, [0, 2, 0, 3])


def test_scatter_known_values(backend):
    src = np.array([1, 2, 3, 4], np.int32)
    out = vyre.ops.memory_scatter(backend, src, np.array([3, 0, 9, 5], np.uint32), size=6)
    np.testing.assert_array_equal(out, [2, 0, 0, 1, 0, 4])  # index 9 is dropped, gaps are 0


def test_scatter_rejects_duplicates():
    with pytest.raises(DispatchError, match="duplicate") as err:
        vyre.ops.memory_scatter(None, np.arange(3, dtype=np.float32), np.array([1, 1, 0], np.uint32))
    assert "scatter_add" in err.value.fix
    # duplicates that fall out of range are dropped, so they are allowed
    get("memory.scatter").params_for(np.arange(3, dtype=np.float32), np.array([5, 5, 0], np.uint32), size=2)


def test_scatter_add_duplicates_wrap(backend):
    src = np.array([0xFFFFFFFF, 2, 5, 0x80000000, 0x80000000], np.uint32)
    idx = np.array([0, 0, 7, 1, 1], np.uint32)
    out = vyre.ops.memory_scatter_add(backend, src, idx, size=3)
    np.testing.assert_array_equal(out, [1, 0, 0])  # 0xFFFFFFFF + 2 and 2 * 0x80000000 wrap; 7 is dropped
    out = vyre.ops.memory_scatter_add(backend, np.array([-5, 3, 2**31 - 1, 1], np.int32),
                                      np.array([1, 1, 0, 0], np.int32))
    np.testing.assert_array_equal(out, [-(2**31), -2, 0, 0])


def test_transpose_shapes(backend):
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    out = vyre.ops.memory_transpose(backend, x)
    assert out.shape == (3, 2) and out.dtype == np.float32
    np.testing.assert_array_equal(out, x.T)
    col = np.arange(40, dtype=np.uint32).reshape(40, 1)
    np.testing.assert_array_equal(vyre.ops.memory_transpose(backend, col), col.T)


def test_transpose_uses_padded_tiles():
    (program,) = get("memory.transpose").build(rows=33, cols=65, dtype="f32").programs
    assert program.workgroup_size[:2] == (32, 8)
    (tile,) = program.workgroup
    assert tile.count == 32 * 33  # one word of padding per tile row
    step = get("memory.transpose").build(rows=33, cols=65, dtype="f32").steps[0]
    assert step.grid == (3, 2, 1)


def test_param_errors():
    with pytest.raises(DispatchError, match="dtype float64"):
        get("memory.gather").params_for(np.zeros(3), np.zeros(3, np.uint32))
    with pytest.raises(DispatchError, match="idx has dtype int64") as err:
        get("memory.gather").params_for(np.zeros(3, np.float32), np.zeros(3, np.int64))
    assert "np.uint32" in err.value.fix
    with pytest.raises(DispatchError, match="indices"):
        get("memory.scatter").params_for(np.zeros(3, np.float32), np.arange(2, dtype=np.uint32))
    with pytest.raises(DispatchError, match="supported: u32, i32"):
        get("memory.scatter_add").params_for(np.zeros(3, np.float32), np.arange(3, dtype=np.uint32))
    with pytest.raises(DispatchError, match="2-D"):
        get("memory.transpose").params_for(np.zeros(4, np.float32))
