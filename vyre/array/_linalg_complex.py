"""Complex matrices through their real block form, for the decompositions that survive it exactly.

``A = X + iY`` (M x N) maps to the real ``E(A) = [[X, -Y], [Y, X]]`` (2M x 2N); E is an injective *-algebra
map (``E(AB) = E(A) E(B)``, ``E(A^H) = E(A)^T``), so what is defined by products and adjoints carries over:
``inv(E(A)) = E(inv(A))``, ``pinv(E(A)) = E(pinv(A))`` (the Penrose equations are kept), a solve of
``E(A) [u; v] = [Re b; Im b]`` gives ``x = u + iv``; E(A) has each singular value of A twice and, for a
Hermitian A (E(A) is then symmetric), each eigenvalue twice: the sorted values, every other one. So these
run on the real device kernels (vyre/array/_linalg_solve.py, _linalg_eig.py) in float32 for complex64 and
float64 for complex128, with their accuracy, at 8x the flops of a complex kernel (2x the order).

Not through E: det / slogdet (det E(A) = |det A|^2 loses the phase) and cholesky (E's factor is not E of
one) run complex kernels instead (vyre/array/_kernels/linalg_lu_complex.py: :func:`lu_diagonal`,
:func:`cholesky_factor`), as qr does (_linalg_qr.py). E's eigenvectors (right singular vectors) give
A's, each eigenspace twice over: eigh and svd keep a basis of them (vyre/array/_kernels/
linalg_eigh_complex.py; svd's U then from the complex QR of A V, vyre/array/_linalg_eig.py).
"""

from __future__ import annotations

from typing import Any

from ._array import Array
from ._complex import imag, make_complex, real
from ._creation import tril
from ._kernels.linalg_lu_complex import cholesky_complex_steps, eliminate_complex_steps
from ._linalg_common import batch_count, flags, ir, scratch, work
from ._manipulation import concat
from ._views import reshape


def embed(x: Array) -> Array:
    """(..., M, N) complex -> (..., 2M, 2N) real: ``[[X, -Y], [Y, X]]``."""
    re, im = real(x), imag(x)
    return concat([concat([re, -im], axis=-1), concat([im, re], axis=-1)], axis=-2)


def hermitian_embed(x: Array) -> Array:
    """:func:`embed` of the Hermitian matrix x's lower triangle stands for (the upper one is never read, the
    diagonal's imaginary part neither, as LAPACK's): symmetric."""
    re, im = real(x), imag(x)
    low = tril(im, k=-1)
    xs, ys = tril(re) + tril(re, k=-1).mT, low - low.mT
    return concat([concat([xs, -ys], axis=-1), concat([ys, xs], axis=-1)], axis=-2)


def unembed(r: Array) -> Array:
    """The inverse of :func:`embed` on a matrix of its form: ``X`` is the top-left block, ``Y`` the
    bottom-left one."""
    m, n = r.shape[-2] // 2, r.shape[-1] // 2
    return make_complex(r[..., :m, :n], r[..., m:, :n])


def stack(b: Array, vector: bool) -> Array:
    """A right-hand side (..., M, K) (``vector``: (M,)) as the real ``[Re b; Im b]`` (..., 2M, K) / (2M,)."""
    return concat([real(b), imag(b)], axis=-1 if vector else -2)


def unstack(r: Array, vector: bool) -> Array:
    """The inverse of :func:`stack`."""
    if vector:
        m = r.shape[-1] // 2
        return make_complex(r[..., :m], r[..., m:])
    m = r.shape[-2] // 2
    return make_complex(r[..., :m, :], r[..., m:, :])


def halve(v: Array) -> Array:
    """Every other value along the last axis: E's sorted singular values or eigenvalues, each doubled."""
    return v[..., ::2]


def lu_diagonal(x: Array) -> tuple[Array, Array]:
    """U's diagonal (..., n) after the complex elimination of the non-empty square matrices ``x``, and the
    permutation's sign (..., real): det = sign * prod(diagonal)."""
    n, batch = x.shape[-1], x.shape[:-2]
    rt = real(x).dtype
    w, p, hw = work(x, x.dtype)
    info, hi = scratch((*batch, 2), rt, x.device)
    eliminate_complex_steps(p, ir(rt), batch_count(x.shape), n, hw, hi)
    p.run()
    return reshape(w, (*batch, n * n))[..., :: n + 1], info[..., 0]


def cholesky_factor(x: Array) -> tuple[Array, Any]:
    """The lower factor L (x = L L^H) of the non-empty Hermitian matrices ``x`` (their lower triangle), and
    the indexes of the matrices that are not positive definite (a numpy array)."""
    rt = real(x).dtype
    w, p, hw = work(x, x.dtype)
    info, hi = scratch(x.shape[:-2] or (1,), rt, x.device)
    cholesky_complex_steps(p, ir(rt), batch_count(x.shape), x.shape[-1], hw, hi)
    bad = (flags(p.run([hi])[0], rt, 1, 0) != 0).nonzero()[0]
    return tril(w), bad


__all__ = ["embed", "hermitian_embed", "unembed", "stack", "unstack", "halve", "lu_diagonal", "cholesky_factor"]
