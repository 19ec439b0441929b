"""cumulative_sum / cumulative_prod on long axes: the parallel scan of vyre/array/_kernels/scan.py (issue 27)
vs numpy, on both backends.

Kernels: ``kernel="auto"`` runs what a call picks on this backend (on lavapipe, a CPU adapter, lines up to
SERIAL_MAX_CPU run the serial ``lines`` kernel); ``kernel="tiles"`` lowers that cut to SERIAL_MAX so the
tiled scan runs from 65 elements on every backend.

Tolerances: integers bit-exact (int32/uint32 wrap like numpy's int32/uint32 cumsum/cumprod: + and * modulo
2**32 are associative, so the parallel order changes nothing). float32 sums vs numpy's float64 cumsum:
|got - want| <= (depth + 1) * eps32 * cumsum(|x|), depth = scan.depth(L, lines) being the longest chain of f32
roundings from an element to an output (the serial run, the two raking levels, the tile offset, and per
extra level the tile total and its scan: 117 at L = 200,000, against the L roundings of a serial running
sum; the serial ``lines`` kernel's depth is L). float32 products of positive numbers: every multiplication
of the tree behind output k rounds the whole product, so relative (k + depth + 1) * eps32, as for a
serial running product (observed: ~sqrt(k) * eps, a random walk). float16 results (f32 accumulation
rounded once): the same bound plus one f16 rounding, eps16 / 2 * |want|.
"""

from __future__ import annotations

import numpy as np
import pytest

import vyre
from vyre import array as xp
from vyre.array._kernels import fused
from vyre.array._kernels import scan as S
from vyre.ir.trips import loop_iterations_issue

from gpu_policy import skip_or_fail

EPS32 = float(np.finfo(np.float32).eps)
EPS16 = float(np.finfo(np.float16).eps)
LENGTHS = [1, 2, 255, 256, 257, 65_535, 65_536, 200_000]


@pytest.fixture(params=["auto", "tiles"])
def kernel(request, monkeypatch, xb):
    """``tiles``: the tiled scan from SERIAL_MAX + 1 elements on every backend."""
    if request.param == "tiles":
        if not S._cpu_adapter(xb):
            pytest.skip("the same kernels as auto on this backend")
        monkeypatch.setattr(S, "SERIAL_MAX_CPU", S.SERIAL_MAX)
    return request.param


def _lines(length: int, backend) -> bool:
    return S.serial(length, backend)


def _pad_initial(a: np.ndarray, axis: int, value: float) -> np.ndarray:
    pad = [(0, 0)] * a.ndim
    pad[axis] = (1, 0)
    return np.pad(a, pad, constant_values=value)


def _check_float_sum(got: np.ndarray, xn: np.ndarray, axis: int, initial: bool, backend) -> None:
    length = xn.shape[axis]
    want = np.cumsum(xn.astype(np.float64), axis=axis)
    absum = np.cumsum(np.abs(xn.astype(np.float64)), axis=axis)
    if initial:
        want, absum = _pad_initial(want, axis, 0), _pad_initial(absum, axis, 0)
    bound = (S.depth(length, _lines(length, backend)) + 1) * EPS32 * absum
    assert got.shape == want.shape
    err = np.abs(got.astype(np.float64) - want)
    assert np.all(err <= bound), f"worst {np.max(err - bound)} over the bound"


def _ints(dtype, shape, seed):
    rng = np.random.default_rng(seed)
    if dtype == np.uint32:
        return rng.integers(0, 2**32, shape, dtype=np.uint64).astype(np.uint32)
    return rng.integers(-(2**31), 2**31, shape, dtype=np.int64).astype(np.int32)


@pytest.mark.parametrize("length", LENGTHS)
def test_lengths_1d(xb, kernel, length):
    """Every length of the issue, int32 (wrapping near the extremes), uint32 and float32, with and
    without include_initial."""
    if kernel == "tiles" and length <= S.SERIAL_MAX:
        pytest.skip("the lines kernel runs there whatever the cut")
    xf = np.random.default_rng(length).standard_normal(length).astype(np.float32)
    x = xp.asarray(xf)
    for initial in (False, True):
        got = np.asarray(xp.cumulative_sum(x, include_initial=initial))
        _check_float_sum(got, xf, 0, initial, xb)
    for dt in (np.int32, np.uint32):
        xn = _ints(dt, length, length + 1)
        want = np.cumsum(xn, dtype=dt)
        for initial in (False, True):
            got = xp.cumulative_sum(xp.asarray(xn), include_initial=initial)
            w = _pad_initial(want, 0, 0) if initial else want
            assert got.dtype == dt and np.array_equal(np.asarray(got), w)


@pytest.mark.parametrize("length", [257, 65_536, 200_000])
def test_prod_1d(xb, kernel, length):
    """cumulative_prod: odd int32 and uint32 factors (the wrapped products never reach 0) bit-exact;
    float32 factors exp(N(0, 1e-3)) (the running product stays near 1) within relative (k + depth + 1) * eps."""
    rng = np.random.default_rng(7)
    odd = (rng.integers(-3, 4, length) * 2 + 1).astype(np.int32)
    for dt in (np.int32, np.uint32):
        xn = odd.astype(dt)
        for initial in (False, True):
            got = xp.cumulative_prod(xp.asarray(xn), include_initial=initial)
            want = np.cumprod(xn, dtype=dt)
            assert np.array_equal(np.asarray(got), _pad_initial(want, 0, 1) if initial else want)
    xf = np.exp(rng.standard_normal(length) * 1e-3).astype(np.float32)
    for initial in (False, True):
        got = np.asarray(xp.cumulative_prod(xp.asarray(xf), include_initial=initial)).astype(np.float64)
        want = np.cumprod(xf.astype(np.float64))
        if initial:
            want = _pad_initial(want, 0, 1)
        k = np.arange(want.size, dtype=np.float64)  # multiplications before output k (+ the offsets')
        rtol = (k + S.depth(length, _lines(length, xb)) + 1) * EPS32
        assert np.all(np.abs(got - want) <= rtol * np.abs(want))


SHAPES = [(5, 3000), (3000, 5), (2, 70_000), (4, 700, 3), (2, 5000, 3), (3, 4, 300)]


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_nd_every_axis(xb, kernel, shape):
    """2-D and 3-D arrays along each axis (negative axes too): float32 within the bound, int32 exact,
    with include_initial; the input is a pending expression (fused into the scan's loads)."""
    rng = np.random.default_rng(sum(shape))
    xf = rng.standard_normal(shape).astype(np.float32)
    xi = _ints(np.int32, shape, 3)
    x, i = xp.asarray(xf), xp.asarray(xi)
    for axis in range(-len(shape), len(shape)):
        ax = axis % len(shape)
        initial = axis < 0
        got = np.asarray(xp.cumulative_sum(x * 2 + 1, axis=axis, include_initial=initial))
        _check_float_sum(got, xf * 2 + 1, ax, initial, xb)
        gi = np.asarray(xp.cumulative_sum(i, axis=axis, include_initial=initial))
        wi = np.cumsum(xi, axis=ax, dtype=np.int32)
        assert np.array_equal(gi, _pad_initial(wi, ax, 0) if initial else wi)


def test_grid_folded(xb, kernel, monkeypatch):
    """More workgroups than one grid axis holds fold into grid y (MAX_GRID lowered to 7 here): spare
    workgroups of the last row write nothing."""
    monkeypatch.setattr(S, "MAX_GRID", 7)
    monkeypatch.setattr(S, "SERIAL_MAX_CPU", S.SERIAL_MAX)
    xn = _ints(np.int32, (5, 9000), 4)  # 5 rows x 5 tiles = 25 workgroups -> grid (7, 4)
    for axis in (0, 1):
        got = np.asarray(xp.cumulative_sum(xp.asarray(xn), axis=axis, include_initial=True))
        assert np.array_equal(got, _pad_initial(np.cumsum(xn, axis=axis, dtype=np.int32), axis, 0))


def test_long_axis_levels(xb, kernel, monkeypatch):
    """Three levels (tile totals of tile totals) with a smaller tile (ITEMS = 1: 256 elements), int32
    exact and float32 within the bound."""
    monkeypatch.setattr(S, "ITEMS", 1)
    monkeypatch.setattr(S, "SERIAL_MAX_CPU", S.SERIAL_MAX)
    n = 256 * 256 * 2 + 17
    assert S.passes(n) == 5
    xn = _ints(np.int32, n, 5)
    assert np.array_equal(np.asarray(xp.cumulative_sum(xp.asarray(xn))), np.cumsum(xn, dtype=np.int32))
    xf = np.random.default_rng(6).standard_normal(n).astype(np.float32)
    _check_float_sum(np.asarray(xp.cumulative_sum(xp.asarray(xf))), xf, 0, False, xb)


def test_one_submission_and_short_loops(xb, kernel):
    """A call is deferred: the scan's programs (scan.passes of them) and the download are one
    submission; no program has a loop longer than SERIAL_MAX_CPU."""
    n = 200_000
    x = xp.asarray(np.ones(n, np.float32))
    y = x * 3
    np.asarray(y)  # materialised: the scan's submission computes only the scan
    fused.reset_fusion_stats()
    r = xp.cumulative_sum(y)
    assert fused.fusion_stats()["submissions"] == 0  # nothing ran yet
    p = fused.plan([r])
    try:
        assert len(p.steps) == S.passes(n, xb) == 3
        for step in p.steps:
            assert loop_iterations_issue(step[0], S.SERIAL_MAX_CPU) is None
    finally:
        for h in p.temps:
            xb.free_resident(h)
    got = np.asarray(r)
    assert fused.fusion_stats()["submissions"] == 1
    assert got[-1] == 3 * n and got[0] == 3


def test_specials(xb, kernel):
    """-0.0 lines scan to -0.0 (the sum's identity is -0.0; include_initial's first element is +0.0);
    +inf in a later tile makes every later prefix +inf, +inf then -inf NaN; bool counts as int32."""
    z = np.full(3000, -0.0, np.float32)
    got = np.asarray(xp.cumulative_sum(xp.asarray(z), include_initial=True))
    assert not np.signbit(got[0]) and np.all(np.signbit(got[1:])) and np.all(got == 0)
    v = np.ones(5000, np.float32)
    v[2500] = np.inf
    got = np.asarray(xp.cumulative_sum(xp.asarray(v)))
    assert np.all(np.isposinf(got[2500:])) and np.array_equal(got[:2500], np.arange(1, 2501))
    v[3000] = -np.inf
    got = np.asarray(xp.cumulative_sum(xp.asarray(v)))
    assert np.all(np.isnan(got[3000:])) and np.all(np.isposinf(got[2500:3000]))
    b = np.random.default_rng(8).random(70_000) < 0.3
    got = xp.cumulative_sum(xp.asarray(b))
    assert got.dtype == xp.int32 and np.array_equal(np.asarray(got), np.cumsum(b, dtype=np.int32))


def test_dtype_argument_and_float16(xb, kernel):
    """dtype= converts each element before accumulating (int32 -> float32 exact for small integers,
    int32 -> uint32 wrapping); float16 (where the backend has shader-f16) accumulates in f32 and rounds
    each output once."""
    xi = np.random.default_rng(9).integers(-100, 100, 70_000).astype(np.int32)
    got = xp.cumulative_sum(xp.asarray(xi), dtype=xp.float32)
    assert got.dtype == xp.float32 and np.array_equal(np.asarray(got), np.cumsum(xi).astype(np.float32))
    got = xp.cumulative_sum(xp.asarray(xi), dtype=xp.uint32)
    assert np.array_equal(np.asarray(got), np.cumsum(xi.astype(np.uint32), dtype=np.uint32))
    if not xb.capabilities().f16:
        skip_or_fail("no shader-f16")
    h = np.random.default_rng(10).random(20_000).astype(np.float16)
    for initial in (False, True):
        got = xp.cumulative_sum(xp.asarray(h), include_initial=initial)
        assert got.dtype == xp.float16
        want = np.cumsum(h.astype(np.float64))
        if initial:
            want = _pad_initial(want, 0, 0)
        bound = (S.depth(h.size, _lines(h.size, xb)) + 1) * EPS32 * want + EPS16 / 2 * want
        assert np.all(np.abs(np.asarray(got).astype(np.float64) - want) <= bound)


def test_backend_kind():
    """The kernel choice: lines up to SERIAL_MAX everywhere, up to SERIAL_MAX_CPU on a CPU adapter."""
    ref = vyre.ReferenceBackend()
    assert S.serial(S.SERIAL_MAX, ref) and not S.serial(S.SERIAL_MAX + 1, ref)

    class Cpu:
        adapter_info = {"adapter_type": "CPU"}

    assert S.serial(S.SERIAL_MAX_CPU, Cpu()) and not S.serial(S.SERIAL_MAX_CPU + 1, Cpu())
    assert S.passes(S.SERIAL_MAX + 1) == 1 and S.passes(200_000) == 3


def test_deferred_result_keeps_the_values_it_was_called_on(xb, kernel):
    """The result is deferred (computed in its reader's submission) but scans the input as it was when
    called: a later assignment or += on the input changes nothing."""
    for n in (10, 5000, 100_000):
        a = xp.asarray(np.ones(n, np.float32))
        c = xp.cumulative_sum(a, include_initial=True)
        a[0] = 5
        a += 1
        got = np.asarray(c)
        assert np.array_equal(got, np.arange(n + 1, dtype=np.float32))
