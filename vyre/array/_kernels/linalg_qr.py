"""Householder QR, one workgroup per matrix (linalg_common.py), in place on a row-major (m, n) copy.

Step k < p = min(m, n) (LAPACK geqrf's reflector): x = a[k:, k], beta = -sign(a_kk) ||x||, tau =
(beta - a_kk) / beta, v = x / (a_kk - beta) with v_0 = 1 (tau = 0, no reflection, when x below the
diagonal is zero); each thread applies H = I - tau v v^T to its columns j > k (the column's dot with v,
then the update), then v is stored below the diagonal and beta on it. So the upper triangle is R.

With a Q buffer (m, qc) (qc = p: 'reduced', m: 'complete'), p more steps accumulate Q = H_0 ... H_{p-1}
I[:, :qc] backwards (step k touches rows and columns >= k only: the identity's structure), starting from
the identity written by the first of them. The registry family is ``linalg_qr``.
"""

from __future__ import annotations

from typing import Any

from ...ir.program import Program
from . import cache
from .fused import Plan
from .linalg_common import per, start, steps, workgroup_for

_cached = cache.register("linalg_qr", 128, Program).get


def qr_program(ty: str, nb: int, m: int, n: int, qc: int) -> Program:
    """Buffers ``w`` (nb*m*n, read_write), ``tau`` (nb*p, read_write), with qc > 0 ``q`` (nb*m*qc,
    read_write), then the range uniform. Steps: p factor steps, then p Q steps when qc > 0."""
    p = min(m, n)
    wg = workgroup_for(max(m, n))

    def build() -> Program:
        k_ = start(f"linalg_qr_{ty}", wg, ty, nb)
        b, t, z = k_.b, k_.t, k_.z
        a = b.buffer("w", ty, "read_write", count=nb * m * n)
        tau = b.buffer("tau", ty, "read_write", count=nb * p)
        q = b.buffer("q", ty, "read_write", count=nb * m * qc) if qc else None
        k_.params()
        u = "u32"
        M, N, P = b.lit(m, u), b.lit(n, u), b.lit(p, u)
        base = b.let(z * b.lit(m * n, u), name="base")

        def at(i: Any, j: Any) -> Any:
            return base + i * N + j

        zero = b.lit(0.0, ty)
        with b.if_(z < b.lit(nb, u)):
            with b.for_range(k_.lo, k_.hi) as s:
                with b.if_(s < P):
                    k = s
                    alpha = b.let(a[at(k, k)], name="alpha")
                    part = b.var(ty, zero, name="part")
                    with b.for_range(k + 1 + t, M, wg) as i:
                        v = b.let(a[at(i, k)])
                        part += v * v
                    sigma = k_.reduce_sum(part)
                    flat = b.let(sigma == 0.0, name="flat")
                    normx = b.let((alpha * alpha + sigma).sqrt(), name="normx")
                    beta = b.let(b.select(alpha >= 0.0, -normx, normx), name="beta")
                    tk = b.let(b.select(flat, zero, (beta - alpha) / b.select(flat, b.lit(1.0, ty), beta)), name="tk")
                    scale = b.let(b.select(flat, zero, b.lit(1.0, ty) / b.select(flat, b.lit(1.0, ty), alpha - beta)),
                                  name="scale")
                    with b.for_range(k + 1 + t, N, wg) as j:
                        dot = b.var(ty, a[at(k, j)], name="hdot")
                        with b.for_range(k + 1, M) as i:
                            dot += a[at(i, k)] * scale * a[at(i, j)]
                        f = b.let(tk * dot, name="f")
                        a[at(k, j)] = a[at(k, j)] - f
                        with b.for_range(k + 1, M) as i:
                            a[at(i, j)] = a[at(i, j)] - f * (a[at(i, k)] * scale)
                    b.barrier("storage")
                    with b.for_range(k + 1 + t, M, wg) as i:
                        a[at(i, k)] = a[at(i, k)] * scale
                    with b.if_(t == 0):
                        a[at(k, k)] = b.select(flat, alpha, beta)
                        tau[z * P + k] = tk
                    b.barrier("storage")
                if q is not None:
                    QC = b.lit(qc, u)
                    qbase = b.let(z * b.lit(m * qc, u), name="qbase")
                    with b.if_(s == P):
                        with b.for_range(t, b.lit(m * qc, u), wg) as e:
                            q[qbase + e] = b.select(e / QC == e % QC, b.lit(1.0, ty), zero)
                        b.barrier("storage")
                    with b.if_(s >= P):
                        k = b.let(b.lit(2 * p - 1, u) - s, name="kq")
                        tk = b.let(tau[z * P + k], name="tq")
                        with b.for_range(k + t, QC, wg) as j:
                            dot = b.var(ty, q[qbase + k * QC + j], name="qdot")
                            with b.for_range(k + 1, M) as i:
                                dot += a[at(i, k)] * q[qbase + i * QC + j]
                            f = b.let(tk * dot, name="qf")
                            q[qbase + k * QC + j] = q[qbase + k * QC + j] - f
                            with b.for_range(k + 1, M) as i:
                                q[qbase + i * QC + j] = q[qbase + i * QC + j] - f * a[at(i, k)]
                        b.barrier("storage")
        return b.build()

    return _cached(("qr", ty, nb, m, n, qc), build)


def qr_steps(p: Plan, ty: str, nb: int, m: int, n: int, qc: int, w: Any, tau: Any, q: Any | None) -> None:
    """Append the factorisation of ``w`` (and Q's accumulation into ``q`` when qc > 0) to ``p``."""
    r = min(m, n)
    wg = workgroup_for(max(m, n))
    costs = [2 * per(m - k, wg) + per(n - k - 1, wg) * (2 * (m - k) + 2) + 8 for k in range(r)]
    if qc:
        costs += [per(qc - k, wg) * (2 * (m - k) + 2) + (per(m * qc, wg) if k == r - 1 else 0)
                  for k in range(r - 1, -1, -1)]
    steps(p, qr_program(ty, nb, m, n, qc), [w, tau] + ([q] if qc else []), nb, costs)


__all__ = ["qr_program", "qr_steps"]
