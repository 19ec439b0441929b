"""Eigenvectors of a complex Hermitian matrix out of its real block form's, one workgroup per matrix.

For Hermitian A = X + iY (n x n), the symmetric E(A) = [[X, -Y], [Y, X]] has each eigenvalue of A twice, and
every eigenvector [u; v] of E(A) gives an eigenvector u + iv of A for the same value (vyre/array/
_linalg_complex.py). The 2n candidates, in E's ascending order, span each eigenspace twice over; this
kernel keeps a basis: candidate j's residual against the vectors kept so far (classical Gram-Schmidt,
applied twice for orthogonality to rounding) is kept, normalised, when its squared norm passes
``1 / (4n)``. Why that threshold is enough: for an eigenvalue of multiplicity m the squared residuals of
its 2m candidates against the kept vectors sum to 2 (m - kept), so with fewer than m kept some candidate
passes 1/m > 1/(4n); rounding noise stays far below it. Candidates of distinct eigenvalues are orthogonal
already, so a kept vector is an eigenvector (mixing only within its eigenspace), in ascending order.

Buffers: ``w`` (E's eigenvectors as columns, nb * 2n * 2n reals), ``q`` (the kept vectors as columns,
complex: 2 * nb * n * n reals), ``coef`` (2 * nb * n scratch), ``sel`` (u32 nb * n: the candidate each
column came from, whose eigenvalue it has), ``cnt`` (u32 nb: how many were kept; n unless rounding broke
the argument above), then the range uniform. One step per candidate (linalg_common.py's split).
"""

from __future__ import annotations

from typing import Any

from ...ir.program import Program
from . import cache
from .fused import Plan
from .linalg_common import per, start, steps, workgroup_for

_cached = cache.register("linalg_eigh_complex", 64, Program).get
U = "u32"


def select_program(ty: str, nb: int, n: int) -> Program:
    wg = workgroup_for(n)

    def build() -> Program:
        k_ = start(f"linalg_eigh_select_{ty}", wg, ty, nb)
        b, t, z = k_.b, k_.t, k_.z
        w = b.buffer("w", ty, "read", count=nb * 4 * n * n)
        q = b.buffer("q", ty, "read_write", count=2 * nb * n * n)
        coef = b.buffer("coef", ty, "read_write", count=2 * nb * n)
        sel = b.buffer("sel", U, "read_write", count=nb * n)
        cnt = b.buffer("cnt", U, "read_write", count=nb)
        k_.params()
        N, two = b.lit(n, U), b.lit(2, U)
        wbase = b.let(z * b.lit(4 * n * n, U), name="wbase")
        qbase = b.let(z * b.lit(2 * n * n, U), name="qbase")
        cbase = b.let(z * b.lit(2 * n, U), name="cbase")

        def qa(i: Any, k: Any) -> Any:  # the real part's index of Q[i, k]
            return qbase + (i * N + k) * two

        with b.if_(z < b.lit(nb, U)):
            with b.if_((k_.lo == 0) & (t == 0)):
                cnt[z] = b.lit(0, U)
            b.barrier("storage")
            with b.for_range(k_.lo, k_.hi) as j:
                # c (how many are kept) comes from storage: not uniform to WGSL's analysis, so no barrier sits
                # under a condition on it; once all n are kept (active false) nothing is written
                c0 = b.let(cnt[z], name="c0")
                active = b.let(c0 < N, name="open_")
                c = b.let(b.min(c0, N - b.lit(1, U)), name="c")
                with b.if_(active):
                    with b.for_range(t, N, wg) as i:  # the candidate into column c
                        q[qa(i, c)] = w[wbase + i * b.lit(2 * n, U) + j]
                        q[qa(i, c) + 1] = w[wbase + (i + N) * b.lit(2 * n, U) + j]
                b.barrier("storage")
                for _ in range(2):  # classical Gram-Schmidt, twice
                    with b.if_(active):
                        with b.for_range(t, c, wg) as k:  # coef_k = q_k^H r
                            cr = b.var(ty, b.lit(0.0, ty), name="cr")
                            ci = b.var(ty, b.lit(0.0, ty), name="ci")
                            with b.for_range(b.lit(0, U), N) as i:
                                ar, ai = b.let(q[qa(i, k)]), b.let(q[qa(i, k) + 1])
                                rr, ri = b.let(q[qa(i, c)]), b.let(q[qa(i, c) + 1])
                                cr += ar * rr + ai * ri
                                ci += ar * ri - ai * rr
                            coef[cbase + k * two] = cr
                            coef[cbase + k * two + 1] = ci
                    b.barrier("storage")
                    with b.if_(active):
                        with b.for_range(t, N, wg) as i:  # r -= sum_k q_k coef_k
                            sr = b.var(ty, q[qa(i, c)], name="sr")
                            si = b.var(ty, q[qa(i, c) + 1], name="si")
                            with b.for_range(b.lit(0, U), c) as k:
                                ar, ai = b.let(q[qa(i, k)]), b.let(q[qa(i, k) + 1])
                                gr, gi = b.let(coef[cbase + k * two]), b.let(coef[cbase + k * two + 1])
                                sr -= ar * gr - ai * gi
                                si -= ar * gi + ai * gr
                            q[qa(i, c)] = sr
                            q[qa(i, c) + 1] = si
                    b.barrier("storage")
                part = b.var(ty, b.lit(0.0, ty), name="part")
                with b.for_range(t, N, wg) as i:
                    rr, ri = b.let(q[qa(i, c)]), b.let(q[qa(i, c) + 1])
                    part += rr * rr + ri * ri
                s = k_.reduce_sum(part)
                with b.if_(active & (s > b.lit(1.0 / (4 * n), ty))):
                    inv = b.let(b.lit(1.0, ty) / s.sqrt(), name="inv")
                    with b.for_range(t, N, wg) as i:
                        q[qa(i, c)] = q[qa(i, c)] * inv
                        q[qa(i, c) + 1] = q[qa(i, c) + 1] * inv
                    with b.if_(t == 0):
                        sel[z * N + c] = j
                        cnt[z] = c + b.lit(1, U)
                b.barrier("storage")
        return b.build()

    return _cached(("select", ty, nb, n), build)


def select_steps(p: Plan, ty: str, nb: int, n: int, w: Any, q: Any, coef: Any, sel: Any, cnt: Any) -> None:
    """Append the selection over E's 2n candidates (one step each) to ``p``."""
    wg = workgroup_for(n)
    cost = per(n, wg) * 4 + 2 * (per(n, wg) * (n + 1) + per(n, wg) * (n + 1)) + 16
    steps(p, select_program(ty, nb, n), [w, q, coef, sel, cnt], nb, [cost] * (2 * n))


__all__ = ["select_program", "select_steps"]
