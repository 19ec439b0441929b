"""Focused tests of nn.max_pool2d and nn.avg_pool2d beyond the witnesses.

The oracle here is ``_loop_pool``: a line-by-line transcription of ATen's CPU pooling loops
(independent of the module's vectorized numpy reference), plus torch itself when importable.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import vyre.ops
from vyre.errors import DispatchError
from vyre.ops.nn import pool2d
from vyre.ops.registry import compare, get

from gpu_policy import skip_or_fail

BACKENDS = ["reference", "gpu"]


@pytest.fixture(params=BACKENDS)
def backend(request):
    return request.getfixturevalue(request.param)


def _pair(v):
    return (v, v) if isinstance(v, int) else tuple(v)


def _loop_pool(x, kind, kernel, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
               divisor_override=None):
    """ATen's avg_pool2d / max_pool2d CPU loops (dilation 1), in float64; (values, flat indices)."""
    (kh, kw), (ph, pw) = _pair(kernel), _pair(padding)
    sh, sw = _pair(kernel if stride is None else stride)
    n_, c_, h, w = x.shape

    def size(i, k, s, p):
        o = math.floor((i + 2 * p - (k - 1) - 1 + (s - 1 if ceil_mode else 0)) / s) + 1
        return o - 1 if ceil_mode and (o - 1) * s >= i + p else o

    oh, ow = size(h, kh, sh, ph), size(w, kw, sw, pw)
    vals, idx = np.zeros((n_, c_, oh, ow)), np.zeros((n_, c_, oh, ow), np.int64)
    for n in range(n_):
        for c in range(c_):
            for i in range(oh):
                for j in range(ow):
                    hs, ws = i * sh - ph, j * sw - pw
                    if kind == "max":
                        he, we, hs, ws = min(hs + kh, h), min(ws + kw, w), max(hs, 0), max(ws, 0)
                        best, arg = -math.inf, hs * w + ws
                        for y in range(hs, he):
                            for z in range(ws, we):
                                v = float(x[n, c, y, z])
                                if v > best or math.isnan(v):
                                    best, arg = v, y * w + z
                        vals[n, c, i, j], idx[n, c, i, j] = best, arg
                    else:
                        he, we = min(hs + kh, h + ph), min(ws + kw, w + pw)
                        pool = (he - hs) * (we - ws)
                        hs, ws, he, we = max(hs, 0), max(ws, 0), min(he, h), min(we, w)
                        total = float(np.sum(x[n, c, hs:he, ws:we], dtype=np.float64))
                        div = divisor_override or (pool if count_include_pad else (he - hs) * (we - ws))
                        vals[n, c, i, j] = total / div
    return vals, idx


def _bits(a):
    return a.view(np.uint32 if a.dtype == np.float32 else np.uint16)


def _assert_max_equal(got, want):
    want = want.astype(got.dtype)
    assert got.shape == want.shape
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    ok = ~np.isnan(want)
    np.testing.assert_array_equal(_bits(got)[ok], _bits(want)[ok])  # bit-exact, the sign of zero included


# (shape, kernel, stride, padding, ceil_mode)
CONFIGS = [
    ((1, 1, 1, 1), 1, None, 0, False),
    ((1, 1, 4, 4), 2, None, 0, False),
    ((2, 3, 7, 9), 3, 2, 1, False),
    ((2, 3, 7, 9), 3, 2, 1, True),
    ((1, 2, 10, 8), (3, 2), (2, 3), (1, 1), True),  # a ceil window past the padded edge; one dropped
    ((1, 1, 5, 5), 2, 3, 0, True),  # stride > kernel
    ((1, 2, 6, 11), (2, 5), (1, 4), (1, 2), False),
    ((3, 1, 6, 6), 6, None, 3, True),  # kernel = input, padding = kernel / 2
]


@pytest.mark.parametrize("shape,kernel,stride,padding,ceil", CONFIGS)
def test_max_pool_matches_aten_loops(backend, shape, kernel, stride, padding, ceil):
    x = np.random.default_rng(sum(shape)).uniform(-4, 4, shape).astype(np.float32)
    got, where = vyre.ops.nn_max_pool2d(backend, x, kernel_size=kernel, stride=stride, padding=padding,
                                        ceil_mode=ceil, return_indices=True)
    want, idx = _loop_pool(x, "max", kernel, stride, padding, ceil)
    _assert_max_equal(got, want)
    assert where.dtype == np.uint32
    np.testing.assert_array_equal(where, idx)


@pytest.mark.parametrize("include", [True, False])
@pytest.mark.parametrize("shape,kernel,stride,padding,ceil", CONFIGS)
def test_avg_pool_matches_aten_loops(backend, shape, kernel, stride, padding, ceil, include):
    x = np.random.default_rng(sum(shape) + 1).uniform(-1, 1, shape).astype(np.float32)
    got = vyre.ops.nn_avg_pool2d(backend, x, kernel_size=kernel, stride=stride, padding=padding, ceil_mode=ceil,
                                 count_include_pad=include)
    want, _ = _loop_pool(x, "avg", kernel, stride, padding, ceil, include)
    params = get("nn.avg_pool2d").params_for(x, kernel_size=kernel, stride=stride, padding=padding,
                                             ceil_mode=ceil, count_include_pad=include)
    ok, err, detail = compare(got, want.astype(np.float32), get("nn.avg_pool2d").tolerance_of(params))
    assert ok, detail


@st.composite
def _geometries(draw):
    h, w = draw(st.integers(1, 9)), draw(st.integers(1, 9))
    kh, kw = draw(st.integers(1, 5)), draw(st.integers(1, 5))
    sh, sw = draw(st.integers(1, 4)), draw(st.integers(1, 4))
    ph, pw = draw(st.integers(0, kh // 2 + 1)), draw(st.integers(0, kw // 2 + 1))  # mostly valid, some not
    return (h, w), (kh, kw), (sh, sw), (ph, pw), draw(st.booleans()), draw(st.booleans())


@given(_geometries())
def test_random_geometries_match_aten_or_raise_like_torch(gpu, geo):
    """Either both torch's rules reject the geometry (padding > kernel / 2, no output) and vyre raises
    DispatchError, or vyre's max (with indices) and avg equal the ATen loops on the GPU."""
    (h, w), kernel, stride, padding, ceil, include = geo
    x = np.random.default_rng(h * 10 + w).uniform(-1, 1, (1, 2, h, w)).astype(np.float32)
    kw = {"kernel_size": kernel, "stride": stride, "padding": padding, "ceil_mode": ceil}
    sizes = [(i + 2 * p - k + (s - 1 if ceil else 0)) // s + 1 for i, k, s, p in zip((h, w), kernel, stride, padding)]
    sizes = [o - 1 if ceil and (o - 1) * s >= i + p else o for o, i, s, p in zip(sizes, (h, w), stride, padding)]
    torch_rejects = any(p > k // 2 for p, k in zip(padding, kernel)) or min(sizes) < 1
    if torch_rejects:
        with pytest.raises(DispatchError):
            vyre.ops.nn_max_pool2d(gpu, x, **kw)
        with pytest.raises(DispatchError):
            vyre.ops.nn_avg_pool2d(gpu, x, **kw)
        return
    got, where = vyre.ops.nn_max_pool2d(gpu, x, return_indices=True, **kw)
    want, idx = _loop_pool(x, "max", kernel, stride, padding, ceil)
    _assert_max_equal(got, want)
    np.testing.assert_array_equal(where, idx)
    got = vyre.ops.nn_avg_pool2d(gpu, x, count_include_pad=include, **kw)
    want, _ = _loop_pool(x, "avg", kernel, stride, padding, ceil, include)
    np.testing.assert_allclose(got, want, rtol=2.0 ** -21, atol=25 * 2.0 ** -22)


def test_known_values(backend):
    x = np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4)
    np.testing.assert_array_equal(vyre.ops.nn_max_pool2d(backend, x, kernel_size=2),
                                  [[[[5, 7], [13, 15]]]])
    np.testing.assert_array_equal(vyre.ops.nn_avg_pool2d(backend, x, kernel_size=2),
                                  [[[[2.5, 4.5], [10.5, 12.5]]]])
    # 3x3, stride 2, padding 1: the corner window holds 0, 1, 4, 5 of its 9 (padded) cells
    got = vyre.ops.nn_avg_pool2d(backend, x, kernel_size=3, stride=2, padding=1)
    np.testing.assert_allclose(got[0, 0, 0, 0], (0 + 1 + 4 + 5) / 9, rtol=1e-6)
    got = vyre.ops.nn_avg_pool2d(backend, x, kernel_size=3, stride=2, padding=1, count_include_pad=False)
    np.testing.assert_allclose(got[0, 0, 0, 0], (0 + 1 + 4 + 5) / 4, rtol=1e-6)
    got = vyre.ops.nn_avg_pool2d(backend, x, kernel_size=3, stride=2, padding=1, divisor_override=2)
    np.testing.assert_allclose(got[0, 0, 0, 0], (0 + 1 + 4 + 5) / 2, rtol=1e-6)


@pytest.mark.parametrize("h,k,s,p,ceil,want", [
    (4, 2, 2, 0, False, 2), (5, 2, 2, 0, False, 2), (5, 2, 2, 0, True, 3),
    (4, 2, 3, 1, False, 2), (4, 2, 3, 1, True, 2),  # ceil would give 3, but that window starts in the padding
    (6, 3, 2, 1, True, 4), (1, 1, 1, 0, True, 1), (7, 7, 7, 3, True, 2),
])
def test_output_size_rule(h, k, s, p, ceil, want):
    assert pool2d.out_size(h, k, s, p, ceil) == want
    pipe = get("nn.max_pool2d").build(n=1, c=1, h=h, w=h, kernel=[k, k], stride=[s, s], padding=[p, p],
                                      ceil_mode=ceil)
    assert pipe.output_shapes["out"] == (1, 1, want, want)


def test_max_specials(backend):
    """-inf padding never wins, NaN propagates (the last NaN), the first of -0.0 and +0.0 wins."""
    x = np.array([[[[-np.inf, -np.inf, 1.0, np.nan],
                    [-np.inf, -np.inf, 2.0, 3.0],
                    [-0.0, 0.0, np.nan, 5.0],
                    [0.0, -0.0, np.nan, np.nan]]]], np.float32)
    got, where = vyre.ops.nn_max_pool2d(backend, x, kernel_size=2, return_indices=True)
    assert got[0, 0, 0, 0] == -np.inf and where[0, 0, 0, 0] == 0  # only -inf: the first position
    assert np.isnan(got[0, 0, 0, 1]) and where[0, 0, 0, 1] == 3
    assert _bits(got)[0, 0, 1, 0] == 0x80000000 and where[0, 0, 1, 0] == 8  # -0.0 first: kept, with its sign
    assert np.isnan(got[0, 0, 1, 1]) and where[0, 0, 1, 1] == 15  # the last NaN of the window
    got = vyre.ops.nn_max_pool2d(backend, -np.ones((1, 1, 2, 2), np.float32), kernel_size=2, padding=1)
    np.testing.assert_array_equal(got, -np.ones((1, 1, 2, 2)))  # padding is -inf, not 0


@pytest.mark.parametrize("op", ["nn.max_pool2d", "nn.avg_pool2d"])
def test_f16(gpu, op):
    if "shader-f16" not in gpu.features:
        skip_or_fail("the adapter lacks shader-f16")
    x = np.random.default_rng(7).uniform(-2, 2, (2, 3, 9, 7)).astype(np.float16)
    x[0, 0, 0, :3] = [np.nan, -0.0, np.inf]
    if op == "nn.avg_pool2d":
        x = np.nan_to_num(x, nan=0.5, posinf=1.5)
    kw = {"kernel_size": 3, "stride": 2, "padding": 1, "ceil_mode": True}
    got = getattr(vyre.ops, op.replace(".", "_"))(gpu, x, **kw)
    assert got.dtype == np.float16 and got.shape == (2, 3, 5, 4)
    want, _ = _loop_pool(x.astype(np.float32), op[3:6], 3, 2, 1, True)
    if op == "nn.max_pool2d":
        _assert_max_equal(got, want)
    else:
        params = get(op).params_for(x, **kw)
        ok, err, detail = compare(got, want.astype(np.float16), get(op).tolerance_of(params))
        assert ok, detail
        assert get(op).needs_of(params) == {"shader-f16"}


class _Untouchable:
    """A backend that fails any use: the bad-input errors must come first."""

    def __getattr__(self, name):
        raise AssertionError(f"the backend was used ({name}) before the input was checked")


X = np.zeros((1, 2, 6, 6), np.float32)


@pytest.mark.parametrize("op,x,kw,words", [
    ("nn.max_pool2d", X.astype(np.float64), {"kernel_size": 2}, "float64"),
    ("nn.max_pool2d", X.astype(np.int32), {"kernel_size": 2}, "int32"),
    ("nn.max_pool2d", X[0], {"kernel_size": 2}, "4 dims"),
    ("nn.avg_pool2d", np.zeros((1, 0, 4, 4), np.float32), {"kernel_size": 2}, "non-empty"),
    ("nn.max_pool2d", X, {}, "kernel_size is required"),
    ("nn.max_pool2d", X, {"kernel_size": 2, "padding": 2}, "at most half"),
    ("nn.avg_pool2d", X, {"kernel_size": 3, "padding": (1, 2)}, "at most half"),
    ("nn.avg_pool2d", X, {"kernel_size": 2, "padding": -1}, "padding"),
    ("nn.max_pool2d", X, {"kernel_size": 7}, "does not fit"),
    ("nn.max_pool2d", X, {"kernel_size": 0}, "kernel must be >= 1"),
    ("nn.max_pool2d", X, {"kernel_size": 2, "stride": 0}, "stride must be >= 1"),
    ("nn.max_pool2d", X, {"kernel_size": (2, 2, 2)}, "pair"),
    ("nn.max_pool2d", X, {"kernel_size": 2.0}, "pair"),
    ("nn.max_pool2d", X, {"kernel_size": 2, "ceil_mode": 1}, "ceil_mode"),
    ("nn.max_pool2d", X, {"kernel_size": 2, "return_indices": "yes"}, "return_indices"),
    ("nn.max_pool2d", X, {"kernel_size": 2, "dilation": 2}, "unknown"),
    ("nn.avg_pool2d", X, {"kernel_size": 2, "count_include_pad": None}, "count_include_pad"),
    ("nn.avg_pool2d", X, {"kernel_size": 2, "divisor_override": 0}, "divisor_override"),
])
def test_bad_input_raises_typed_error_before_gpu_work(op, x, kw, words):
    with pytest.raises(DispatchError) as info:
        getattr(vyre.ops, op.replace(".", "_"))(_Untouchable(), x, **kw)
    assert words in str(info.value)
    assert info.value.fix


def test_kernel_size_given_positionally_is_explained():
    with pytest.raises(DispatchError, match="keywords"):
        vyre.ops.nn_max_pool2d(_Untouchable(), X, 2)


def test_build_rejects_bad_geometry():
    with pytest.raises(ValueError, match="at most half"):
        get("nn.avg_pool2d").build(n=1, c=1, h=4, w=4, kernel=[2, 2], padding=[2, 0])
    with pytest.raises(ValueError, match="dtype"):
        get("nn.max_pool2d").build(n=1, c=1, h=4, w=4, kernel=[2, 2], dtype="f64")


TORCH_CONFIGS = [(2, None, 0, False), (3, 2, 1, True), ((3, 2), (2, 3), (1, 1), True), (2, 3, 1, True)]


@pytest.mark.parametrize("kernel,stride,padding,ceil", TORCH_CONFIGS)
def test_matches_torch(reference, kernel, stride, padding, ceil):
    torch = pytest.importorskip("torch")
    F = torch.nn.functional
    x = np.random.default_rng(11).uniform(-1, 1, (2, 3, 9, 10)).astype(np.float32)
    x[0, 0, 1, 1], x[1, 2, 4, 4] = np.nan, -np.inf
    t = torch.from_numpy(x)
    want, idx = F.max_pool2d(t, kernel, stride, padding, ceil_mode=ceil, return_indices=True)
    got, where = vyre.ops.nn_max_pool2d(reference, x, kernel_size=kernel, stride=stride, padding=padding,
                                        ceil_mode=ceil, return_indices=True)
    _assert_max_equal(got, want.numpy())
    np.testing.assert_array_equal(where, idx.numpy())
    x = np.nan_to_num(x, nan=0.25, neginf=-0.5)
    for include in (True, False):
        want = F.avg_pool2d(torch.from_numpy(x), kernel, stride, padding, ceil_mode=ceil,
                            count_include_pad=include).numpy()
        got = vyre.ops.nn_avg_pool2d(reference, x, kernel_size=kernel, stride=stride, padding=padding,
                                     ceil_mode=ceil, count_include_pad=include)
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
