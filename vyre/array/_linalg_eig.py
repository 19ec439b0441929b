"""The linalg extension's spectral functions on the device (vyre/array/_kernels/linalg_jacobi.py): eigh and
eigvalsh (two-sided cyclic Jacobi), svd and svdvals (one-sided Jacobi; U completed to an orthonormal basis
by a Householder QR of the rotated columns), and on them pinv and matrix_rank, batched over the leading
dimensions.

* eigh reads the lower triangle (numpy's default UPLO='L'); eigenvalues ascending, eigenvectors as columns.
* svd: for M >= N, W = A rotated until its columns are orthogonal (V accumulates the rotations); the
  singular values are W's column norms, sorted descending; U is the Q of W's QR with each column's sign
  made that of R's diagonal, so U is orthonormal for rank-deficient inputs too (and complete for
  full_matrices=True). M < N runs on A^T and swaps U and V.
* pinv: V diag(1/s for s > rtol * max(s), else 0) U^T, rtol by default max(M, N) * eps (the standard's);
  matrix_rank: the count of s > rtol * max(s), same default.

Accuracy (float32, measured on random, ill-conditioned (cond ~1e4) and rank-deficient inputs up to 32 x
32): ||A V - V diag(w)|| / ||A||, ||V^T V - I||, ||A - U S Vh|| / ||A||, ||U^T U - I||, ||V V^T - I|| a few
1e-6, eigenvalues and singular values within a few 1e-6 of ||A|| (tests/array/test_linalg_spectral.py
checks 2e-5); float64 within 1e-12.
More columns than :func:`~vyre.array._kernels.linalg_jacobi.max_columns` allows (what the rotations'
workgroup arrays fit in 16 KiB: eigh 1192 in float32, 664 in float64; svd 1792 and 1108; checked at the
edge on lavapipe) raise InvalidArgumentError.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from ..errors import ArgumentTypeError, InvalidArgumentError
from . import _dtypes as D
from . import _linalg_complex as LC
from ._array import Array
from ._complex import conj, real
from ._creation import ones, tril, triu, zeros
from ._elementwise import greater, less
from ._indexing import take_along_axis
from ._kernels import dtypes as KD
from ._kernels.linalg_eigh_complex import select_steps
from ._kernels.linalg_jacobi import eigh_steps, max_columns, sort_steps, svd_steps
from ._linalg_common import batch_count, compute_dtype, ir, matrices, result, scratch, work
from ._linalg_common import is_complex as _complex
from ._linalg_qr import factor, qr
from ._manipulation import concat
from ._searching import where
from ._statistical import max as _max
from ._statistical import sum as _sum
from ._views import reshape


class EighResult(NamedTuple):
    eigenvalues: Array
    eigenvectors: Array


class SVDResult(NamedTuple):
    U: Array
    S: Array
    Vh: Array


def _columns(n: int, dt: Any, what: str, two_sided: bool) -> None:
    top = max_columns(ir(dt), two_sided)
    if n > top:
        raise InvalidArgumentError(f"{what}: {n} columns is over the {top} the device Jacobi kernels take in {dt}",
                                   fix=f"pass matrices of at most {top} columns (or reduce them first, e.g. by qr)")


def _eigh(x: Array, what: str, vectors: bool) -> tuple[Array, Array | None]:
    a = matrices(x, what, square=True)
    n = a.shape[-1]
    dt = compute_dtype(a)
    _columns(n, dt, what, True)
    batch = a.shape[:-2]
    if a.size == 0:
        return zeros((*batch, n), dtype=dt, device=a.device), zeros(a.shape, dtype=dt, device=a.device)
    low = tril(a)
    sym = low + triu(low.mT, k=1)  # the lower triangle mirrored (the upper one is never read)
    w, p, hw = work(sym, dt)
    nb, ty = batch_count(a.shape), ir(dt)
    v, hv = scratch(a.shape, dt, a.device) if vectors else (None, None)
    eigh_steps(p, ty, nb, n, hw, hv)
    kt, hk = scratch((*batch, n), dt, a.device)
    keys, hkeys = scratch((*batch, n), dt, a.device)
    vs, hvs = scratch(a.shape, dt, a.device) if vectors else (None, None)
    sort_steps(p, ty, nb, n, n, False, hw, hk, hkeys, [(n, hv, hvs)] if vectors else [])
    p.done.extend(x for x in (v, kt) if x is not None)  # alive until the steps ran
    p.run()
    return keys, vs


def eigh(x: Array, /) -> EighResult:
    """Eigenvalues (ascending) and eigenvectors (columns) of each symmetric matrix (..., M, M); complex
    Hermitian ones (their lower triangle) from the real block form's (vyre/array/_linalg_complex.py)."""
    if _complex(x):
        return _eigh_complex(x)
    keys, vs = _eigh(x, "eigh", True)
    assert vs is not None
    return EighResult(result(keys, x), result(vs, x))


def _eigh_complex(x: Array) -> EighResult:
    """E(A)'s eigenpairs, then a basis of A's eigenvectors kept out of its 2n candidates
    (vyre/array/_kernels/linalg_eigh_complex.py); each takes its candidate's eigenvalue."""
    a = matrices(real(x), "eigh", square=True)
    n, batch, rt = a.shape[-1], a.shape[:-2], a.dtype
    if a.size == 0:
        return EighResult(zeros((*batch, n), dtype=rt, device=a.device), zeros(x.shape, dtype=x.dtype,
                                                                               device=a.device))
    keys, vs = _eigh(LC.hermitian_embed(x), "eigh", True)
    assert vs is not None
    q, sel = _keep_basis(vs, n, "eigh")
    return EighResult(take_along_axis(keys, sel), q)


def eigvalsh(x: Array, /) -> Array:
    """The eigenvalues (ascending) of each symmetric matrix (..., M, M); no eigenvectors are accumulated.
    Complex Hermitian matrices (their lower triangle) through the real block form (_linalg_complex.py)."""
    if _complex(x):
        matrices(real(x), "eigvalsh", square=True)
        return LC.halve(_eigh(LC.hermitian_embed(x), "eigvalsh", False)[0])
    return result(_eigh(x, "eigvalsh", False)[0], x)


def _jacobi(a: Array, dt: Any, vectors: bool, columns: bool) -> tuple[Array | None, Array, Array | None]:
    """The one-sided Jacobi of a tall stack (m >= n), sorted by singular value (descending): the rotated
    columns A V (``columns``), s (..., n) and V (..., n, n) (``vectors``)."""
    m, n = a.shape[-2:]
    batch = a.shape[:-2]
    nb, ty = batch_count(a.shape), ir(dt)
    w, p, hw = work(a, dt)
    v, hv = scratch((*batch, n, n), dt, a.device) if vectors else (None, None)
    svd_steps(p, ty, nb, m, n, hw, hv)
    kt, hk = scratch((*batch, n), dt, a.device)
    s, hs = scratch((*batch, n), dt, a.device)
    mats: list[tuple[int, Any, Any]] = []
    ws = vs = None
    if columns:
        ws, hws = scratch(a.shape, dt, a.device)
        mats.append((m, hw, hws))
    if vectors:
        vs, hvs = scratch((*batch, n, n), dt, a.device)
        mats.append((n, hv, hvs))
    sort_steps(p, ty, nb, m, n, True, hw, hk, hs, mats)
    p.done.extend(x for x in (v, kt) if x is not None)
    p.run()
    return ws, s, vs


def _svd_tall(a: Array, dt: Any, vectors: bool, qc: int) -> tuple[Array | None, Array, Array | None]:
    """(U (..., m, qc), s (..., n), V (..., n, n)) of a tall stack (m >= n); U and V only with ``vectors``."""
    m, n = a.shape[-2:]
    batch = a.shape[:-2]
    ws, s, vs = _jacobi(a, dt, vectors, vectors)
    if ws is None:
        return None, s, None
    wr, q, p2 = factor(ws, dt, qc)
    p2.run()
    assert q is not None
    d = reshape(wr, (*batch, m * n))[..., : n * (n + 1) : n + 1]  # R's diagonal
    sgn = where(less(d, 0.0), -1.0, 1.0)
    if qc > n:
        sgn = concat([sgn, ones((*batch, qc - n), dtype=dt, device=a.device)], axis=-1)
    u = q * reshape(sgn, (*batch, 1, qc))
    return u, s, vs


def _keep_basis(vs: Array, n: int, what: str) -> tuple[Array, Array]:
    """A's n vectors kept out of the 2n columns of ``vs`` (an orthogonal matrix of E(A)'s, J-paired), and the
    column each came from (vyre/array/_kernels/linalg_eigh_complex.py)."""
    batch, rt = vs.shape[:-2], vs.dtype
    w, p, hw = work(vs, rt)
    q, hq = scratch((*batch, n, n), KD.complex_of(rt), vs.device)
    coef, hc = scratch((*batch, 2 * n), rt, vs.device)
    sel, hs = scratch((*batch, n), D.uint32, vs.device)
    cnt, hn = scratch(batch or (1,), D.uint32, vs.device)
    select_steps(p, ir(rt), batch_count(vs.shape), n, hw, hq, hc, hs, hn)
    p.done.extend((w, coef))  # alive until the steps ran
    kept = np.frombuffer(np.ascontiguousarray(p.run([hn])[0]).tobytes(), np.uint32)
    if (kept < n).any():  # rounding defeated the selection's argument: say so rather than return a partial basis
        from ._linalg_solve import LinAlgError  # why: a sibling module; imported where it is raised

        raise LinAlgError(f"{what}: matrix {int((kept < n).nonzero()[0][0])} of the batch: the vectors could not "
                          "be separated from the real block form's", fix="pass finite values")
    return q, D.astype(sel, D.int32)


def _svd_complex(x: Array, full: bool) -> SVDResult:
    """The real one-sided Jacobi of E(A) (A = x, or x^H when wide: tall), its right vectors kept as A's V
    (:func:`_keep_basis`), then U from the complex QR of A V (its columns orthogonal, R's diagonal the
    singular values up to sign), completed for full matrices."""
    from ._linalg import matmul  # why: _linalg's matrix_norm imports this module on use

    m, n = x.shape[-2:]
    tall = m >= n
    a = x if tall else conj(x).mT
    mm, nn = a.shape[-2:]
    batch = a.shape[:-2]
    e = LC.embed(a)
    rt = e.dtype
    _, s2, vs = _jacobi(e, rt, True, False)
    assert vs is not None
    vc, sel = _keep_basis(vs, nn, "svd")
    s = take_along_axis(s2, sel)
    qc = mm if full else nn
    q, r = qr(matmul(a, vc), mode="complete" if full else "reduced")
    d = real(reshape(r, (*batch, r.shape[-2] * nn))[..., : nn * (nn + 1) : nn + 1])  # R's (real) diagonal
    sgn = where(less(d, 0.0), -1.0, 1.0)
    if qc > nn:
        sgn = concat([sgn, ones((*batch, qc - nn), dtype=rt, device=a.device)], axis=-1)
    u = q * reshape(sgn, (*batch, 1, qc))
    if tall:
        return SVDResult(u, s, conj(vc).mT)
    return SVDResult(vc, s, conj(u).mT)


def _check_svd(x: Any, what: str) -> tuple[Array, Any, int, int]:
    a = matrices(x, what)
    m, n = a.shape[-2:]
    dt = compute_dtype(a)
    _columns(min(m, n), dt, what, False)
    return a, dt, m, n


def svd(x: Array, /, *, full_matrices: bool = True) -> SVDResult:
    """U, S (descending), Vh with x = U diag(S) Vh for each matrix (..., M, N), K = min(M, N):
    full_matrices=True: U (..., M, M), Vh (..., N, N); False: U (..., M, K), Vh (..., K, N)."""
    a, dt, m, n = _check_svd(real(x) if _complex(x) else x, "svd")
    if not isinstance(full_matrices, bool):
        raise ArgumentTypeError(f"svd: full_matrices must be a bool, got {full_matrices!r}", fix="True or False")
    if _complex(x):
        if not x.size:  # the real path's identities and zeros, in x's dtype
            u0, s0, v0 = svd(real(x), full_matrices=full_matrices)
            return SVDResult(D.astype(u0, x.dtype), s0, D.astype(v0, x.dtype))
        _columns(2 * min(m, n), dt, "svd", False)  # the real block form's columns
        return _svd_complex(x, full_matrices)
    k = min(m, n)
    batch = a.shape[:-2]
    if a.size == 0:
        from ._creation import eye
        from ._views import broadcast_to
        um, vn = (m, n) if full_matrices else (k, k)
        u0 = broadcast_to(eye(m, um, dtype=dt, device=a.device), (*batch, m, um))
        v0 = broadcast_to(eye(vn, n, dtype=dt, device=a.device), (*batch, vn, n))
        return SVDResult(result(u0, a), result(zeros((*batch, k), dtype=dt, device=a.device), a), result(v0, a))
    tall = m >= n
    src = a if tall else a.mT
    rows = max(m, n)
    u, s, v = _svd_tall(src, dt, True, rows if full_matrices else k)
    assert u is not None and v is not None
    if tall:
        return SVDResult(result(u, a), result(s, a), result(v.mT, a))
    return SVDResult(result(v, a), result(s, a), result(u.mT, a))


def svdvals(x: Array, /) -> Array:
    """The singular values (descending) of each matrix (..., M, N), shape (..., min(M, N)); complex ones
    through the real block form (_linalg_complex.py)."""
    if _complex(x):
        _check_svd(real(x), "svdvals")
        return LC.halve(svdvals(LC.embed(x)))
    a, dt, m, n = _check_svd(x, "svdvals")
    if a.size == 0:
        return result(zeros((*a.shape[:-2], min(m, n)), dtype=dt, device=a.device), a)
    return result(_svd_tall(a if m >= n else a.mT, dt, False, 0)[1], a)


def _rtol(rtol: Any, m: int, n: int, dt: Any, what: str) -> Any:
    if rtol is None:
        return max(m, n) * float(D.finfo(dt).eps)
    if isinstance(rtol, bool) or not isinstance(rtol, (int, float, Array)):
        raise ArgumentTypeError(f"{what}: rtol must be a float or an array, got {rtol!r}", fix="e.g. rtol=1e-6")
    return rtol


def _cutoff(s: Array, tol: Any) -> Array:
    """tol * the largest singular value, shaped (..., 1) against ``s``."""
    top = _max(s, axis=-1, keepdims=True)
    if isinstance(tol, Array):
        tol = reshape(tol, (*tol.shape, 1))
    out: Array = top * tol
    return out


def pinv(x: Array, /, *, rtol: float | Array | None = None) -> Array:
    """The Moore-Penrose pseudo-inverse (..., N, M) of each matrix, from svd (singular values at most
    rtol * max(s) count as zero; rtol by default max(M, N) * eps); complex ones through the real block form
    (_linalg_complex.py: the same singular values, so the same rtol)."""
    if _complex(x):
        _, dt, m, n = _check_svd(real(x), "pinv")
        return LC.unembed(pinv(LC.embed(x), rtol=_rtol(rtol, m, n, dt, "pinv")))
    a, dt, m, n = _check_svd(x, "pinv")
    tol = _rtol(rtol, m, n, dt, "pinv")
    if a.size == 0:
        return result(zeros((*a.shape[:-2], n, m), dtype=dt, device=a.device), a)
    from ._linalg import matmul  # why: _linalg's matrix_norm imports this module on use
    u, s, vh = svd(a, full_matrices=False)
    keep = greater(s, _cutoff(s, tol))
    inv_s = where(keep, 1.0 / where(keep, s, 1.0), 0.0)
    k = s.shape[-1]
    return result(matmul(vh.mT, u.mT * reshape(inv_s, (*s.shape[:-1], k, 1))), a)


def matrix_rank(x: Array, /, *, rtol: float | Array | None = None) -> Array:
    """The number of singular values above rtol * max(s) (rtol by default max(M, N) * eps), int32 (complex
    matrices too: svdvals')."""
    if _complex(x):
        _, dt, m, n = _check_svd(real(x), "matrix_rank")
        tol = _rtol(rtol, m, n, dt, "matrix_rank")
        s = svdvals(x)
        return _sum(D.astype(greater(s, _cutoff(s, tol)), D.int32), axis=-1)
    a, dt, m, n = _check_svd(x, "matrix_rank")
    tol = _rtol(rtol, m, n, dt, "matrix_rank")
    if a.size == 0:
        return zeros(a.shape[:-2], dtype=D.int32, device=a.device)
    s = svdvals(a)
    return _sum(D.astype(greater(s, _cutoff(s, tol)), D.int32), axis=-1)


__all__ = ["EighResult", "SVDResult", "eigh", "eigvalsh", "svd", "svdvals", "pinv", "matrix_rank"]
