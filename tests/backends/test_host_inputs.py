"""Bad host inputs fail with a typed vyre error on both backends, before any GPU work."""

from __future__ import annotations

import numpy as np
import pytest

import vyre
from vyre.errors import DispatchError

BACKENDS = ["gpu", "reference"]


@pytest.fixture(params=BACKENDS)
def backend(request):
    return request.getfixturevalue(request.param)


def test_upload_resident_object_array_is_a_dispatch_error(backend):
    h = backend.allocate_resident(16)
    try:
        backend.upload_resident(h, np.arange(4, dtype=np.uint32))
        with pytest.raises(DispatchError, match="Python objects") as exc:
            backend.upload_resident(h, np.array([object()] * 4))
        assert exc.value.fix
        with pytest.raises(DispatchError, match="Python objects"):
            backend.upload_resident_many([(h, np.array([object()] * 4), 0)])
        # the buffer and its contents are untouched
        np.testing.assert_array_equal(backend.download_resident(h).view(np.uint32), np.arange(4))
    finally:
        backend.free_resident(h)


# --------------------------------------------------------------------------- DispatchConfig

BAD_CONFIGS = [
    {"grid": -1}, {"grid": (1, 1, 1, 1)}, {"grid": 1.5}, {"grid": (2, 0.5)}, {"grid": True}, {"grid": "4"},
    {"grid": 10**10}, {"grid": (2**16, 2**16, 2)}, {"grid": 2**32}, {"counts": {"o": 2.5}}, {"counts": {"o": -1}},
    {"counts": [1]}, {"label": 3}, {"nope": 1},
]


@pytest.mark.parametrize("fields", BAD_CONFIGS, ids=repr)
def test_dispatch_config_bad_field_is_a_dispatch_error(fields):
    with pytest.raises(DispatchError) as exc:
        vyre.DispatchConfig(**fields)
    assert exc.value.fix
    with pytest.raises(DispatchError):
        vyre.DispatchConfig.model_validate(fields)


def test_dispatch_config_accepts_ints_tuples_and_the_largest_grid():
    assert vyre.DispatchConfig(grid=np.int64(5)).grid == (5, 1, 1)
    assert vyre.DispatchConfig(grid=[2, 3]).grid == (2, 3, 1)
    assert vyre.DispatchConfig(grid=(2**32 - 1, 1, 1)).grid == (2**32 - 1, 1, 1)
    assert vyre.DispatchConfig(counts={"o": np.uint32(7)}).counts == {"o": 7}


def _double():
    b = vyre.ProgramBuilder("double", workgroup_size=4)
    a = b.buffer("a", "u32", "read")
    o = b.buffer("o", "u32", "write")
    i = b.global_index()
    with b.if_(i < a.len()):
        o[i] = a[i] * 2
    return b.build()


@pytest.mark.parametrize("grid", [2, (2,), (2, 1, 1), [1, 2]])
def test_bare_grid_as_config_on_every_path(backend, grid):
    prog = _double()
    a = np.arange(8, dtype=np.uint32)
    (out,) = backend.dispatch(prog, [a], grid)
    np.testing.assert_array_equal(out, a * 2)
    (out,) = backend.dispatch_batch([(prog, [a], grid)])[0]
    np.testing.assert_array_equal(out, a * 2)
    ha, ho = backend.allocate_resident(32), backend.allocate_resident(32)
    try:
        backend.upload_resident(ha, a)
        backend.dispatch_resident(prog, [ha, ho], grid)
        np.testing.assert_array_equal(backend.download_resident(ho).view(np.uint32), a * 2)
        backend.upload_resident(ho, np.zeros(8, np.uint32))
        backend.dispatch_resident_sequence([(prog, [ha, ho], grid)])
        np.testing.assert_array_equal(backend.download_resident(ho).view(np.uint32), a * 2)
    finally:
        backend.free_resident(ha)
        backend.free_resident(ho)


@pytest.mark.parametrize("bad", [-1, 1.5, (1, 1, 1, 1), 10**10, {"grid": 10**10}, "x", frozenset({1})], ids=repr)
def test_bad_config_is_a_dispatch_error_on_every_path(backend, bad):
    prog = _double()
    a = np.arange(8, dtype=np.uint32)
    with pytest.raises(DispatchError):
        backend.dispatch(prog, [a], bad)
    with pytest.raises(DispatchError):
        backend.compile(prog, bad)
    (res,) = backend.dispatch_batch([(prog, [a], bad)])
    assert isinstance(res, DispatchError)
    ha, ho = backend.allocate_resident(32), backend.allocate_resident(32)
    try:
        backend.upload_resident(ha, a)
        backend.upload_resident(ho, a)
        with pytest.raises(DispatchError):
            backend.dispatch_resident(prog, [ha, ho], bad)
        with pytest.raises(DispatchError):
            backend.dispatch_resident_sequence([(prog, [ha, ho])] + [(prog, [ha, ho], bad)])
        # nothing held is lost: both buffers still hold their data
        np.testing.assert_array_equal(backend.download_resident(ho).view(np.uint32), a)
        np.testing.assert_array_equal(backend.download_resident(ha).view(np.uint32), a)
    finally:
        backend.free_resident(ha)
        backend.free_resident(ho)


@pytest.mark.parametrize("bad", [-1, 10**10, (1, 1, 1, 1)], ids=repr)
def test_bad_config_async_and_timed_on_gpu(gpu, bad):
    prog = _double()
    a = np.arange(8, dtype=np.uint32)
    with pytest.raises(DispatchError):
        gpu.dispatch_async(prog, [a], bad)
    with pytest.raises(DispatchError):
        gpu.dispatch_timed(prog, [a], bad)


# --------------------------------------------------------------------------- host arrays


def _scale(access):
    b = vyre.ProgramBuilder("scale", workgroup_size=4)
    x = b.buffer("x", "f32")
    k = b.buffer("k", "f32", access, count=1)
    o = b.buffer("o", "f32", "write")
    i = b.global_index()
    with b.if_(i < x.len()):
        o[i] = x[i] * k[0]
    return b.build()


@pytest.mark.parametrize("access", ["uniform", "read"])
@pytest.mark.parametrize("k", [2.0, 2, np.float32(2.0), np.array(2.0, np.float32)], ids=repr)
def test_scalar_for_a_count_one_buffer(backend, access, k):
    x = np.arange(8, dtype=np.float32)
    (out,) = backend.dispatch(_scale(access), [x, k])
    np.testing.assert_array_equal(out, x * 2)


@pytest.mark.parametrize(
    "k", [True, np.float64(2.0), 2**200, 10**400, "2"], ids=["True", "f64", "2**200", "10**400", "str"])
def test_scalar_of_the_wrong_type_is_a_dispatch_error(backend, k):
    with pytest.raises(DispatchError) as exc:
        backend.dispatch(_scale("uniform"), [np.arange(8, dtype=np.float32), k])
    assert exc.value.fix


def test_python_scalar_checks_the_range_of_integer_buffers(backend):
    b = vyre.ProgramBuilder("ints", workgroup_size=4)
    k = b.buffer("k", "u32", "uniform", count=1)
    o = b.buffer("o", "u32", "write", count=4)
    o[b.global_index()] = k[0]
    prog = b.build()
    (out,) = backend.dispatch(prog, [7], vyre.DispatchConfig(grid=1))
    np.testing.assert_array_equal(out, [7] * 4)
    for bad in (-1, 2**32, 1.5, True):
        with pytest.raises(DispatchError, match="does not fit"):
            backend.dispatch(prog, [bad], vyre.DispatchConfig(grid=1))


def _vec_copy():
    b = vyre.ProgramBuilder("vcopy", workgroup_size=4)
    x = b.buffer("x", "vec4<f32>")
    o = b.buffer("o", "vec4<f32>", "write")
    i = b.global_index()
    with b.if_(i < x.len()):
        o[i] = x[i]
    return b.build()


@pytest.mark.parametrize("shape", [(2, 5, 4), (1, 10, 4), (10, 2, 2), (40, 1), (6,), ()], ids=repr)
def test_vector_buffer_refuses_other_shapes(backend, shape):
    arr = np.zeros(shape, dtype=np.float32)
    with pytest.raises(DispatchError, match=r"takes shape \(n, 4\) or a flat array"):
        backend.dispatch(_vec_copy(), [arr])


@pytest.mark.parametrize("shape", [(10, 4), (40,)], ids=repr)
def test_vector_buffer_accepts_documented_shapes(backend, shape):
    arr = np.arange(40, dtype=np.float32).reshape(shape)
    (out,) = backend.dispatch(_vec_copy(), [arr])
    np.testing.assert_array_equal(out, arr.reshape(10, 4))
