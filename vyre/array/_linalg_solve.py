"""The linalg extension's LU and Cholesky functions, on the device (vyre/array/_kernels/linalg_lu.py):
solve, inv, det, slogdet (Gaussian elimination with partial pivoting, LAPACK getrf's pivot choice) and
cholesky, batched over the leading dimensions.

Errors: non-square matrices raise InvalidArgumentError before any GPU work. A matrix whose elimination
meets an exactly zero pivot (LAPACK's test) makes solve and inv raise :class:`LinAlgError` after the work
(one small download of the per-matrix flags); det gives 0 and slogdet (0, -inf) there, as numpy does.
cholesky raises LinAlgError when a pivot is not > 0 (not positive definite; the standard leaves this
undefined, numpy raises). Only the lower triangle of cholesky's input is read.
"""

from __future__ import annotations

from typing import NamedTuple

from ..errors import InvalidArgumentError
from . import _dtypes as D
from . import _linalg_complex as LC
from ._array import Array
from ._complex import conj, real
from ._creation import eye, tril, zeros
from ._elementwise import abs as _abs
from ._elementwise import broadcast_together, log, sign
from ._kernels.linalg_lu import cholesky_steps, eliminate_steps
from ._linalg_common import batch_count, compute_dtype, flags, ir, matrices, result, scratch, work
from ._linalg_common import is_complex as _complex
from ._manipulation import concat
from ._searching import where
from ._statistical import prod
from ._statistical import sum as _sum
from ._views import broadcast_to, reshape


class LinAlgError(InvalidArgumentError):
    """A matrix the decomposition cannot take (singular for solve/inv, not positive definite for cholesky):
    also a ``ValueError``, as numpy's LinAlgError is."""


class SlogdetResult(NamedTuple):
    sign: Array
    logabsdet: Array


def _eliminated(x: Array, b: Array | None) -> tuple[Array, Array, int, list[int]]:
    """``[x | b]`` after elimination (and back substitution when ``b`` is given): the work array
    (..., n, n + r), the info array (..., 2) and r; the indexes of singular matrices when ``b`` is given."""
    dt = compute_dtype(x)
    n = x.shape[-1]
    batch = x.shape[:-2]
    nb = batch_count(x.shape)
    src = D.astype(x, dt, copy=False)
    r = 0 if b is None else b.shape[-1]
    if b is not None:
        src = concat([src, D.astype(b, dt, copy=False)], axis=-1)
    w, p, hw = work(src, dt)
    info, hi = scratch((*batch, 2), dt, x.device)
    eliminate_steps(p, ir(dt), nb, n, r, hw, hi)
    bad: list[int] = []
    if b is not None:
        raw = p.run([hi])[0]
        bad = [int(k) for k in (flags(raw, dt, 2, 1) != 0).nonzero()[0]]
    else:
        p.run()
    return w, info, r, bad


def solve(x1: Array, x2: Array, /) -> Array:
    """The solution of ``x1 @ x = x2`` (x1: (..., M, M); x2: (..., M, K), or (M,): one vector, broadcast
    against x1's batch, the result (..., M)). Backward error ||x1 x - x2|| / (||x1|| ||x|| + ||x2||) within
    2e-5 in float32 (tested on random and ill-conditioned inputs)."""
    if isinstance(x1, Array) and isinstance(x2, Array) and "c" in (x1.dtype.kind, x2.dtype.kind):
        return _complex_solve(x1, x2)
    a = matrices(x1, "solve", square=True)
    if not isinstance(x2, Array):
        matrices(x2, "solve")  # the typed error for a non-array
    m = a.shape[-1]
    vector = x2.ndim == 1  # the standard (2024.12) and numpy 2: only a 1-D x2 is one vector
    bm = reshape(x2, (*x2.shape, 1)) if vector else x2
    if bm.ndim < 2 or bm.shape[-2] != m:
        raise InvalidArgumentError(f"solve: x2 of shape {list(x2.shape)} does not match x1 of shape {list(a.shape)}",
                                   fix="x2 must be (..., M, K) or (..., M) with M = x1.shape[-1]")
    if bm.dtype == D.bool:
        matrices(bm, "solve")
    batch = broadcast_together(a.shape[:-2], bm.shape[:-2])
    k = bm.shape[-1]
    out_dt = compute_dtype(a)
    if batch_count((*batch, 1, 1)) == 0 or m == 0 or k == 0:
        res = zeros((*batch, m, k), dtype=out_dt, device=a.device)
    else:
        aa = broadcast_to(a, (*batch, m, m))
        bb = broadcast_to(bm, (*batch, m, k))
        w, _, _, bad = _eliminated(aa, bb)
        if bad:
            raise LinAlgError(f"solve: matrix {bad[0]} of the batch is singular (a zero pivot)",
                              fix="check the system; a least-squares solution: pinv(x1) @ x2")
        res = w[..., :, m:]
    if vector:
        res = reshape(res, (*batch, m))
    return result(res, a)


def _complex_solve(x1: Array, x2: Array) -> Array:
    """solve of complex systems through the real block form (vyre/array/_linalg_complex.py)."""
    dt = D.result_type(x1, x2)
    a, b = D.astype(x1, dt, copy=False), D.astype(x2, dt, copy=False)
    matrices(real(a), "solve", square=True)  # the shape errors, before any work
    vector = b.ndim == 1
    if (b.shape[-1] if vector else b.shape[-2] if b.ndim >= 2 else -1) != a.shape[-1]:
        raise InvalidArgumentError(f"solve: x2 of shape {list(b.shape)} does not match x1 of shape {list(a.shape)}",
                                   fix="x2 must be (..., M, K) or (..., M) with M = x1.shape[-1]")
    return LC.unstack(solve(LC.embed(a), LC.stack(b, vector)), vector)


def inv(x: Array, /) -> Array:
    """The inverse of each square matrix (..., M, M), solving against the identity; LinAlgError for a
    singular one. ||x inv(x) - I|| within ~1e-5 * cond(x) in float32."""
    if isinstance(x, Array) and x.dtype.kind == "c":  # the real block form (vyre/array/_linalg_complex.py)
        matrices(real(x), "inv", square=True)
        return LC.unembed(inv(LC.embed(x)))
    a = matrices(x, "inv", square=True)
    m = a.shape[-1]
    dt = compute_dtype(a)
    if a.size == 0:
        return result(zeros(a.shape, dtype=dt, device=a.device), a)
    ident = broadcast_to(eye(m, dtype=dt, device=a.device), a.shape)
    w, _, _, bad = _eliminated(a, ident)
    if bad:
        raise LinAlgError(f"inv: matrix {bad[0]} of the batch is singular (a zero pivot)",
                          fix="check the matrix; a pseudo-inverse: vyre.array.linalg.pinv")
    return result(w[..., :, m:], a)


def _diag_info(x: Array, what: str) -> tuple[Array, Array] | None:
    a = matrices(real(x) if _complex(x) else x, what, square=True)
    if a.size == 0:
        return None
    if _complex(x):  # the complex elimination (vyre/array/_linalg_complex.py)
        return LC.lu_diagonal(x)
    w, info, _, _ = _eliminated(a, None)
    n = a.shape[-1]
    d = reshape(w, (*a.shape[:-2], n * n))[..., :: n + 1]
    return d, info[..., 0]


def det(x: Array, /) -> Array:
    """The determinant of each square matrix: the permutation's sign times the product of U's diagonal
    (relative error ~n * 1e-7 * cond in float32; 0 for an exactly singular elimination)."""
    got = _diag_info(x, "det")
    if _complex(x):
        if got is None:
            return zeros(x.shape[:-2], dtype=x.dtype, device=x.device) + 1.0
        return got[1] * prod(got[0], axis=-1)
    a = matrices(x, "det", square=True)
    if got is None:
        return result(zeros(a.shape[:-2], dtype=compute_dtype(a), device=a.device) + 1.0, a)
    d, s = got
    return result(s * prod(d, axis=-1), a)


def slogdet(x: Array, /) -> SlogdetResult:
    """(sign, log|det|) of each square matrix from the same elimination: sign 0 and -inf for a singular one."""
    got = _diag_info(x, "slogdet")
    if _complex(x):  # sign: a complex number of modulus 1 (0 for a singular matrix), as numpy's
        if got is None:
            one = zeros(x.shape[:-2], dtype=x.dtype, device=x.device) + 1.0
            return SlogdetResult(one, real(one) * 0.0)
        d, s = got
        mag = _abs(d)
        unit = where(mag == 0.0, 0.0, d / where(mag == 0.0, 1.0, mag))
        return SlogdetResult(s * prod(unit, axis=-1), _sum(log(mag), axis=-1))
    a = matrices(x, "slogdet", square=True)
    if got is None:
        one = zeros(a.shape[:-2], dtype=compute_dtype(a), device=a.device) + 1.0
        return SlogdetResult(result(one, a), result(one * 0.0, a))
    d, s = got
    sgn = s * prod(sign(d), axis=-1)
    return SlogdetResult(result(sgn, a), result(_sum(log(_abs(d)), axis=-1), a))


def cholesky(x: Array, /, *, upper: bool = False) -> Array:
    """The Cholesky factor of each symmetric positive-definite matrix: lower L with x = L L^T (upper=True:
    U = L^T, x = U^T U). Only the lower triangle is read; LinAlgError when a pivot is not > 0.
    ||x - L L^T|| / ||x|| within ~1e-6 in float32. Complex Hermitian matrices: x = L L^H (upper: U = L^H),
    on the complex kernel (vyre/array/_linalg_complex.py)."""
    a = matrices(real(x) if _complex(x) else x, "cholesky", square=True)
    if not isinstance(upper, bool):
        raise InvalidArgumentError(f"cholesky: upper must be a bool, got {upper!r}", fix="upper=True or False")
    if _complex(x):
        if x.size == 0:
            return zeros(x.shape, dtype=x.dtype, device=x.device)
        low, bad = LC.cholesky_factor(x)
        if bad.size:
            raise LinAlgError(f"cholesky: matrix {int(bad[0])} of the batch is not positive definite",
                              fix="pass Hermitian positive-definite matrices (e.g. x @ conj(x).mT + eps * I)")
        return conj(low).mT if upper else low
    dt = compute_dtype(a)
    if a.size == 0:
        return result(zeros(a.shape, dtype=dt, device=a.device), a)
    w, p, hw = work(a, dt)
    info, hi = scratch(a.shape[:-2] or (1,), dt, a.device)
    cholesky_steps(p, ir(dt), batch_count(a.shape), a.shape[-1], hw, hi)
    bad = (flags(p.run([hi])[0], dt, 1, 0) != 0).nonzero()[0]
    if bad.size:
        raise LinAlgError(f"cholesky: matrix {int(bad[0])} of the batch is not positive definite",
                          fix="pass symmetric positive-definite matrices (e.g. x @ x.mT + eps * I)")
    low = tril(w)
    return result(low.mT if upper else low, a)


__all__ = ["LinAlgError", "SlogdetResult", "solve", "inv", "det", "slogdet", "cholesky"]
