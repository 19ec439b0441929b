"""Focused tests of the elementwise ops (map.*, zip.*, nn.gelu/silu, bits.*) beyond the witnesses."""

from __future__ import annotations

import numpy as np
import pytest

import vyre.ops
from vyre.errors import DispatchError
from vyre.ir.types import DataType
from vyre.ops.elementwise import _kernel
from vyre.ops.registry import get

from gpu_policy import skip_or_fail

I32_MIN = np.int32(-(2**31))


@pytest.fixture(params=["reference", "gpu"])
def backend(request):
    return request.getfixturevalue(request.param)


# ----------------------------------------------------------------------------- known values
def test_unary_known_values(backend):
    x = np.array([0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 0.0, 7.25], np.float32)
    np.testing.assert_array_equal(vyre.ops.map_round(backend, x), [0, 2, 2, -0.0, -2, -2, 0, 7])
    np.testing.assert_array_equal(vyre.ops.map_floor(backend, x), np.floor(x))
    np.testing.assert_array_equal(vyre.ops.map_fract(backend, x), x - np.floor(x))
    neg = vyre.ops.map_neg(backend, np.array([0.0, -0.0, 1.0], np.float32))
    assert list(np.signbit(neg)) == [True, False, True]
    np.testing.assert_array_equal(vyre.ops.map_abs(backend, np.array([I32_MIN, -5, 5], np.int32)), [I32_MIN, 5, 5])
    np.testing.assert_array_equal(vyre.ops.map_neg(backend, np.array([I32_MIN, 3], np.int32)), [I32_MIN, -3])
    np.testing.assert_array_equal(vyre.ops.map_sign(backend, np.array([-0.0, 0.0, -3, 4], np.float32)), [0, 0, -1, 1])
    np.testing.assert_array_equal(vyre.ops.map_not(backend, np.array([0, 0xF0F0F0F0], np.uint32)),
                                  [0xFFFFFFFF, 0x0F0F0F0F])
    np.testing.assert_array_equal(vyre.ops.map_not(backend, np.array([True, False])), [False, True])
    np.testing.assert_allclose(vyre.ops.map_exp(backend, np.array([0.0, 1.0], np.float32)), [1.0, np.e], rtol=1e-6)
    np.testing.assert_allclose(vyre.ops.map_tanh(backend, np.array([-100, 0, 100], np.float32)), [-1, 0, 1])


def test_integer_semantics(backend):
    i = lambda *v: np.array(v, np.int32)  # noqa: E731
    u = lambda *v: np.array(v, np.uint32)  # noqa: E731
    np.testing.assert_array_equal(vyre.ops.zip_add(backend, u(0xFFFFFFFF, 5), u(1, 6)), [0, 11])
    np.testing.assert_array_equal(vyre.ops.zip_mul(backend, i(2**30, -3), i(4, 5)), [0, -15])
    np.testing.assert_array_equal(vyre.ops.zip_div(backend, i(I32_MIN, 7, -7, 9), i(-1, 0, 2, -2)),
                                  [I32_MIN, 7, -3, -4])
    np.testing.assert_array_equal(vyre.ops.zip_rem(backend, i(I32_MIN, 7, -7, 9), i(-1, 0, 2, -2)), [0, 0, -1, 1])
    np.testing.assert_array_equal(vyre.ops.zip_div(backend, u(7, 9), u(0, 2)), [7, 4])
    np.testing.assert_array_equal(vyre.ops.zip_shl(backend, u(1, 1, 3), u(33, 31, 0)), [2, 0x80000000, 3])
    np.testing.assert_array_equal(vyre.ops.zip_shr(backend, i(-8, -8, 256), i(1, 33, -1)), [-4, -4, 0])
    np.testing.assert_array_equal(vyre.ops.zip_shr(backend, u(0x80000000), u(31)), [1])


def test_comparisons_give_bool(backend):
    x = np.arange(8, dtype=np.float32)
    out = vyre.ops.zip_lt(backend, x, np.float32(3.5))
    assert out.dtype == np.bool_ and out.shape == (8,)
    np.testing.assert_array_equal(out, x < 3.5)
    assert vyre.ops.zip_eq(backend, np.array([-0.0], np.float32), np.array([0.0], np.float32))[0]


@pytest.mark.parametrize("sx,sy", [((3, 1), (1, 4)), ((), (7,)), ((6,), ()), ((2, 1, 3, 1, 2), (1, 4, 1, 5, 1)),
                                   ((4, 8), (8,)), ((5, 1), (5, 12)), ((2, 3, 4), (2, 3, 4)), ((0, 3), (3,))])
def test_broadcasting_matches_numpy(backend, sx, sy):
    r = np.random.default_rng(7)
    x = r.integers(-1000, 1000, sx).astype(np.int32)
    y = r.integers(-1000, 1000, sy).astype(np.int32)
    out = vyre.ops.zip_sub(backend, x, y)
    assert out.shape == np.broadcast_shapes(sx, sy)
    np.testing.assert_array_equal(out, x - y)


def test_activations_known_values(backend):
    x = np.array([0.0, 1.0, -1.0, 3.0], np.float32)
    # tanh approximation: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
    np.testing.assert_allclose(vyre.ops.nn_gelu(backend, x), [0.0, 0.8411920, -0.1588080, 2.9963627], rtol=1e-5)
    np.testing.assert_allclose(vyre.ops.nn_silu(backend, x), [0.0, 0.7310586, -0.2689414, 2.8577223], rtol=1e-5)
    big = vyre.ops.nn_gelu(backend, np.array([-1e30, 1e30, np.inf], np.float32))
    np.testing.assert_array_equal(big, np.array([-0.0, 1e30, np.inf], np.float32))


def test_bits_known_values(backend):
    x = np.array([0, 1, 0xFFFFFFFF, 0x80000000, 0x0000F000], np.uint32)
    np.testing.assert_array_equal(vyre.ops.bits_popcount(backend, x), [0, 1, 32, 1, 4])
    np.testing.assert_array_equal(vyre.ops.bits_reverse(backend, x), [0, 0x80000000, 0xFFFFFFFF, 1, 0x000F0000])
    np.testing.assert_array_equal(vyre.ops.bits_clz(backend, x), [32, 31, 0, 0, 16])
    np.testing.assert_array_equal(vyre.ops.bits_ctz(backend, x), [32, 0, 0, 31, 12])


def test_f16_on_the_gpu(gpu):
    if "shader-f16" not in gpu.features:
        skip_or_fail("no shader-f16")
    x = np.linspace(-4, 4, 64).astype(np.float16)
    out = vyre.ops.map_exp(gpu, x)
    assert out.dtype == np.float16
    np.testing.assert_allclose(out, np.exp(x.astype(np.float64)), rtol=1e-3)
    np.testing.assert_array_equal(vyre.ops.zip_mul(gpu, x, x[::-1].copy()), x * x[::-1])


def test_empty_arrays(backend):
    out = vyre.ops.map_neg(backend, np.zeros(0, np.float32))
    assert out.shape == (0,) and out.dtype == np.float32


# ----------------------------------------------------------------------------- kernel plans
def _buffers(op_id, **params):
    (program,) = get(op_id).build(**params).programs
    return {b.name: b.dtype for b in program.buffers}


def test_vec4_path_when_the_inner_dim_allows():
    assert _buffers("map.exp", shape=(1000,), dtype="f32") == {"x": DataType.VEC4_F32, "out": DataType.VEC4_F32}
    assert _buffers("map.exp", shape=(1001,), dtype="f32") == {"x": DataType.F32, "out": DataType.F32}
    assert _buffers("map.exp", shape=(8,), dtype="f16")["x"] == DataType.VEC4_F16
    # a row vector broadcast against a matrix: both vec4; a column: one value per vec4
    assert _buffers("zip.add", shape_x=(3, 8), shape_y=(8,), dtype="f32")["y"] == DataType.VEC4_F32
    assert _buffers("zip.add", shape_x=(3, 8), shape_y=(3, 1), dtype="f32")["y"] == DataType.F32
    # comparisons load vec4 and store bools lane by lane; bool inputs are never vectorized
    assert _buffers("zip.lt", shape_x=(8,), shape_y=(8,), dtype="i32") == {
        "x": DataType.VEC4_I32, "y": DataType.VEC4_I32, "out": DataType.BOOL}
    assert _buffers("map.not", shape=(8,), dtype="bool")["x"] == DataType.BOOL


def test_layout_coalesces_dims():
    lay = _kernel.layout([(2, 3, 4), (2, 3, 4)])
    assert lay.dims == (24,) and lay.strides == ((1,), (1,)) and lay.lanes == 4
    lay = _kernel.layout([(5, 1, 7), (5, 3, 1)])
    assert lay.out_shape == (5, 3, 7) and lay.dims == (5, 3, 7)
    assert lay.strides == ((7, 0, 1), (3, 1, 0)) and lay.lanes == 1
    lay = _kernel.layout([(2, 3, 1, 8), (3, 5, 1)])
    assert lay.dims == (2, 3, 5, 8) and lay.strides == ((24, 8, 0, 1), (0, 5, 1, 0)) and lay.lanes == 4
    lay = _kernel.layout([(4, 6, 8), (1, 1, 8)])  # x walks (4, 6) contiguously, y broadcasts over both
    assert lay.dims == (24, 8) and lay.strides == ((8, 1), (0, 1))
    assert _kernel.layout([(1,), ()]).dims == (1,)


def test_same_shape_programs_do_not_depend_on_the_size():
    fp = lambda n: get("zip.add").build(shape_x=(n,), shape_y=(n,), dtype="f32").programs[0].fingerprint  # noqa: E731
    assert fp(1000) == fp(4096) != fp(1001)
    assert fp(1001) == fp(3)


# ----------------------------------------------------------------------------- params
def test_params_errors(reference):
    f = np.ones(4, np.float32)
    with pytest.raises(DispatchError, match="one dtype") as e:
        vyre.ops.zip_add(reference, f, np.ones(4, np.int32))
    assert "astype" in e.value.fix
    with pytest.raises(DispatchError, match="do not broadcast"):
        vyre.ops.zip_add(reference, f, np.ones(3, np.float32))
    with pytest.raises(DispatchError, match="float32, float16"):
        vyre.ops.map_sqrt(reference, np.ones(4, np.int32))
    with pytest.raises(DispatchError, match="float64"):
        vyre.ops.map_neg(reference, np.ones(4))
    with pytest.raises(DispatchError, match="uint32"):
        vyre.ops.bits_popcount(reference, np.ones(4, np.int32))
    with pytest.raises(DispatchError):
        vyre.ops.zip_pow(reference, np.ones(4, np.int32), np.ones(4, np.int32))
