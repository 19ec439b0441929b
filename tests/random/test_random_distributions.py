"""The sampling functions: bit-exact against the formulas on the numpy Philox (both backends), and
statistical sanity checks that can fail (bounds stated per test, about 5 standard errors)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from philox_np import key_words, normal, randint, stream, uniform01

import vyre.array as va
import vyre.random as vr


def test_uniform_bits_exact(rb):
    u = np.asarray(vr.uniform(vr.key(11), (4, 25)))
    assert u.dtype == np.float32 and u.shape == (4, 25)
    np.testing.assert_array_equal(u.reshape(-1), uniform01(stream(key_words(11), 100)))
    assert u.min() >= 0 and u.max() < 1


def test_uniform_range(rb):
    u = np.asarray(vr.uniform(vr.key(12), (500,), minval=-3, maxval=5.5))
    want = uniform01(stream(key_words(12), 500)).astype(np.float64) * 8.5 - 3
    # the affine map in float32: within one rounding of float64 (a fused multiply-add on some adapters)
    np.testing.assert_allclose(u, want, rtol=0, atol=2 * np.spacing(np.float32(8.5)))
    assert u.min() >= -3 and u.max() < 5.5
    # a range whose top rounds: maxval itself never appears
    t = np.asarray(vr.uniform(vr.key(13), (2000,), minval=1.0, maxval=1.0 + 2**-22))
    assert t.min() >= 1.0 and t.max() < np.float32(1.0 + 2**-22)


def test_uniform_float16(gpu, ref_backend):
    for be in (ref_backend, gpu):
        if not be.capabilities().f16:
            continue
        u = np.asarray(vr.uniform(vr.key(14, device=be), (64,), dtype=va.float16))
        assert u.dtype == np.float16 and u.min() >= 0 and u.max() < 1
        want = (stream(key_words(14), 64) >> np.uint32(21)).astype(np.float16) * np.float16(2.0**-11)
        np.testing.assert_array_equal(u, want)


def test_normal_against_float64_box_muller(rb):
    z = np.asarray(vr.normal(vr.key(21), (3, 67)))
    assert z.dtype == np.float32 and z.shape == (3, 67)
    want = normal(stream(key_words(21), 202))[:201]
    # float32 log/sqrt/cos/sin on the adapter (log1p near u1 = 1): within 4e-6 relative, 1e-6 absolute
    np.testing.assert_allclose(z.reshape(-1), want, rtol=4e-6, atol=1e-6)
    zs = np.asarray(vr.normal(vr.key(21), (201,), mean=2.0, stddev=0.5))
    np.testing.assert_allclose(zs, 2.0 + 0.5 * want, rtol=4e-6, atol=2e-6)


@pytest.mark.parametrize("lo,hi,dtype", [(-5, 7, None), (0, 1, None), (-(2**31), 2**31, None),
                                         (3, 2**32, va.uint32), (0, 2**32, va.uint32), (10, 11 + 2**31, va.uint32)])
def test_randint_exact(rb, lo, hi, dtype):
    r = np.asarray(vr.randint(vr.key(31), (40,), lo, hi, dtype=dtype))
    assert r.dtype == (np.uint32 if dtype is not None else np.int32)
    np.testing.assert_array_equal(r.astype(np.int64), randint(stream(key_words(31), 80), lo, hi))
    assert r.min() >= lo and r.max() < hi


def test_bernoulli_exact(rb):
    b = np.asarray(vr.bernoulli(vr.key(41), 0.3, (300,)))
    assert b.dtype == np.bool_
    np.testing.assert_array_equal(b, uniform01(stream(key_words(41), 300)) < np.float32(0.3))
    assert not np.asarray(vr.bernoulli(vr.key(41), 0.0, (300,))).any()
    assert np.asarray(vr.bernoulli(vr.key(41), 1.0, (300,))).all()
    p = va.asarray(np.linspace(0, 1, 300, dtype=np.float32))
    bp = np.asarray(vr.bernoulli(vr.key(42), p))
    np.testing.assert_array_equal(bp, uniform01(stream(key_words(42), 300)) < np.linspace(0, 1, 300, dtype=np.float32))


def test_permutation_is_a_permutation(rb):
    for n in (0, 1, 2, 17, 120):
        p = np.asarray(vr.permutation(vr.key(n), n))
        assert p.dtype == np.int32
        np.testing.assert_array_equal(np.sort(p), np.arange(n))
    # the first round is the stable argsort of the words
    np.testing.assert_array_equal(np.asarray(vr.permutation(vr.key(5), 50)),
                                  np.argsort(stream(key_words(5), 50), kind="stable"))
    x = va.reshape(va.arange(24), (6, 4))
    rows = np.asarray(vr.permutation(vr.key(6), x))
    np.testing.assert_array_equal(np.sort(rows[:, 0]), np.arange(0, 24, 4))
    np.testing.assert_array_equal(rows - rows[:, :1], np.tile(np.arange(4), (6, 1)))
    cols = np.asarray(vr.permutation(vr.key(6), x, axis=1))
    np.testing.assert_array_equal(np.sort(cols, axis=1), np.arange(24).reshape(6, 4))


def test_permutation_rounds():
    assert [vr._permutation.rounds(n) for n in (0, 1, 1625, 1626, 2_000_000, 3_000_000)] == [1, 1, 1, 2, 2, 3]


def test_choice(rb):
    c = np.asarray(vr.choice(vr.key(51), 10, (7,), replace=False))
    assert len(set(c.tolist())) == 7 and c.min() >= 0 and c.max() < 10
    r = np.asarray(vr.choice(vr.key(52), 4, (50,)))
    np.testing.assert_array_equal(r, randint(stream(key_words(52), 100), 0, 4))
    p = va.asarray(np.array([0.0, 0.5, 0.0, 0.5], dtype=np.float32))
    w = np.asarray(vr.choice(vr.key(53), 4, (100,), p=p))
    assert set(w.tolist()) <= {1, 3}
    tail = va.asarray(np.array([0.25, 0.75, 0.0, 0.0], dtype=np.float32))  # zero probabilities at the end
    assert set(np.asarray(vr.choice(vr.key(56), 4, (200,), p=tail)).tolist()) == {0, 1}
    g = np.asarray(vr.choice(vr.key(54), 4, (2,), replace=False, p=p))
    assert sorted(g.tolist()) == [1, 3]
    a = va.asarray(np.arange(10, 20, dtype=np.float32))
    assert set(np.asarray(vr.choice(vr.key(55), a, (5,))).tolist()) <= set(range(10, 20))


N = 100_000


def test_distribution_moments(gpu):
    """1e5 samples on the GPU. uniform: mean 1/2 +- 0.005 (5.5 standard errors), variance 1/12 +- 0.0015;
    normal: mean 0 +- 0.02, variance 1 +- 0.03, skewness 0 +- 0.04, excess kurtosis 0 +- 0.08, |z| < 6;
    bernoulli(0.3): frequency 0.3 +- 0.0075; randint(0, 10): chi-square of the 10 counts below 33.7
    (p = 1e-4 at 9 degrees of freedom) and every value present."""
    k = vr.split(vr.key(2026, device=gpu), 4)
    u = np.asarray(vr.uniform(k[0], (N,))).astype(np.float64)
    assert abs(u.mean() - 0.5) < 0.005 and abs(u.var() - 1 / 12) < 0.0015
    z = np.asarray(vr.normal(k[1], (N,))).astype(np.float64)
    m, v = z.mean(), z.var()
    skew, kurt = np.mean((z - m) ** 3) / v**1.5, np.mean((z - m) ** 4) / v**2 - 3
    assert abs(m) < 0.02 and abs(v - 1) < 0.03 and abs(skew) < 0.04 and abs(kurt) < 0.08
    assert np.abs(z).max() < 6
    b = np.asarray(vr.bernoulli(k[2], 0.3, (N,)))
    assert abs(b.mean() - 0.3) < 0.0075
    r = np.asarray(vr.randint(k[3], (N,), 0, 10))
    counts = np.bincount(r, minlength=10)
    chi2 = float(((counts - N / 10) ** 2 / (N / 10)).sum())
    assert len(counts) == 10 and counts.min() > 0 and chi2 < 33.7, (counts, chi2)
    # consecutive uniforms uncorrelated: |r| < 5 / sqrt(N)
    assert abs(np.corrcoef(u[:-1], u[1:])[0, 1]) < 5 / math.sqrt(N)
