"""Complex Gaussian elimination with partial pivoting and complex Cholesky, one workgroup per matrix: the
programs of linalg_lu.py with complex arithmetic on interleaved (re, im) pairs of ``ty`` (f32 for complex64,
f64 for complex128), the buffer read as 2 * count reals.

* :func:`eliminate_complex_program`: A becomes U in place (n steps; no right-hand side: det / slogdet are
  its only users). The pivot is LAPACK's zgetrf choice, the largest ``|re| + |im|`` of the column (the
  first on ties). ``info`` per matrix: [the permutation's sign, 1 if a pivot was exactly zero].
* :func:`cholesky_complex_program`: the lower factor of a Hermitian positive-definite matrix, x = L L^H
  (only the lower triangle is read; the diagonal's imaginary part neither); ``info``: 1 if a pivot was
  not > 0.

A quotient by a pivot multiplies by its reciprocal, computed scaled (by max(|re|, |im|)) so that no
square overflows or underflows.
"""

from __future__ import annotations

from typing import Any

from ...ir.builder import ProgramBuilder
from ...ir.program import Program
from ...ir.values import Val
from . import cache
from .fused import Plan
from .linalg_common import per, start, steps, workgroup_for

_cached = cache.register("linalg_lu_complex", 64, Program).get
U = "u32"


def cmul(ar: Any, ai: Any, br: Any, bi: Any) -> tuple[Any, Any]:
    """(ar + ai i)(br + bi i) as (re, im) expressions."""
    return ar * br - ai * bi, ar * bi + ai * br


def crecip(b: ProgramBuilder, re: Val, im: Val) -> tuple[Val, Val]:
    """1 / (re + im i), scaled: (re - im i) / (re^2 + im^2) without squaring a large or tiny part."""
    s = b.let(b.max(re.abs(), im.abs()))
    pr, pi = b.let(re / s), b.let(im / s)
    d = b.let((pr * pr + pi * pi) * s)
    return b.let(pr / d), b.let(-pi / d)


def eliminate_complex_program(ty: str, nb: int, n: int) -> Program:
    """The elimination program; buffers ``w`` (2 * nb * n * n reals, read_write), ``info`` (nb * 2), then
    the range uniform."""
    wg = workgroup_for(n)

    def build() -> Program:
        k_ = start(f"linalg_lu_complex_{ty}", wg, ty, nb)
        b, t, z = k_.b, k_.t, k_.z
        a = b.buffer("w", ty, "read_write", count=2 * nb * n * n)
        info = b.buffer("info", ty, "read_write", count=nb * 2)
        k_.params()
        N = b.lit(n, U)
        base = b.let(z * b.lit(2 * n * n, U), name="base")

        def at(i: Any, j: Any) -> Any:  # the real part's index; the imaginary part follows
            return base + (i * N + j) * b.lit(2, U)

        with b.if_(z < b.lit(nb, U)):
            with b.if_((k_.lo == 0) & (t == 0)):
                info[z * 2] = b.lit(1.0, ty)
                info[z * 2 + 1] = b.lit(0.0, ty)
            b.barrier("storage")
            with b.for_range(k_.lo, k_.hi) as k:
                best = b.var(ty, b.lit(-1.0, ty), name="best")
                arg = b.var(U, k, name="arg")
                with b.for_range(k + t, N, wg) as i:
                    v = b.let(a[at(i, k)].abs() + a[at(i, k) + 1].abs())
                    with b.if_(v > best):
                        best.set(v)
                        arg.set(i)
                mx, p = k_.reduce_argmax(best, arg)
                with b.if_(p != k):
                    with b.for_range(t, N * b.lit(2, U), wg) as j:
                        x = b.let(a[at(k, 0) + j])
                        a[at(k, 0) + j] = a[at(p, 0) + j]
                        a[at(p, 0) + j] = x
                    with b.if_(t == 0):
                        info[z * 2] = -info[z * 2]
                with b.if_((t == 0) & (mx == 0.0)):
                    info[z * 2 + 1] = b.lit(1.0, ty)
                b.barrier("storage")
                with b.if_(mx != 0.0):
                    rr, ri = crecip(b, a[at(k, k)], a[at(k, k) + 1])
                    cols = b.let(N - k - 1, name="cols")
                    with b.for_range(t, cols * cols, wg) as e:
                        i = b.let(k + 1 + e / cols)
                        j = b.let(k + 1 + e % cols)
                        lr, li = cmul(a[at(i, k)], a[at(i, k) + 1], rr, ri)
                        lr, li = b.let(lr), b.let(li)
                        pr, pi = cmul(lr, li, a[at(k, j)], a[at(k, j) + 1])
                        a[at(i, j)] = a[at(i, j)] - pr
                        a[at(i, j) + 1] = a[at(i, j) + 1] - pi
                b.barrier("storage")
        return b.build()

    return _cached(("lu", ty, nb, n), build)


def eliminate_complex_steps(p: Plan, ty: str, nb: int, n: int, w: Any, info: Any) -> None:
    """Append the elimination of ``w`` to ``p``."""
    wg = workgroup_for(n)
    costs = [per(n - k, wg) + per(2 * n, wg) + 2 * per((n - k - 1) ** 2, wg) + 8 for k in range(n)]
    steps(p, eliminate_complex_program(ty, nb, n), [w, info], nb, costs)


def cholesky_complex_program(ty: str, nb: int, n: int) -> Program:
    """The lower factor in place; buffers ``w`` (2 * nb * n * n reals), ``info`` (nb), the range uniform."""
    wg = workgroup_for(n)

    def build() -> Program:
        k_ = start(f"linalg_cholesky_complex_{ty}", wg, ty, nb)
        b, t, z = k_.b, k_.t, k_.z
        a = b.buffer("w", ty, "read_write", count=2 * nb * n * n)
        info = b.buffer("info", ty, "read_write", count=nb)
        k_.params()
        N = b.lit(n, U)
        base = b.let(z * b.lit(2 * n * n, U), name="base")

        def at(i: Any, j: Any) -> Any:
            return base + (i * N + j) * b.lit(2, U)

        with b.if_(z < b.lit(nb, U)):
            with b.for_range(k_.lo, k_.hi) as k:
                d = b.let(a[at(k, k)], name="d")  # real on the diagonal (its imaginary part is not read)
                with b.if_((t == 0) & ~(d > 0.0)):
                    info[z] = b.lit(1.0, ty)
                root = b.let(d.sqrt(), name="root")
                b.barrier("storage")  # every thread has read a_kk before it is replaced
                with b.if_(t == 0):
                    a[at(k, k)] = root
                    a[at(k, k) + 1] = b.lit(0.0, ty)
                with b.for_range(k + 1 + t, N, wg) as i:
                    a[at(i, k)] = a[at(i, k)] / root
                    a[at(i, k) + 1] = a[at(i, k) + 1] / root
                b.barrier("storage")
                m = b.let(N - k - 1, name="m")
                with b.for_range(t, m * m, wg) as e:
                    i = b.let(k + 1 + e / m)
                    j = b.let(k + 1 + e % m)
                    with b.if_(j <= i):  # a_ij -= l_ik conj(l_jk)
                        pr, pi = cmul(a[at(i, k)], a[at(i, k) + 1], a[at(j, k)], -a[at(j, k) + 1])
                        a[at(i, j)] = a[at(i, j)] - pr
                        a[at(i, j) + 1] = a[at(i, j) + 1] - pi
                b.barrier("storage")
        return b.build()

    return _cached(("cholesky", ty, nb, n), build)


def cholesky_complex_steps(p: Plan, ty: str, nb: int, n: int, w: Any, info: Any) -> None:
    """Append the complex Cholesky factorisation of ``w`` to ``p``."""
    wg = workgroup_for(n)
    costs = [per(n - k, wg) + 2 * per((n - k - 1) ** 2, wg) + 4 for k in range(n)]
    steps(p, cholesky_complex_program(ty, nb, n), [w, info], nb, costs)


__all__ = ["cmul", "crecip", "eliminate_complex_program", "eliminate_complex_steps", "cholesky_complex_program",
           "cholesky_complex_steps"]
