"""Gaussian elimination with partial pivoting and Cholesky, one workgroup per matrix (linalg_common.py).

* :func:`eliminate_program`: on a row-major (n, n + r) ``[A | B]`` per matrix, in place: n steps of
  LAPACK's getrf choice of pivot (the largest |a_ik| of the column, the first one on ties; a zero pivot
  is recorded and its column skipped, as getrf does), swapping whole rows and updating the trailing block
  (threads share the block's elements), so A becomes U and B becomes L^-1 P B; then, with r > 0, n back
  substitution steps (row k of B scaled by 1/u_kk, then subtracted from the rows above), so B becomes
  A^-1 B. ``info`` per matrix: [the permutation's sign, 1 if a pivot was exactly zero].
* :func:`cholesky_program`: the right-looking lower Cholesky factor in place (only the lower triangle is
  read); ``info`` per matrix: 1 if a pivot was not > 0 (not positive definite, or NaN).

The registry family is ``linalg_lu``; the IR scalar type is a parameter (f32 now, f64 when the IR has it).
"""

from __future__ import annotations

from typing import Any

from ...ir.program import Program
from . import cache
from .fused import Plan
from .linalg_common import per, start, steps, workgroup_for

_cached = cache.register("linalg_lu", 128, Program).get


def eliminate_program(ty: str, nb: int, n: int, r: int) -> Program:
    """The elimination (and, for r > 0, back substitution) program; buffers ``w`` (nb * n * (n + r),
    read_write), ``info`` (nb * 2, read_write), then the range uniform."""
    wg = workgroup_for(n + r)

    def build() -> Program:
        k_ = start(f"linalg_lu_{ty}", wg, ty, nb)
        b, t, z = k_.b, k_.t, k_.z
        width = n + r
        a = b.buffer("w", ty, "read_write", count=nb * n * width)
        info = b.buffer("info", ty, "read_write", count=nb * 2)
        k_.params()
        u = "u32"
        W = b.lit(width, u)
        base = b.let(z * b.lit(n * width, u), name="base")

        def at(i: Any, j: Any) -> Any:
            return base + i * W + j

        with b.if_(z < b.lit(nb, u)):
            with b.if_((k_.lo == 0) & (t == 0)):
                info[z * 2] = b.lit(1.0, ty)
                info[z * 2 + 1] = b.lit(0.0, ty)
            b.barrier("storage")
            with b.for_range(k_.lo, k_.hi) as s:
                with b.if_(s < b.lit(n, u)):
                    k = s
                    best = b.var(ty, b.lit(-1.0, ty), name="best")
                    arg = b.var(u, k, name="arg")
                    with b.for_range(k + t, b.lit(n, u), wg) as i:
                        v = b.let(abs(a[at(i, k)]))
                        with b.if_(v > best):
                            best.set(v)
                            arg.set(i)
                    mx, p = k_.reduce_argmax(best, arg)
                    with b.if_(p != k):
                        with b.for_range(t, W, wg) as j:
                            x = b.let(a[at(k, j)])
                            a[at(k, j)] = a[at(p, j)]
                            a[at(p, j)] = x
                        with b.if_(t == 0):
                            info[z * 2] = -info[z * 2]
                    with b.if_((t == 0) & (mx == 0.0)):
                        info[z * 2 + 1] = b.lit(1.0, ty)
                    b.barrier("storage")
                    pv = b.let(a[at(k, k)], name="pv")
                    with b.if_(pv != 0.0):
                        cols = b.let(W - k - 1, name="cols")
                        with b.for_range(t, (b.lit(n, u) - k - 1) * cols, wg) as e:
                            i = b.let(k + 1 + e / cols)
                            j = b.let(k + 1 + e % cols)
                            a[at(i, j)] = a[at(i, j)] - a[at(i, k)] / pv * a[at(k, j)]
                    b.barrier("storage")
                if r:
                    with b.if_(s >= b.lit(n, u)):
                        k = b.let(b.lit(2 * n - 1, u) - s, name="kb")
                        piv = b.let(a[at(k, k)], name="piv")
                        with b.for_range(b.lit(n, u) + t, W, wg) as j:
                            a[at(k, j)] = a[at(k, j)] / piv
                        b.barrier("storage")
                        with b.for_range(t, k * b.lit(r, u), wg) as e:
                            i = b.let(e / b.lit(r, u))
                            j = b.let(b.lit(n, u) + e % b.lit(r, u))
                            a[at(i, j)] = a[at(i, j)] - a[at(i, k)] * a[at(k, j)]
                        b.barrier("storage")
        return b.build()

    return _cached(("lu", ty, nb, n, r), build)


def eliminate_steps(p: Plan, ty: str, nb: int, n: int, r: int, w: Any, info: Any) -> None:
    """Append the elimination of ``w`` (and back substitution for r > 0) to ``p``."""
    wg = workgroup_for(n + r)
    width = n + r
    costs = [per(n - k, wg) + per(width, wg) + per((n - k - 1) * (width - k - 1), wg) + 8 for k in range(n)]
    if r:
        costs += [per(r, wg) + per(k * r, wg) for k in range(n - 1, -1, -1)]
    steps(p, eliminate_program(ty, nb, n, r), [w, info], nb, costs)


def cholesky_program(ty: str, nb: int, n: int) -> Program:
    """The lower Cholesky factor in place; buffers ``w`` (nb * n * n), ``info`` (nb), the range uniform."""
    wg = workgroup_for(n)

    def build() -> Program:
        k_ = start(f"linalg_cholesky_{ty}", wg, ty, nb)
        b, t, z = k_.b, k_.t, k_.z
        a = b.buffer("w", ty, "read_write", count=nb * n * n)
        info = b.buffer("info", ty, "read_write", count=nb)
        k_.params()
        u = "u32"
        N = b.lit(n, u)
        base = b.let(z * b.lit(n * n, u), name="base")

        def at(i: Any, j: Any) -> Any:
            return base + i * N + j

        with b.if_(z < b.lit(nb, u)):
            with b.for_range(k_.lo, k_.hi) as k:
                d = b.let(a[at(k, k)], name="d")
                with b.if_((t == 0) & ~(d > 0.0)):
                    info[z] = b.lit(1.0, ty)
                root = b.let(d.sqrt(), name="root")
                b.barrier("storage")  # every thread has read a_kk before it is replaced
                with b.if_(t == 0):
                    a[at(k, k)] = root
                with b.for_range(k + 1 + t, N, wg) as i:
                    a[at(i, k)] = a[at(i, k)] / root
                b.barrier("storage")
                m = b.let(N - k - 1, name="m")
                with b.for_range(t, m * m, wg) as e:
                    i = b.let(k + 1 + e / m)
                    j = b.let(k + 1 + e % m)
                    with b.if_(j <= i):
                        a[at(i, j)] = a[at(i, j)] - a[at(i, k)] * a[at(j, k)]
                b.barrier("storage")
        return b.build()

    return _cached(("cholesky", ty, nb, n), build)


def cholesky_steps(p: Plan, ty: str, nb: int, n: int, w: Any, info: Any) -> None:
    """Append the Cholesky factorisation of ``w`` to ``p``."""
    wg = workgroup_for(n)
    costs = [per(n - k, wg) + per((n - k - 1) ** 2, wg) + 4 for k in range(n)]
    steps(p, cholesky_program(ty, nb, n), [w, info], nb, costs)


__all__ = ["eliminate_program", "eliminate_steps", "cholesky_program", "cholesky_steps"]
