"""The vec4 variant of fused elementwise programs (vyre/array/_kernels/vec4.py), on the reference backend and
the GPU, against numpy: every op with a vector form and dtype, ops computed lane by lane, mixed trees, and
the trees that must keep the scalar program (a size not a multiple of 4, views, bool, float16). Each test
asserts which program ran, so it fails if the vec4 path silently stops being taken.

Integers bit-exact; floats as tests/array/test_array_elementwise.py (numpy in float64 rounded to float32,
its (rtol, atol) per function; single correctly rounded ops exact)."""

from __future__ import annotations

import numpy as np
import pytest

import vyre
from vyre import array_api as xp
from vyre.array._kernels.vec4 import VEC_OPS, vectorizable

V4, SCALAR = "array_fused_v4", "array_fused"
RNG = np.random.default_rng(11)
TOL = {  # name: (rtol, atol), as in test_array_elementwise.py
    "sqrt": (5e-6, 1e-6), "exp": (5e-6, 1e-6), "log": (5e-6, 1e-6), "log2": (5e-6, 1e-6),
    "sin": (5e-6, 2e-6), "cos": (5e-6, 2e-6), "tan": (1e-5, 2e-6), "divide": (1e-6, 0), "reciprocal": (1e-6, 0),
}
FLOAT_FN = {  # float-only unary functions: numpy, input domain
    "sqrt": (np.sqrt, (0, 1000)), "exp": (np.exp, (-20, 20)), "log": (np.log, (0.01, 1000)),
    "log2": (np.log2, (0.01, 1000)), "sin": (np.sin, (-10, 10)), "cos": (np.cos, (-10, 10)),
    "tan": (np.tan, (-1.5, 1.5)), "reciprocal": (np.reciprocal, (0.5, 100)),
}
EXACT_UNARY = {"positive": np.positive, "negative": np.negative, "abs": np.abs, "square": np.square,
               "floor": np.floor, "ceil": np.ceil, "trunc": np.trunc, "round": np.round,
               "bitwise_invert": np.invert}
BINARY = {"add": np.add, "subtract": np.subtract, "multiply": np.multiply, "divide": np.divide,
          "maximum": np.maximum, "minimum": np.minimum, "bitwise_and": np.bitwise_and,
          "bitwise_or": np.bitwise_or, "bitwise_xor": np.bitwise_xor}
DTYPES = ("float32", "int32", "uint32")


def kernels(x) -> list[str]:
    """The names of the programs evaluating ``x`` would run (from its explain text)."""
    return [line.split(": ", 1)[1].split(" over ")[0] for line in x.explain().splitlines()
            if line.startswith("-- kernel")]


def ran(x, name: str) -> np.ndarray:
    """``x`` evaluated after checking it is one fused kernel named ``name``: one kernel, one submission."""
    assert kernels(x) == [name]
    before = xp.fusion_stats()
    got = np.asarray(x)
    after = xp.fusion_stats()
    assert after["kernels_dispatched"] - before["kernels_dispatched"] == 1
    assert after["submissions"] - before["submissions"] == 1
    return got


def values(dtype: str, n: int, lo: float = -100, hi: float = 100) -> np.ndarray:
    dt = np.dtype(dtype)
    if dt.kind == "f":
        return RNG.uniform(lo, hi, n).astype(dt)
    info = np.iinfo(dt)
    x = RNG.integers(info.min, info.max, n, dtype=np.int64, endpoint=True).astype(dt)
    x[:4] = [info.min, info.max, 0, 1]  # wrap-around at the ends
    return x


def test_whitelist_is_what_the_tests_cover():
    lanewise = {"sin", "cos", "tan"}  # their range reduction selects: run lane by lane in the vec4 program
    assert set(VEC_OPS) == set(EXACT_UNARY) | (set(FLOAT_FN) - lanewise) | set(BINARY) | {"astype"}


@pytest.mark.parametrize("name,dtype", [(n, d) for n in sorted(EXACT_UNARY) for d in DTYPES
                                        if not (n == "bitwise_invert" and d == "float32")])
def test_unary_exact(xb, name, dtype):
    x = values(dtype, 1024)
    if dtype == "float32":
        x[:10] = [0.0, -0.0, 0.5, 1.5, 2.5, -0.5, -2.5, np.inf, -np.inf, np.nan]
    got = ran(getattr(xp, name)(xp.asarray(x)), V4)
    with np.errstate(all="ignore"):
        want = EXACT_UNARY[name](x)
    assert got.dtype == x.dtype
    np.testing.assert_array_equal(got, want.astype(x.dtype), err_msg=name)


@pytest.mark.parametrize("name", sorted(FLOAT_FN))
def test_unary_float(xb, name):
    ref, (lo, hi) = FLOAT_FN[name]
    x = values("float32", 1024, lo, hi)
    got = ran(getattr(xp, name)(xp.asarray(x)), V4)
    rtol, atol = TOL[name]
    np.testing.assert_allclose(got, ref(x.astype(np.float64)), rtol=rtol, atol=atol, err_msg=name)


@pytest.mark.parametrize("dtype", ["int32", "uint32"])
def test_float_function_of_integers(xb, dtype):
    """Integer inputs of a float function are cast first (an astype node): still one vec4 kernel."""
    x = RNG.integers(0, 1000, 1024).astype(dtype)
    got = ran(xp.sqrt(xp.asarray(x)), V4)
    np.testing.assert_allclose(got, np.sqrt(x.astype(np.float64)), rtol=5e-6, atol=1e-6)


@pytest.mark.parametrize("name,dtype", [(n, d) for n in sorted(BINARY) for d in DTYPES
                                        if not (n.startswith("bitwise") and d == "float32")])
def test_binary(xb, name, dtype):
    dt = np.dtype(dtype)
    x, y = values(dtype, 1024), values(dtype, 1024)
    if name == "divide":
        y[y == 0] = 3
    if dt.kind == "f" and name in ("maximum", "minimum"):  # lane by lane, with their NaN test
        x[:3], y[:3] = [np.nan, 1.0, np.nan], [2.0, np.nan, np.nan]
    got = ran(getattr(xp, name)(xp.asarray(x), xp.asarray(y)), V4)
    with np.errstate(all="ignore"):
        want = BINARY[name](x, y) if name != "divide" else np.divide(x.astype(np.float64), y.astype(np.float64))
    if name in TOL:
        assert got.dtype == np.float32
        np.testing.assert_allclose(got, want, rtol=TOL[name][0], atol=TOL[name][1])
    else:
        assert got.dtype == dt
        np.testing.assert_array_equal(got, want.astype(dt), err_msg=name)


def _float_to_int(x: np.ndarray, dtype: str) -> np.ndarray:
    """vyre's float -> int conversion: toward zero, saturating, NaN -> 0."""
    info = np.iinfo(dtype)
    t = np.clip(np.trunc(np.nan_to_num(x.astype(np.float64), nan=0.0)), info.min, info.max)
    return t.astype(dtype)


def test_astype(xb):
    f = np.float32([np.nan, np.inf, -np.inf, 3e9, -3e9, 2.7, -2.7, 0.0, -0.0, 2147483520.0, 4294967040.0, 5e9])
    i = np.int32([-2**31, 2**31 - 1, -1, 0, 16777217, -16777217, 123456789, 7])
    u = i.view(np.uint32)
    cases = [(f, "int32", _float_to_int(f, "int32")), (f, "uint32", _float_to_int(f, "uint32")),
             (i, "uint32", u), (u, "int32", i), (i, "float32", i.astype(np.float32)),
             (u, "float32", u.astype(np.float32))]
    assert _float_to_int(f, "int32")[:8].tolist() == [0, 2**31 - 1, -2**31, 2**31 - 1, -2**31, 2, -2, 0]
    for src, dst, want in cases:
        got = ran(xp.astype(xp.asarray(src), getattr(xp, dst)), V4)
        assert got.dtype == np.dtype(dst)
        np.testing.assert_array_equal(got, want, err_msg=f"{src.dtype} -> {dst}")


@pytest.mark.parametrize("n", [4, 1024, 4100])
def test_mixed_trees(xb, n):
    """Python scalars, several leaves, repeated leaves; 4100 is not a multiple of 256 * 4."""
    a, b, c = (values("float32", n, -10, 10) for _ in range(3))
    aa, bb, cc = xp.asarray(a), xp.asarray(b), xp.asarray(c)
    np.testing.assert_allclose(ran((aa * 2 + bb) * cc - 1, V4), (a * 2 + b) * c - 1, rtol=1e-6, atol=1e-5)
    np.testing.assert_allclose(ran(aa * aa + aa, V4), a * a + a, rtol=1e-6, atol=1e-5)
    np.testing.assert_allclose(ran(xp.sqrt(xp.abs(aa - 2.5)) / (bb * bb + 1.0) + xp.floor(cc), V4),
                               np.sqrt(np.abs(a - 2.5)) / (b * b + 1) + np.floor(c), rtol=2e-6, atol=1e-5)
    i, j = values("int32", n), values("int32", n)
    ai, aj = xp.asarray(i), xp.asarray(j)
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(ran(xp.maximum(ai * -3 + aj, ai) ^ 0x5A5A, V4),
                                      np.maximum(i * np.int32(-3) + j, i) ^ np.int32(0x5A5A))
    u = values("uint32", n)
    au = xp.asarray(u)
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(ran(-(au * 7) + 5, V4), (np.uint32(0) - u * np.uint32(7)) + np.uint32(5))
    # an int32 array with a float scalar is float32 (an astype node), a mix of dtypes in one tree;
    # remainder has no vector form: lane by lane
    np.testing.assert_allclose(ran((ai % 1000) * 0.5 + aa, V4), (np.remainder(i, 1000) * 0.5 + a), rtol=1e-6)
    np.testing.assert_allclose(ran(xp.astype(ai, xp.float32) * 0.5 + aa, V4), i.astype(np.float32) * 0.5 + a,
                               rtol=1e-6)


def test_shapes(xb):
    """Any shape with a multiple of 4 elements (the flat order is the same), and none without."""
    for shape in [(8, 128), (2, 6), (3, 1, 4)]:
        n = int(np.prod(shape))
        a, b = values("float32", n).reshape(shape), values("float32", n).reshape(shape)
        got = ran(xp.asarray(a) * 3 - xp.asarray(b), V4)
        assert got.shape == shape
        # a GPU may contract a * 3 - b into one fma (one rounding): bounded by the operands, not the result
        bound = 2.0 ** -23 * (np.abs(a * 3) + np.abs(b))
        assert np.all(np.abs(got - (a * 3 - b)) <= bound), np.max(np.abs(got - (a * 3 - b)) - bound)
    for n in (1, 3, 4102):
        a = values("float32", n)
        np.testing.assert_allclose(ran(xp.asarray(a) * 2 + 1, SCALAR), a * 2 + 1, rtol=1e-6)
    a = values("float32", 15).reshape(3, 5)
    np.testing.assert_allclose(ran(xp.asarray(a) * 2 + 1, SCALAR), a * 2 + 1, rtol=1e-6)


def test_reshapes(xb):
    """A reshape keeps the row-major elements (element i stays element i): vec4, through leaves and pending
    trees alike; a transpose does not."""
    a, b = values("float32", 1024, -10, 10), values("float32", 1024, -10, 10)
    aa, bb = xp.asarray(a), xp.asarray(b)
    got = ran(xp.reshape(aa, (32, 32)) * 2 + xp.reshape(bb, (32, 32)), V4)
    np.testing.assert_allclose(got, (a * 2 + b).reshape(32, 32), rtol=1e-6, atol=1e-5)
    got = ran(xp.reshape(aa * 2 - bb, (4, 16, 16)) + 1, V4)
    np.testing.assert_allclose(got, (a * 2 - b).reshape(4, 16, 16) + 1, rtol=1e-6, atol=1e-5)
    got = ran(xp.reshape(aa, (32, 32)).T * 2, SCALAR)
    np.testing.assert_allclose(got, a.reshape(32, 32).T * 2, rtol=1e-6)


def test_scalar_program_kept(xb):
    """Views, bool and float16 outputs keep the scalar program (and stay correct)."""
    a, row = values("float32", 8 * 128).reshape(8, 128), values("float32", 128)
    aa, arow = xp.asarray(a), xp.asarray(row)
    np.testing.assert_allclose(ran(aa * 2 + arow, SCALAR), a * 2 + row, rtol=1e-6)  # broadcast view
    np.testing.assert_allclose(ran(aa[::2] * 2 + 1, SCALAR), a[::2] * 2 + 1, rtol=1e-6)  # slice view
    np.testing.assert_array_equal(ran(aa * 2 > 1, SCALAR), a * 2 > 1)  # bool output
    h = a.astype(np.float16)
    np.testing.assert_allclose(ran(xp.asarray(h) * 2, SCALAR), h * np.float16(2), rtol=1e-3)


LANEWISE = {  # ops with no vector form in the IR: numpy, dtype, input range, (rtol, atol) (None: exact)
    "tanh": (np.tanh, "float32", (-20, 20), (1e-5, 1e-6)),
    "remainder": (np.remainder, "float32", (-50, 50), None),
    "floor_divide": (np.floor_divide, "int32", (-1000, 1000), None),
    "pow": (np.power, "float32", (0.5, 4), (1e-5, 1e-6)),
    "copysign": (np.copysign, "float32", (-10, 10), None),
    "atan2": (np.arctan2, "float32", (-10, 10), (5e-6, 1e-6)),
    "hypot": (np.hypot, "float32", (-100, 100), (1e-6, 0)),
    "sign": (np.sign, "int32", (-5, 5), None),
}


@pytest.mark.parametrize("name", sorted(LANEWISE))
def test_lanewise_ops(xb, name):
    """Ops outside VEC_OPS still get vec4 loads and stores: their scalar IR runs on each lane."""
    ref, dtype, (lo, hi), tol = LANEWISE[name]
    x = RNG.uniform(lo, hi, 1024).astype(dtype)
    y = RNG.uniform(lo, hi, 1024).astype(dtype)
    if dtype == "int32":
        y[y == 0] = 7
    args = [xp.asarray(x)] if name in ("tanh", "sign") else [xp.asarray(x), xp.asarray(y)]
    assert name not in VEC_OPS
    got = ran(getattr(xp, name)(*args) * 1, V4)  # * 1: one more op, a vector one, in the same tree
    with np.errstate(all="ignore"):
        want = ref(x) if len(args) == 1 else ref(x.astype(np.float64), y.astype(np.float64)).astype(dtype)
    if tol is None:
        np.testing.assert_array_equal(got, want.astype(dtype), err_msg=name)
    else:
        np.testing.assert_allclose(got, want, rtol=tol[0], atol=tol[1], err_msg=name)


def test_cut_trees_each_vectorised(xb):
    """A chain past the tree limits is cut into several kernels (one submission): each is vec4."""
    a = values("float32", 1024, -1, 1)
    x, want = xp.asarray(a), a.astype(np.float64)
    for k in range(100):
        x = x * 0.5 + 0.25 if k % 2 else x - 0.125
        want = want * 0.5 + 0.25 if k % 2 else want - 0.125
    names = kernels(x)
    assert len(names) > 1 and set(names) == {V4}
    np.testing.assert_allclose(np.asarray(x), want, rtol=1e-5, atol=1e-6)


def test_reduction_of_a_vectorisable_tree(xb):
    """Reductions emit trees with the scalar Emitter (unchanged): the sum of a tree the vec4 path takes."""
    a = values("float32", 1024, -1, 1)
    got = float(xp.sum(xp.asarray(a) * 2 + 1))
    assert abs(got - float((a.astype(np.float64) * 2 + 1).sum())) <= 1e-5 * 1024


def test_vectorizable_predicate():
    with vyre.use(vyre.ReferenceBackend()):
        def tree(x):
            assert x.is_lazy
            return x._expr
        a = xp.asarray(np.zeros(8, np.float32))
        assert vectorizable(tree(a * 2 + a))
        assert not vectorizable(tree(a > 2))  # bool
        assert vectorizable(tree(xp.maximum(a, a)))  # float maximum: lane by lane
        assert not vectorizable(tree(xp.asarray(np.zeros(6, np.float32)) * 2))  # 6 elements
        assert not vectorizable(tree(xp.asarray(np.zeros(0, np.float32)) * 2))  # empty
        assert not vectorizable(tree(xp.asarray(np.zeros((2, 4), np.float32)) * a[:4]))  # broadcast view
        assert vectorizable(tree(xp.reshape(a, (2, 4)) + 1))  # a reshape: the same elements
