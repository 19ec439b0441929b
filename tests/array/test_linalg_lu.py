"""The device LU and Cholesky functions of vyre.array.linalg (solve, inv, det, slogdet, cholesky) against
numpy's LAPACK in float64, float32 on random, ill-conditioned (cond ~1e4) and rank-deficient stacks.

Tolerances (float32, eps ~1.2e-7): backward errors ||A x - b|| / (||A|| ||x|| + ||b||) and
||A X - I|| / (||A|| ||X||) <= 2e-5; cholesky ||A - L L^T|| / ||A|| <= 2e-5; det and slogdet relative
to numpy within 40 n eps cond(A) (the determinant's own condition). Errors are typed and raised before any
GPU work, except singularity / not positive definite (found by the elimination, one small download)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from linalg_inputs import SETTINGS, matrix, nrm, shapes, symmetric

import vyre
from vyre import array_api as xp
from vyre.errors import ArgumentTypeError, InvalidArgumentError

L = xp.linalg
EPS = float(np.finfo(np.float32).eps)


@pytest.fixture(scope="module")
def dev(gpu):
    """The GPU as the default device of the arrays made inside the test."""
    with vyre.use(gpu):
        yield gpu


def _f32(a):
    return xp.asarray(np.asarray(a, np.float32))


@settings(**SETTINGS)
@given(shapes())
def test_solve_inv(dev, case):
    batch, n, kind, seed = case
    if kind == "rankdef":
        kind = "ill"  # singular systems have no solution to compare
    rng = np.random.default_rng(seed)
    a = matrix(rng, batch, n, n, kind).astype(np.float32).astype(np.float64)
    b = rng.standard_normal((*batch, n, 3))
    x = np.asarray(L.solve(_f32(a), _f32(b)), np.float64)
    assert x.shape == (*batch, n, 3)
    res = nrm(a @ x - b.astype(np.float32)) / (nrm(a) * nrm(x) + nrm(b))
    assert res.max() <= 2e-5, res
    xi = np.asarray(L.inv(_f32(a)), np.float64)
    res = nrm(a @ xi - np.eye(n)) / (nrm(a) * nrm(xi))
    assert res.max() <= 2e-5, res


@settings(**SETTINGS)
@given(shapes())
def test_det_slogdet(dev, case):
    batch, n, kind, seed = case
    rng = np.random.default_rng(seed)
    a = matrix(rng, batch, n, n, kind).astype(np.float32).astype(np.float64)
    d = np.asarray(L.det(_f32(a)), np.float64)
    s, la = (np.asarray(v, np.float64) for v in L.slogdet(_f32(a)))
    assert d.shape == s.shape == la.shape == batch
    d0 = np.linalg.det(a)
    s0, la0 = np.linalg.slogdet(a)
    if kind == "rankdef":  # det 0 in exact arithmetic: |det| small against the product of the row norms
        scale = np.prod(np.sqrt((a ** 2).sum(-1)), axis=-1)
        assert (np.abs(d) <= 40 * n * EPS * scale + 1e-30).all(), (d, scale)
        return
    cond = np.linalg.cond(a)
    bound = 40 * n * EPS * cond
    rel = np.abs(d - d0) / np.abs(d0)
    assert (rel <= bound).all(), (rel, bound)
    ok = bound < 0.5
    assert (s[ok] == s0[ok]).all()
    assert (np.abs(la - la0) <= 2 * bound).all()


@settings(**SETTINGS)
@given(shapes())
def test_cholesky(dev, case):
    batch, n, kind, seed = case
    rng = np.random.default_rng(seed)
    m = matrix(rng, batch, n, n, "ill" if kind == "rankdef" else kind)
    a = (m @ np.swapaxes(m, -1, -2) + 1e-2 * np.eye(n)).astype(np.float32).astype(np.float64)
    low = np.asarray(L.cholesky(_f32(a)), np.float64)
    assert np.array_equal(low, np.tril(low)) and (np.diagonal(low, axis1=-2, axis2=-1) > 0).all()
    res = nrm(a - low @ np.swapaxes(low, -1, -2)) / nrm(a)
    assert res.max() <= 2e-5, res
    up = np.asarray(L.cholesky(_f32(a), upper=True), np.float64)
    np.testing.assert_array_equal(up, np.swapaxes(low, -1, -2))


def test_errors(dev):
    with pytest.raises(InvalidArgumentError, match="square"):
        L.cholesky(xp.ones((2, 3)))
    for f in (L.inv, L.det, L.slogdet):
        with pytest.raises(InvalidArgumentError, match="square"):
            f(xp.ones((3, 2)))
    with pytest.raises(InvalidArgumentError, match="square"):
        L.solve(xp.ones((3, 2)), xp.ones((3,)))
    with pytest.raises(InvalidArgumentError, match="does not match"):
        L.solve(xp.ones((3, 3)), xp.ones((2, 1)))
    with pytest.raises(ArgumentTypeError, match="vyre array"):
        L.inv(np.eye(2))
    with pytest.raises(ArgumentTypeError, match="bool"):
        L.det(xp.ones((2, 2), dtype=xp.bool))
    singular = xp.asarray(np.float32([[[1, 0], [0, 1]], [[1, 2], [2, 4]]]))
    for f in (L.inv, lambda x: L.solve(x, xp.ones((2, 2)))):
        with pytest.raises(L.LinAlgError, match="matrix 1 of the batch is singular") as info:
            f(singular)
        assert isinstance(info.value, ValueError)
    assert np.asarray(L.det(singular)).tolist() == [1.0, 0.0]
    s, la = L.slogdet(singular)
    assert np.asarray(s).tolist() == [1.0, 0.0] and np.asarray(la)[1] == -np.inf
    with pytest.raises(L.LinAlgError, match="not positive definite"):
        L.cholesky(xp.asarray(symmetric(np.random.default_rng(0), (), 4, "ill").astype(np.float32)))


def test_both_backends_and_empty(xb):
    """The same programs on the reference interpreter and the GPU; empty stacks and integer input."""
    a = np.float32([[4, 1, 0], [1, 3, 1], [0, 1, 2]])
    x = np.asarray(L.solve(xp.asarray(a), xp.asarray(np.float32([1, 2, 3]))))  # a 1-D x2: one vector
    np.testing.assert_allclose(x, np.linalg.solve(a.astype(np.float64), [1, 2, 3]), rtol=1e-5)
    stack = np.stack([a, a.T])
    x = np.asarray(L.solve(xp.asarray(stack), xp.asarray(np.float32([1, 2, 3]))))  # broadcast vector
    np.testing.assert_allclose(x, np.linalg.solve(stack.astype(np.float64), np.float64([1, 2, 3])), rtol=1e-5)
    b2 = np.float32([[1, 2], [3, 4], [5, 6]])  # 2-D: a matrix (numpy 2), broadcast against the stack
    x = np.asarray(L.solve(xp.asarray(stack), xp.asarray(b2)))
    np.testing.assert_allclose(x, np.linalg.solve(stack.astype(np.float64), b2.astype(np.float64)), rtol=1e-5)
    np.testing.assert_allclose(np.asarray(L.det(xp.asarray(a.astype(np.int32)))), np.linalg.det(a), rtol=1e-5)
    np.testing.assert_allclose(np.asarray(L.cholesky(xp.asarray(a))), np.linalg.cholesky(a), rtol=1e-5, atol=1e-6)
    assert L.inv(xp.ones((0, 2, 2))).shape == (0, 2, 2) and L.det(xp.ones((3, 0, 0))).shape == (3,)
    assert np.asarray(L.det(xp.ones((2, 0, 0)))).tolist() == [1.0, 1.0]


def test_batch_past_one_grid_dimension(dev):
    """70,000 matrices: more workgroups than one grid dimension holds (65,535), so the grid has a y axis."""
    a = np.random.default_rng(2).standard_normal((70_000, 2, 2)).astype(np.float32)
    d = np.asarray(L.det(xp.asarray(a)), np.float64)
    np.testing.assert_allclose(d, np.linalg.det(a.astype(np.float64)), atol=1e-5)
