"""Complex solve, inv, pinv, svdvals, eigvalsh, matrix_rank and matrix_norm(2 / -2 / 'nuc') through the real
block form (vyre/array/_linalg_complex.py), eigh and svd from the block form's vectors, det, slogdet,
cholesky and qr on the complex kernels, against numpy's
LAPACK: complex64 within 2e-5 (relative to the
largest entry of the result), complex128 within 1e-12, batched, mixed real/complex operands, Hermitian
input read from its lower triangle only, rank-deficient matrices; shape errors before any work."""

from __future__ import annotations

import numpy as np
import pytest
from extras import require_adapter

import vyre
from vyre import array_api as xp
from vyre.errors import InvalidArgumentError

L = xp.linalg
RNG = np.random.default_rng(11)
DTYPES = [("complex64", 2e-5), ("complex128", 1e-12)]


def _c(*shape: int, dt: str) -> np.ndarray:
    return (RNG.standard_normal(shape) + 1j * RNG.standard_normal(shape)).astype(dt)


def _close(got: xp.Array, want: np.ndarray, tol: float) -> None:
    g = np.asarray(got)
    assert g.shape == want.shape, (g.shape, want.shape)
    assert np.abs(g - want).max() <= tol * max(1.0, np.abs(want).max()), np.abs(g - want).max()


def _dtypes(dev):
    have = xp.__array_namespace_info__().dtypes(device=dev)
    require_adapter("complex128" in have, "shader-f64 (complex128)")  # fails under CI=true
    return [(dt, tol) for dt, tol in DTYPES if dt in have]


@pytest.fixture(scope="module")
def dev(gpu):
    with vyre.use(gpu):
        yield gpu


def test_solve_inv_pinv(dev):
    for dt, tol in _dtypes(dev):
        a = _c(3, 6, 6, dt=dt) + 4 * np.eye(6, dtype=dt)  # well conditioned: the error is the method's
        b, v = _c(3, 6, 2, dt=dt), _c(6, dt=dt)
        xa = xp.asarray(a)
        got = L.solve(xa, xp.asarray(b))
        assert got.dtype == getattr(xp, dt)
        _close(got, np.linalg.solve(a, b), tol)
        _close(L.solve(xa, xp.asarray(v)), np.linalg.solve(a, v[None, :, None])[..., 0], tol)
        _close(L.solve(xp.asarray(a.real.copy()), xp.asarray(b)), np.linalg.solve(a.real, b), tol)  # real x1
        _close(L.inv(xa), np.linalg.inv(a), tol)
        m = _c(2, 7, 4, dt=dt)
        _close(L.pinv(xp.asarray(m)), np.linalg.pinv(m), tol)
        _close(L.pinv(xp.asarray(np.swapaxes(m, -1, -2).copy())), np.linalg.pinv(np.swapaxes(m, -1, -2)), tol)


def test_singular_values_norms_rank(dev):
    for dt, tol in _dtypes(dev):
        m = _c(2, 5, 8, dt=dt)
        xm = xp.asarray(m)
        s = np.linalg.svd(m, compute_uv=False)
        got = L.svdvals(xm)
        assert got.dtype == (xp.float32 if dt == "complex64" else xp.float64)
        _close(got, s, tol)
        for ord_ in (2, -2, "nuc"):
            _close(L.matrix_norm(xm, ord=ord_), np.linalg.norm(m, ord=ord_, axis=(-2, -1)), tol)
        low = _c(7, 2, dt=dt) @ _c(2, 6, dt=dt)  # rank 2
        assert int(np.asarray(L.matrix_rank(xp.asarray(low)))) == np.linalg.matrix_rank(low) == 2
        # the rank-2 part only (numpy's own default cutoff keeps complex64's rounding noise as singular values)
        _close(L.pinv(xp.asarray(low)), np.linalg.pinv(low.astype(np.complex128), rcond=1e-6), 10 * tol)


def test_eigvalsh_reads_the_lower_triangle(dev):
    for dt, tol in _dtypes(dev):
        a = _c(4, 5, 5, dt=dt)
        h = a + np.conj(np.swapaxes(a, -1, -2))
        want = np.linalg.eigvalsh(h)
        _close(L.eigvalsh(xp.asarray(h)), want, tol)
        junk = np.tril(h) + np.triu(_c(5, 5, dt=dt), k=1) + 1j * np.eye(5, dtype=dt)  # never read
        _close(L.eigvalsh(xp.asarray(junk)), want, tol)


def test_det_slogdet_cholesky(dev):
    """The complex kernels (vyre/array/_kernels/linalg_lu_complex.py)."""
    for dt, tol in _dtypes(dev):
        a = _c(3, 6, 6, dt=dt)
        det = np.linalg.det(a)
        got = L.det(xp.asarray(a))
        assert got.dtype == getattr(xp, dt)
        assert (np.abs(np.asarray(got) - det) <= 10 * tol * np.abs(det)).all()
        sgn, logabs = L.slogdet(xp.asarray(a))
        ws, wl = np.linalg.slogdet(a)
        _close(sgn, ws, 10 * tol)
        _close(logabs, wl, 10 * tol)
        sing = np.zeros((5, 5), dt)
        sing[:, :3] = _c(5, 3, dt=dt)
        assert np.asarray(L.det(xp.asarray(sing))) == 0
        s0, l0 = L.slogdet(xp.asarray(sing))
        assert np.asarray(s0) == 0 and np.asarray(l0) == -np.inf
        h = a @ np.conj(np.swapaxes(a, -1, -2)) + np.eye(6, dtype=dt)
        want = np.linalg.cholesky(h)
        junk = np.tril(h) + np.triu(_c(6, 6, dt=dt), k=1)  # the upper triangle is never read
        _close(L.cholesky(xp.asarray(junk)), want, tol)
        _close(L.cholesky(xp.asarray(h), upper=True), np.conj(np.swapaxes(want, -1, -2)), tol)
        with pytest.raises(L.LinAlgError, match="positive definite"):
            L.cholesky(xp.asarray(-h))
    assert np.asarray(L.det(xp.zeros((0, 0), dtype=xp.complex64))) == 1


def test_qr(dev):
    """zgeqrf's reflectors (vyre/array/_kernels/linalg_qr_complex.py): numpy's R to rounding, Q unitary."""
    for dt, tol in _dtypes(dev):
        for shape in [(3, 6, 4), (4, 7), (2, 5, 5)]:
            a = _c(*shape, dt=dt)
            if shape == (2, 5, 5):
                a[..., 1] = 0  # a zero column below the diagonal: no reflection there
                a[..., 3] = a[..., 0] * (1 - 2j)  # rank deficient
            for mode in ("reduced", "complete"):
                q, r = L.qr(xp.asarray(a), mode=mode)
                qn, rn = np.linalg.qr(a, mode=mode)
                assert q.dtype == r.dtype == getattr(xp, dt)
                q, r = np.asarray(q), np.asarray(r)
                _close(xp.asarray(q @ r), a, tol)
                gram = np.conj(np.swapaxes(q, -1, -2)) @ q
                _close(xp.asarray(gram), np.broadcast_to(np.eye(q.shape[-1]), gram.shape), tol)
                assert (np.tril(r, -1) == 0).all() and (np.diagonal(r, axis1=-2, axis2=-1).imag == 0).all()
                if shape != (2, 5, 5):  # full rank: R is unique given zgeqrf's convention (real diagonal)
                    _close(xp.asarray(r), rn, 10 * tol)


def test_eigh(dev):
    """Eigenvectors kept out of the real block form's (vyre/array/_kernels/linalg_eigh_complex.py): random,
    the identity and exactly repeated eigenvalues (where the block form's doubled eigenspaces are the
    hardest case); residual ||A V - V diag(w)||, orthonormality and numpy's eigenvalues."""
    for dt, tol in _dtypes(dev):
        a = _c(3, 6, 6, dt=dt)
        q, _ = np.linalg.qr(_c(6, 6, dt="complex128"))
        cases = [a + np.conj(np.swapaxes(a, -1, -2)), np.eye(5, dtype=dt),
                 (q @ np.diag([1.0, 1.0, 1.0, 2.0, 2.0, 5.0]) @ np.conj(q.T)).astype(dt)]
        for h in cases:
            w, v = L.eigh(xp.asarray(np.tril(h) + np.triu(_c(*h.shape, dt=dt), k=1)))  # upper never read
            assert w.dtype == (xp.float32 if dt == "complex64" else xp.float64) and v.dtype == getattr(xp, dt)
            w, v = np.asarray(w), np.asarray(v)
            _close(xp.asarray(h @ v - v * w[..., None, :]), np.zeros(h.shape, dt), 10 * tol * max(1, np.abs(w).max()))
            gram = np.conj(np.swapaxes(v, -1, -2)) @ v
            _close(xp.asarray(gram), np.broadcast_to(np.eye(h.shape[-1]), gram.shape), tol)
            _close(xp.asarray(w), np.linalg.eigvalsh(h), 10 * tol)


def test_svd(dev):
    """The block form's one-sided Jacobi, its right vectors kept as V, U from the complex QR of A V: tall,
    wide, square and rank-deficient, both full_matrices; reconstruction, unitarity, numpy's values."""
    for dt, tol in _dtypes(dev):
        for shape in [(3, 6, 4), (4, 7), (2, 5, 5)]:
            a = _c(*shape, dt=dt)
            if shape == (2, 5, 5):
                a[..., 3] = a[..., 0] * 2j  # rank 4
            for full in (True, False):
                u, s, vh = L.svd(xp.asarray(a), full_matrices=full)
                assert u.dtype == vh.dtype == getattr(xp, dt) and s.dtype == (xp.float32 if dt == "complex64"
                                                                              else xp.float64)
                u, s, vh = np.asarray(u), np.asarray(s), np.asarray(vh)
                m, n = shape[-2:]
                assert u.shape[-2:] == ((m, m) if full else (m, min(m, n)))
                assert vh.shape[-2:] == ((n, n) if full else (min(m, n), n))
                k = s.shape[-1]
                _close(xp.asarray((u[..., :, :k] * s[..., None, :]) @ vh[..., :k, :]), a, 2 * tol)
                for g in (np.conj(np.swapaxes(u, -1, -2)) @ u, vh @ np.conj(np.swapaxes(vh, -1, -2))):
                    _close(xp.asarray(g), np.broadcast_to(np.eye(g.shape[-1]), g.shape), tol)
                _close(xp.asarray(s), np.linalg.svd(a, compute_uv=False), 2 * tol)


def test_empty(dev):
    u, s, vh = L.svd(xp.zeros((2, 0, 3), dtype=xp.complex64))
    assert (u.shape, s.shape, vh.shape) == ((2, 0, 0), (2, 0), (2, 3, 3))
    assert u.dtype == vh.dtype == xp.complex64 and s.dtype == xp.float32
    w, v = L.eigh(xp.zeros((0, 0), dtype=xp.complex64))
    assert w.shape == (0,) and v.dtype == xp.complex64
    q, r = L.qr(xp.zeros((3, 0), dtype=xp.complex64))
    assert q.dtype == r.dtype == xp.complex64 and q.shape == (3, 0)


def test_errors(dev):
    with pytest.raises(InvalidArgumentError, match="square"):
        L.inv(xp.asarray(_c(3, 4, dt="complex64")))
    with pytest.raises(InvalidArgumentError, match="does not match"):
        L.solve(xp.asarray(_c(3, 3, dt="complex64")), xp.asarray(_c(4, dt="complex64")))
    with pytest.raises(InvalidArgumentError, match="columns"):  # the block form doubles them
        L.svd(xp.zeros((900, 900), dtype=xp.complex64))
