"""Complex matrices through their real block form, for the decompositions that survive it exactly.

``A = X + iY`` (M x N) maps to the real ``E(A) = [[X, -Y], [Y, X]]`` (2M x 2N); E is an injective *-algebra
map (``E(AB) = E(A) E(B)``, ``E(A^H) = E(A)^T``), so what is defined by products and adjoints carries over:
``inv(E(A)) = E(inv(A))``, ``pinv(E(A)) = E(pinv(A))`` (the Penrose equations are kept), a solve of
``E(A) [u; v] = [Re b; Im b]`` gives ``x = u + iv``; E(A) has each singular value of A twice and, for a
Hermitian A (E(A) is then symmetric), each eigenvalue twice: the sorted values, every other one. So these
run on the real device kernels (vyre/array/_linalg_solve.py, _linalg_eig.py) in float32 for complex64 and
float64 for complex128, with their accuracy, at 8x the flops of a complex kernel (2x the order).

Not through E: the eigenvectors and singular vectors (E's doubled eigenspaces hand back any basis of
them, not one vector per value), det / slogdet (det E(A) = |det A|^2 loses the phase), cholesky and qr:
these raise UnsupportedDTypeError for complex input (vyre/array/_linalg_common.py).
"""

from __future__ import annotations

from ._array import Array
from ._complex import imag, make_complex, real
from ._creation import tril
from ._manipulation import concat


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


__all__ = ["embed", "hermitian_embed", "unembed", "stack", "unstack", "halve"]
