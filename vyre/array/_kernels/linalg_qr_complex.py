"""Complex Householder QR, one workgroup per matrix: linalg_qr.py's program with LAPACK zgeqrf's complex
reflector on interleaved (re, im) pairs of ``ty`` (f32 for complex64, f64 for complex128).

Step k < p = min(m, n) (zlarfg): alpha = a_kk, x = a[k+1:, k], beta = -sign(Re alpha) ||(alpha, x)|| (real),
tau = (beta - alpha) / beta, v = x / (alpha - beta) with v_0 = 1 (tau = 0 when x is zero and alpha real);
H = I - tau v v^H, and H^H (conj(tau)) is applied to the columns j > k (zlarf); v is stored below the
diagonal and beta on it, so R's diagonal is real (as numpy's). With a Q buffer (m, qc), p more steps
accumulate Q = H_0 ... H_{p-1} I[:, :qc] backwards, as linalg_qr.py does.
"""

from __future__ import annotations

from typing import Any

from ...ir.program import Program
from . import cache
from .fused import Plan
from .linalg_common import per, start, steps, workgroup_for
from .linalg_lu_complex import cmul, crecip

_cached = cache.register("linalg_qr_complex", 64, Program).get
U = "u32"


def qr_complex_program(ty: str, nb: int, m: int, n: int, qc: int) -> Program:
    """Buffers ``w`` (2*nb*m*n reals), ``tau`` (2*nb*p), with qc > 0 ``q`` (2*nb*m*qc), then the range
    uniform. Steps: p factor steps, then p Q steps when qc > 0."""
    p = min(m, n)
    wg = workgroup_for(max(m, n))

    def build() -> Program:
        k_ = start(f"linalg_qr_complex_{ty}", wg, ty, nb)
        b, t, z = k_.b, k_.t, k_.z
        a = b.buffer("w", ty, "read_write", count=2 * nb * m * n)
        tau = b.buffer("tau", ty, "read_write", count=2 * nb * p)
        q = b.buffer("q", ty, "read_write", count=2 * nb * m * qc) if qc else None
        k_.params()
        M, N, P = b.lit(m, U), b.lit(n, U), b.lit(p, U)
        two = b.lit(2, U)
        base = b.let(z * b.lit(2 * m * n, U), name="base")

        def at(i: Any, j: Any) -> Any:  # the real part's index; the imaginary part follows
            return base + (i * N + j) * two

        zero, one = b.lit(0.0, ty), b.lit(1.0, ty)
        with b.if_(z < b.lit(nb, U)):
            with b.for_range(k_.lo, k_.hi) as s:
                with b.if_(s < P):
                    k = s
                    ar, ai = b.let(a[at(k, k)], name="ar"), b.let(a[at(k, k) + 1], name="ai")
                    part = b.var(ty, zero, name="part")
                    with b.for_range(k + 1 + t, M, wg) as i:
                        vr, vi = b.let(a[at(i, k)]), b.let(a[at(i, k) + 1])
                        part += vr * vr + vi * vi
                    sigma = k_.reduce_sum(part)
                    flat = b.let((sigma == 0.0) & (ai == 0.0), name="flat")
                    normx = b.let((ar * ar + ai * ai + sigma).sqrt(), name="normx")
                    beta = b.let(b.select(ar >= 0.0, -normx, normx), name="beta")
                    safe = b.let(b.select(flat, one, beta), name="safe")
                    tr = b.let(b.select(flat, zero, (beta - ar) / safe), name="tr")
                    ti = b.let(b.select(flat, zero, -ai / safe), name="ti")
                    sr0, si0 = crecip(b, b.select(flat, one, ar - beta), b.select(flat, zero, ai))
                    sr, si = b.let(b.select(flat, zero, sr0), name="sr"), b.let(b.select(flat, zero, si0), name="si")
                    with b.for_range(k + 1 + t, N, wg) as j:
                        dr = b.var(ty, a[at(k, j)], name="dr")
                        di = b.var(ty, a[at(k, j) + 1], name="di")
                        with b.for_range(k + 1, M) as i:  # v^H a_j, v_i = a_ik * scale
                            vr, vi = cmul(a[at(i, k)], a[at(i, k) + 1], sr, si)
                            vr, vi = b.let(vr), b.let(vi)
                            xr, xi = b.let(a[at(i, j)]), b.let(a[at(i, j) + 1])
                            dr += vr * xr + vi * xi
                            di += vr * xi - vi * xr
                        fr, fi = cmul(tr, -ti, dr, di)  # conj(tau) * dot
                        fr, fi = b.let(fr, name="fr"), b.let(fi, name="fi")
                        a[at(k, j)] = a[at(k, j)] - fr
                        a[at(k, j) + 1] = a[at(k, j) + 1] - fi
                        with b.for_range(k + 1, M) as i:
                            vr, vi = cmul(a[at(i, k)], a[at(i, k) + 1], sr, si)
                            vr, vi = b.let(vr), b.let(vi)
                            gr, gi = cmul(fr, fi, vr, vi)
                            a[at(i, j)] = a[at(i, j)] - gr
                            a[at(i, j) + 1] = a[at(i, j) + 1] - gi
                    b.barrier("storage")
                    with b.for_range(k + 1 + t, M, wg) as i:
                        vr, vi = cmul(a[at(i, k)], a[at(i, k) + 1], sr, si)
                        vr, vi = b.let(vr), b.let(vi)
                        a[at(i, k)] = vr
                        a[at(i, k) + 1] = vi
                    with b.if_(t == 0):
                        a[at(k, k)] = b.select(flat, ar, beta)
                        a[at(k, k) + 1] = b.select(flat, ai, zero)
                        tau[(z * P + k) * two] = tr
                        tau[(z * P + k) * two + 1] = ti
                    b.barrier("storage")
                if q is not None:
                    QC = b.lit(qc, U)
                    qbase = b.let(z * b.lit(2 * m * qc, U), name="qbase")

                    def qat(i: Any, j: Any) -> Any:
                        return qbase + (i * QC + j) * two

                    with b.if_(s == P):
                        with b.for_range(t, b.lit(m * qc, U), wg) as e:
                            q[qbase + e * two] = b.select(e / QC == e % QC, one, zero)
                            q[qbase + e * two + 1] = zero
                        b.barrier("storage")
                    with b.if_(s >= P):
                        k = b.let(b.lit(2 * p - 1, U) - s, name="kq")
                        tr = b.let(tau[(z * P + k) * two], name="tqr")
                        ti = b.let(tau[(z * P + k) * two + 1], name="tqi")
                        with b.for_range(k + t, QC, wg) as j:
                            dr = b.var(ty, q[qat(k, j)], name="qdr")
                            di = b.var(ty, q[qat(k, j) + 1], name="qdi")
                            with b.for_range(k + 1, M) as i:  # v^H q_j
                                vr, vi = b.let(a[at(i, k)]), b.let(a[at(i, k) + 1])
                                xr, xi = b.let(q[qat(i, j)]), b.let(q[qat(i, j) + 1])
                                dr += vr * xr + vi * xi
                                di += vr * xi - vi * xr
                            fr, fi = cmul(tr, ti, dr, di)  # tau * dot
                            fr, fi = b.let(fr, name="qfr"), b.let(fi, name="qfi")
                            q[qat(k, j)] = q[qat(k, j)] - fr
                            q[qat(k, j) + 1] = q[qat(k, j) + 1] - fi
                            with b.for_range(k + 1, M) as i:
                                gr, gi = cmul(fr, fi, a[at(i, k)], a[at(i, k) + 1])
                                q[qat(i, j)] = q[qat(i, j)] - gr
                                q[qat(i, j) + 1] = q[qat(i, j) + 1] - gi
                        b.barrier("storage")
        return b.build()

    return _cached(("qr", ty, nb, m, n, qc), build)


def qr_complex_steps(p: Plan, ty: str, nb: int, m: int, n: int, qc: int, w: Any, tau: Any, q: Any | None) -> None:
    """Append the factorisation of ``w`` (and Q's accumulation into ``q`` when qc > 0) to ``p``."""
    r = min(m, n)
    wg = workgroup_for(max(m, n))
    costs = [2 * per(m - k, wg) + per(n - k - 1, wg) * (4 * (m - k) + 4) + 8 for k in range(r)]
    if qc:
        costs += [per(qc - k, wg) * (4 * (m - k) + 4) + (per(m * qc, wg) if k == r - 1 else 0)
                  for k in range(r - 1, -1, -1)]
    steps(p, qr_complex_program(ty, nb, m, n, qc), [w, tau] + ([q] if qc else []), nb, costs)


__all__ = ["qr_complex_program", "qr_complex_steps"]
