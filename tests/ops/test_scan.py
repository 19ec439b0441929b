"""Focused tests of scan.inclusive / scan.exclusive beyond the witnesses: known values, the
level layout, program reuse across lengths, the convenience layer and parameter errors."""

from __future__ import annotations

import numpy as np
import pytest

import vyre.ops
from vyre.errors import DispatchError
from vyre.ops.registry import get
from vyre.ops.scan import _tiles

BACKENDS = ["reference", "gpu"]
TILE = _tiles.TILE


@pytest.fixture(params=BACKENDS)
def backend(request):
    return request.getfixturevalue(request.param)


def test_known_values(backend):
    x = np.array([3, 1, 4, 1, 5], np.int32)
    np.testing.assert_array_equal(vyre.ops.scan_inclusive(backend, x), [3, 4, 8, 9, 14])
    np.testing.assert_array_equal(vyre.ops.scan_exclusive(backend, x), [0, 3, 4, 8, 9])


@pytest.mark.parametrize("n", [1, 255, 257, TILE - 1, TILE, TILE + 1, 3 * TILE + 5, 70_000])
def test_ones_give_positions(backend, n):
    x = np.ones(n, np.uint32)
    np.testing.assert_array_equal(vyre.ops.scan_inclusive(backend, x), np.arange(1, n + 1, dtype=np.uint32))
    np.testing.assert_array_equal(vyre.ops.scan_exclusive(backend, x), np.arange(n, dtype=np.uint32))


def test_flattens_like_cumsum(backend):
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    got = vyre.ops.scan_inclusive(backend, x)
    assert got.shape == (12,) and got.dtype == np.float32
    np.testing.assert_array_equal(got, np.cumsum(x))


def test_wraps(backend):
    x = np.array([0xFFFFFFFF, 2, 0xFFFFFFFF], np.uint32)
    np.testing.assert_array_equal(vyre.ops.scan_inclusive(backend, x), [0xFFFFFFFF, 1, 0])
    y = np.array([2**31 - 1, 1, -1], np.int32)
    np.testing.assert_array_equal(vyre.ops.scan_inclusive(backend, y), [2**31 - 1, -(2**31), 2**31 - 1])


def test_inf_propagates_forward_only(backend):
    x = np.ones(3000, np.float32)
    x[2000] = np.inf
    got = vyre.ops.scan_inclusive(backend, x)
    np.testing.assert_array_equal(got[:2000], np.arange(1, 2001, dtype=np.float32))
    assert np.all(np.isposinf(got[2000:]))


def test_levels_and_steps():
    assert [_tiles.levels(n) for n in (1, TILE, TILE + 1, TILE**2, TILE**2 + 1)] == [1, 1, 2, 2, 3]
    for n, steps in ((1, 1), (TILE, 1), (TILE + 1, 3), (TILE**2 + 1, 5)):
        assert len(get("scan.inclusive").build(n=n, dtype="u32").steps) == steps


def test_one_program_per_kind_and_type():
    # runtime-sized buffers: lengths share compiled programs
    fps = set()
    for n in (5, 1000, TILE + 1, 50_000, TILE**2 + 1):
        fps |= {p.fingerprint for p in get("scan.exclusive").build(n=n, dtype="f32").programs}
    assert len(fps) == 2  # the tile scan and the tile sums


def test_programs_within_limits():
    for p in get("scan.inclusive").build(n=TILE**2 + 1, dtype="i32").programs:
        assert p.workgroup_invocations <= 256
        assert sum(d.count * 4 for d in p.workgroup) <= 16 * 1024


def test_params_errors(reference):
    with pytest.raises(DispatchError) as e:
        vyre.ops.scan_inclusive(reference, np.ones(3, np.int64))
    assert e.value.fix
    with pytest.raises(DispatchError):
        vyre.ops.scan_exclusive(reference, np.zeros(0, np.float32))
    with pytest.raises(ValueError):
        get("scan.inclusive").build(n=0, dtype="u32")
    with pytest.raises(ValueError):
        get("scan.inclusive").build(n=4, dtype="f16")
