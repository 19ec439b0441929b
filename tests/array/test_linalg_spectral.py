"""The device qr, eigh/eigvalsh, svd/svdvals, pinv, matrix_rank and matrix_norm(2 / -2 / 'nuc') of
vyre.array.linalg against numpy's LAPACK in float64, float32 inputs: random, ill-conditioned (cond ~1e4)
and rank-deficient stacks up to 32 x 32 (square and rectangular).

Tolerances (float32): ||A - QR|| / ||A||, ||Q^T Q - I||, ||A V - V diag(w)|| / ||A||, ||V^T V - I||,
||A - U S Vh|| / ||A||, ||U^T U - I||, ||V V^T - I|| <= 2e-5; eigenvalues within 2e-5 ||A|| and singular
values within 2e-5 max(s) of numpy's (the accuracy a backward-stable float32 method has)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from linalg_inputs import SETTINGS, matrix, nrm, rect_shapes, shapes, symmetric

import vyre
from vyre import array_api as xp
from vyre.errors import ArgumentTypeError, InvalidArgumentError

L = xp.linalg
TOL = 2e-5


@pytest.fixture(scope="module")
def dev(gpu):
    with vyre.use(gpu):
        yield gpu


def _f32(a):
    return xp.asarray(np.asarray(a, np.float32))


def _t(a):
    return np.swapaxes(a, -1, -2)


def _rel(x, a):
    """||x|| / ||a|| per matrix (0 where a is the zero matrix and x too)."""
    return (nrm(x) / np.maximum(nrm(a), 1e-30)).max()


def _orth_err(q):
    k = q.shape[-1]
    return np.abs(_t(q) @ q - np.eye(k)).max() if k else 0.0


@settings(**SETTINGS)
@given(rect_shapes())
def test_qr(dev, case):
    batch, m, n, kind, seed = case
    a = matrix(np.random.default_rng(seed), batch, m, n, kind).astype(np.float32).astype(np.float64)
    for mode in ("reduced", "complete"):
        q, r = (np.asarray(v, np.float64) for v in L.qr(_f32(a), mode=mode))
        q0, r0 = np.linalg.qr(a, mode=mode)
        assert q.shape == q0.shape and r.shape == r0.shape
        assert np.array_equal(r, np.triu(r))
        assert _rel(a - q @ r, a) <= TOL
        assert _orth_err(q) <= TOL


@settings(**SETTINGS)
@given(shapes())
def test_eigh(dev, case):
    batch, n, kind, seed = case
    a = symmetric(np.random.default_rng(seed), batch, n, kind).astype(np.float32).astype(np.float64)
    w, v = (np.asarray(x, np.float64) for x in L.eigh(_f32(a)))
    w0 = np.linalg.eigvalsh(a)
    scale = np.abs(w0).max(axis=-1, keepdims=True)
    assert w.shape == w0.shape and v.shape == a.shape
    assert (np.diff(w, axis=-1) >= 0).all()
    assert (np.abs(w - w0) <= TOL * scale).all()
    assert _rel(a @ v - v * w[..., None, :], a) <= TOL
    assert _orth_err(v) <= TOL
    np.testing.assert_array_equal(np.asarray(L.eigvalsh(_f32(a))), w.astype(np.float32))


@settings(**SETTINGS)
@given(rect_shapes())
def test_svd(dev, case):
    batch, m, n, kind, seed = case
    a = matrix(np.random.default_rng(seed), batch, m, n, kind).astype(np.float32).astype(np.float64)
    s0 = np.linalg.svd(a, compute_uv=False)
    top = s0[..., :1]
    for full in (True, False):
        u, s, vh = (np.asarray(x, np.float64) for x in L.svd(_f32(a), full_matrices=full))
        u0, _, vh0 = np.linalg.svd(a, full_matrices=full)
        assert u.shape == u0.shape and s.shape == s0.shape and vh.shape == vh0.shape
        assert (np.abs(s - s0) <= TOL * top).all()
        k = s.shape[-1]
        rec = (u[..., :, :k] * s[..., None, :]) @ vh[..., :k, :]
        assert _rel(a - rec, a) <= 2 * TOL  # 2.1e-5 seen for an ill-conditioned 32 x 32 (cond 1e4) in float32
        assert _orth_err(u) <= TOL and _orth_err(_t(vh)) <= TOL
    sv = np.asarray(L.svdvals(_f32(a)), np.float64)
    assert sv.shape == s0.shape and (np.abs(sv - s0) <= TOL * top).all()
    if kind == "random" and min(m, n) > 0:  # matrix_norm's singular-value orders
        for ord, want in ((2, s0[..., 0]), (-2, s0[..., -1]), ("nuc", s0.sum(-1))):
            got = np.asarray(L.matrix_norm(_f32(a), ord=ord), np.float64)
            assert (np.abs(got - want) <= TOL * top[..., 0] * max(1, min(m, n))).all()


@settings(**SETTINGS)
@given(rect_shapes())
def test_pinv_rank(dev, case):
    batch, m, n, kind, seed = case
    a = matrix(np.random.default_rng(seed), batch, m, n, kind).astype(np.float32).astype(np.float64)
    x = np.asarray(L.pinv(_f32(a)), np.float64)
    assert x.shape == (*batch, n, m)
    # the Penrose conditions, scaled: A X A = A and X A X = X
    tol = 1e-3 if kind == "ill" else 1e-4  # the pseudo-inverse's sensitivity grows with cond(A)
    assert _rel(a @ x @ a - a, a) <= tol
    if kind != "ill":  # rank exact (the rank-deficient stacks have a gap from 0.1 to 0)
        rank = np.asarray(L.matrix_rank(_f32(a)))
        assert rank.dtype == np.int32
        np.testing.assert_array_equal(rank, np.linalg.matrix_rank(a, rtol=max(m, n) * np.finfo(np.float32).eps))
        assert _rel(x @ a @ x - x, x) <= tol


def test_errors(dev):
    with pytest.raises(InvalidArgumentError, match="mode"):
        L.qr(xp.ones((2, 2)), mode="r")
    with pytest.raises(InvalidArgumentError, match="square"):
        L.eigh(xp.ones((2, 3)))
    with pytest.raises(InvalidArgumentError, match="2 dimensions"):
        L.svd(xp.ones((3,)))
    with pytest.raises(ArgumentTypeError, match="full_matrices"):
        L.svd(xp.ones((2, 2)), full_matrices=1)
    with pytest.raises(ArgumentTypeError, match="vyre array"):
        L.svdvals(np.ones((2, 2)))
    with pytest.raises(InvalidArgumentError, match="over the 1192"):  # the rotations' workgroup arrays: 16 KiB
        L.eigvalsh(xp.zeros((1193, 1193)))
    with pytest.raises(InvalidArgumentError, match="over the 1792"):
        L.svdvals(xp.zeros((1793, 1800)))


def test_both_backends_and_empty(xb):
    """The same programs on the reference interpreter and the GPU (3 x 3); empty stacks; integer input."""
    a = np.float32([[4, 1, 0], [1, 3, 1], [0, 1, 2]])
    w, v = L.eigh(xp.asarray(a))
    np.testing.assert_allclose(np.asarray(w), np.linalg.eigvalsh(a.astype(np.float64)), atol=1e-5)
    s = np.asarray(L.svdvals(xp.asarray(a[:, :2].astype(np.int32))))
    np.testing.assert_allclose(s, np.linalg.svd(a[:, :2], compute_uv=False), rtol=1e-5)
    q, r = L.qr(xp.asarray(a))
    np.testing.assert_allclose(np.asarray(q) @ np.asarray(r), a, atol=1e-5)
    u, s, vh = L.svd(xp.ones((2, 0, 3)))
    assert u.shape == (2, 0, 0) and s.shape == (2, 0) and vh.shape == (2, 3, 3)
    assert L.eigvalsh(xp.ones((0, 4, 4))).shape == (0, 4) and L.pinv(xp.ones((3, 0))).shape == (0, 3)


def test_split_dispatches(dev, monkeypatch):
    """A tiny loop-trip budget splits every factorization into many dispatches (ranges of steps, more
    than the shared parameter handles: own uniforms): the results are those of one dispatch."""
    from vyre.array._kernels import linalg_common as C

    rng = np.random.default_rng(5)
    a = symmetric(rng, (2,), 8, "random").astype(np.float32)
    b = matrix(rng, (2,), 9, 6, "random").astype(np.float32)
    one = [np.asarray(v) for v in (*L.eigh(_f32(a)), *L.svd(_f32(b)), *L.qr(_f32(b)), L.inv(_f32(a)))]
    assert len(C.chunks([1] * 100, 10)) == 20  # each step costs 1 + its loop trips
    assert C.chunks([50, 1, 1], 10) == [(0, 1), (1, 3)]  # a step over the budget runs alone
    monkeypatch.setattr(C, "TRIP_BUDGET", 60)
    monkeypatch.setattr(C, "SHARED_RANGES", 4)
    split = [np.asarray(v) for v in (*L.eigh(_f32(a)), *L.svd(_f32(b)), *L.qr(_f32(b)), L.inv(_f32(a)))]
    for x, y in zip(one, split):
        np.testing.assert_array_equal(x, y)  # the same operations in the same order


def test_step_past_the_loop_cap_is_an_error(dev):
    """On lavapipe one svd step of 70,000 rows passes its 65,535 loop iterations: the loop trap's error,
    never a wrong result (other adapters have no cap: the values are checked there)."""
    from vyre.errors import DispatchError

    a = np.random.default_rng(0).standard_normal((70_000, 2)).astype(np.float32)
    if "llvmpipe" not in str(dev.adapter_info).lower():
        np.testing.assert_allclose(np.asarray(L.svdvals(xp.asarray(a))), np.linalg.svd(a, compute_uv=False), rtol=1e-4)
        return
    with pytest.raises(DispatchError, match="loop iterations"):
        np.asarray(L.svdvals(xp.asarray(a)))
