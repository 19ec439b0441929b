"""Jacobi rotations, one workgroup per matrix (linalg_common.py): eigh's two-sided cyclic Jacobi, svd's
one-sided (Hestenes) Jacobi, and the sort that orders their results.

Both Jacobi kernels take the pairs of a sweep in the round-robin (chess tournament) order: n' = n rounded
up to even, n' - 1 rounds of n'/2 disjoint pairs (p, q) (an index >= n is a bye), so every rotation of a
round can be applied at once: step s of the kernel is round s mod (n' - 1), and ``sweeps`` sweeps are
sweeps * (n' - 1) steps (split into dispatches by the loop-trip budget).

* two-sided (symmetric A, eigenvectors V = I at the start): per pair, the rotation zeroing a_pq
  (Numerical Recipes' t = sgn(theta) / (|theta| + sqrt(theta^2 + 1)), theta = (a_qq - a_pp) / (2 a_pq);
  skipped when |a_pq| <= eps * sqrt(|a_pp a_qq|) or a_pq = 0); then A <- J^T A (rows), A <- A J and
  V <- V J (columns). The eigenvalues are A's diagonal.
* one-sided (W = A, m x n with m >= n; V = I): per pair, alpha = |w_p|^2, beta = |w_q|^2, gamma = w_p . w_q
  and the rotation making w_p, w_q orthogonal (skipped when |gamma| <= eps * sqrt(alpha beta)); W <- W J,
  V <- V J. The singular values are W's column norms, U's columns W's normalised columns.
* :func:`sort_program`: the keys (A's diagonal, or W's column norms) in ascending (eigh) or descending
  (svd) order, ties by index, and the columns of up to two matrices permuted alike.

The registry family is ``linalg_jacobi``.
"""

from __future__ import annotations

from typing import Any

from ...ir.program import Program
from . import cache
from .fused import Plan
from .linalg_common import Kernel, eps_of, ilog2, per, start, steps, workgroup_for

_cached = cache.register("linalg_jacobi", 128, Program).get

MAX_N = 2048  # columns: the sort's rank loop stays inside the loop-trip limit
WORKGROUP_BYTES = 16_384  # WebGPU's default maxComputeWorkgroupStorageSize


def max_columns(ty: str, two_sided: bool) -> int:
    """The most columns a Jacobi kernel of scalar type ``ty`` takes: its per-pair workgroup arrays (p, q as
    u32; c, s and, two-sided, the 2 x 2 block's diagonal in ``ty``) and the reduction scratch fit in
    :data:`WORKGROUP_BYTES`, and at most :data:`MAX_N`."""
    size = 8 if ty == "f64" else 4

    def r16(b: int) -> int:  # the validator rounds each workgroup array up to 16 bytes
        return -(-b // 16) * 16

    def need(n: int) -> int:
        nh, wg = (n + 1) // 2, workgroup_for(n)
        return r16(wg * size) + r16(wg * 4) + 2 * r16(nh * 4) + (4 if two_sided else 2) * r16(nh * size)

    n = MAX_N
    while n > 2 and need(n) > WORKGROUP_BYTES:
        n -= 2  # even: an odd n has the pairs of n + 1
    return n


def sweeps_for(n: int, ty: str) -> int:
    """Sweeps of cyclic Jacobi: convergence is quadratic once the off-diagonal part is small. Measured in
    float32: log2(n) + 4 sweeps reach the roundoff for random matrices but not for ill-conditioned ones
    (cond 1e4, 32 x 32: svd's singular values 1e-5 off), log2(n) + 6 for both; + 3 more for float64."""
    return ilog2(n) + (9 if ty == "f64" else 6)


def _pairs(k: Kernel, s: Any, n: int) -> tuple[Any, Any, Any]:
    """(pair slot bound H, and a function of the slot giving (p, q)) for round s mod (n' - 1)."""
    b = k.b
    ne = n + (n & 1)
    r = b.let(s % b.lit(ne - 1, "u32"), name="rnd")

    def pos(j: Any) -> Any:
        return b.select(j == 0, b.lit(0, "u32"), b.lit(1, "u32") + (j - 1 + r) % b.lit(ne - 1, "u32"))

    return b.lit(ne // 2, "u32"), pos, ne


def _rotations(k: Kernel, ty: str, n: int, s: Any, coeffs: Any,
               extra: tuple[Any, Any, list[Any]] | None = None) -> tuple[Any, Any, Any, Any, Any]:
    """Record the rotation of every pair of round ``s`` into workgroup arrays: ``coeffs(p, q)`` gives
    (c, s) (or does so for pairs with q < n only). Returns the arrays (P, Q, C, S) and H."""
    b, t, wg = k.b, k.t, k.wg
    half, pos, ne = _pairs(k, s, n)
    P = b.workgroup_array("pp", "u32", ne // 2)
    Q = b.workgroup_array("qq", "u32", ne // 2)
    C = b.workgroup_array("cc", ty, ne // 2)
    S = b.workgroup_array("ss", ty, ne // 2)
    with b.for_range(t, half, wg) as i:
        p0, q0 = b.let(pos(i)), b.let(pos(b.lit(ne - 1, "u32") - i))
        p, q = b.let(b.min(p0, q0)), b.let(b.max(p0, q0))
        c = b.var(ty, b.lit(1.0, ty), name="rc")
        sn = b.var(ty, b.lit(0.0, ty), name="rs")
        with b.if_(q < b.lit(n, "u32")):
            coeffs(p, q, c, sn)
        P[i], Q[i], C[i], S[i] = p, q, c, sn
        if extra is not None:
            extra[0][i], extra[1][i] = extra[2][0], extra[2][1]
    b.barrier()
    return P, Q, C, S, half


def _tangent(k: Kernel, ty: str, x: Any) -> Any:
    """sgn(x) / (|x| + sqrt(x^2 + 1)): the smaller root (|t| <= 1) of the rotation's quadratic."""
    b = k.b
    one = b.lit(1.0, ty)
    return b.select(x >= 0.0, one, -one) / (abs(x) + (x * x + one).sqrt())


def _rotate_columns(k: Kernel, mat: Any, base: Any, rows: int, cols: int, P: Any, Q: Any, C: Any, S: Any,
                    half: Any, nh: int) -> None:
    """mat[:, p], mat[:, q] <- c mat[:, p] - s mat[:, q], s mat[:, p] + c mat[:, q] for every pair."""
    b = k.b
    with b.for_range(k.t, b.lit(rows * nh, "u32"), k.wg) as e:
        i = b.let(e % half)
        row = b.let(e / half)
        sn = b.let(S[i])
        with b.if_(sn != 0.0):
            c, ip, iq = b.let(C[i]), b.let(base + row * cols + P[i]), b.let(base + row * cols + Q[i])
            x, y = b.let(mat[ip]), b.let(mat[iq])
            mat[ip] = c * x - sn * y
            mat[iq] = sn * x + c * y


def _identity(k: Kernel, ty: str, v: Any, base: Any, n: int) -> None:
    b = k.b
    with b.for_range(k.t, b.lit(n * n, "u32"), k.wg) as e:
        v[base + e] = b.select(e / n == e % n, b.lit(1.0, ty), b.lit(0.0, ty))


def eigh_program(ty: str, nb: int, n: int, vectors: bool) -> Program:
    """Two-sided Jacobi: buffers ``a`` (nb*n*n, read_write), ``v`` (nb*n*n) when ``vectors``, the range."""
    wg = workgroup_for(n)
    nh = (n + (n & 1)) // 2
    eps = eps_of(ty)

    def build() -> Program:
        k = start(f"linalg_eigh_{ty}", wg, ty, nb)
        b, z = k.b, k.z
        a = b.buffer("a", ty, "read_write", count=nb * n * n)
        v = b.buffer("v", ty, "read_write", count=nb * n * n) if vectors else None
        k.params()
        base = b.let(z * b.lit(n * n, "u32"), name="base")

        d1 = b.workgroup_array("d1", ty, nh)  # the rotated pair's diagonal, a_pp - t a_pq and a_qq + t a_pq
        d2 = b.workgroup_array("d2", ty, nh)

        def coeffs(p: Any, q: Any, c: Any, sn: Any) -> None:
            apq = b.let(a[base + p * n + q])
            app, aqq = b.let(a[base + p * n + p]), b.let(a[base + q * n + q])
            with b.if_((apq != 0.0) & (abs(apq) > (abs(app * aqq)).sqrt() * eps)):
                tt = b.let(_tangent(k, ty, (aqq - app) / (apq * 2.0)))
                cc = b.let(b.lit(1.0, ty) / (tt * tt + 1.0).sqrt())
                c.set(cc)
                sn.set(tt * cc)
                diag[0].set(app - tt * apq)
                diag[1].set(aqq + tt * apq)

        diag: list[Any] = []

        with b.if_(z < b.lit(nb, "u32")):
            if v is not None:
                with b.if_(k.lo == 0):
                    _identity(k, ty, v, base, n)
                    b.barrier("storage")
            with b.for_range(k.lo, k.hi) as s:
                diag[:] = [b.var(ty, b.lit(0.0, ty), name="dp"), b.var(ty, b.lit(0.0, ty), name="dq")]
                P, Q, C, S, half = _rotations(k, ty, n, s, coeffs, (d1, d2, diag))
                with b.for_range(k.t, b.lit(n * nh, "u32"), wg) as e:  # rows: A <- J^T A
                    i = b.let(e / n)
                    col = b.let(e % n)
                    sn = b.let(S[i])
                    with b.if_(sn != 0.0):
                        c, ip, iq = b.let(C[i]), b.let(base + P[i] * n + col), b.let(base + Q[i] * n + col)
                        x, y = b.let(a[ip]), b.let(a[iq])
                        a[ip] = c * x - sn * y
                        a[iq] = sn * x + c * y
                b.barrier("storage")
                _rotate_columns(k, a, base, n, n, P, Q, C, S, half, nh)
                if v is not None:
                    _rotate_columns(k, v, base, n, n, P, Q, C, S, half, nh)
                b.barrier("storage")
                # the pair's 2 x 2 block exactly: the rotated diagonal in its accurate form, a_pq = 0
                with b.for_range(k.t, half, wg) as i:
                    with b.if_(S[i] != 0.0):
                        p, q = b.let(P[i]), b.let(Q[i])
                        a[base + p * n + p] = d1[i]
                        a[base + q * n + q] = d2[i]
                        a[base + p * n + q] = b.lit(0.0, ty)
                        a[base + q * n + p] = b.lit(0.0, ty)
                b.barrier("storage")
                b.barrier()  # the rotation arrays are rewritten by the next round
        return b.build()

    return _cached(("eigh", ty, nb, n, vectors), build)


def eigh_steps(p: Plan, ty: str, nb: int, n: int, a: Any, v: Any | None) -> None:
    wg = workgroup_for(n)
    nh = (n + (n & 1)) // 2
    rounds = n + (n & 1) - 1
    cost = 2 * per(nh, wg) + per(n * nh, wg) * (3 if v is not None else 2) + 4
    total = sweeps_for(n, ty) * rounds
    costs = [cost + (per(n * n, wg) if s == 0 and v is not None else 0) for s in range(total)]
    steps(p, eigh_program(ty, nb, n, v is not None), [a] + ([v] if v is not None else []), nb, costs)


def svd_program(ty: str, nb: int, m: int, n: int, vectors: bool) -> Program:
    """One-sided Jacobi: buffers ``w`` (nb*m*n, read_write), ``v`` (nb*n*n) when ``vectors``, the range."""
    wg = workgroup_for(max(m, n))
    nh = (n + (n & 1)) // 2
    eps = eps_of(ty)

    def build() -> Program:
        k = start(f"linalg_svd_{ty}", wg, ty, nb)
        b, z = k.b, k.z
        w = b.buffer("w", ty, "read_write", count=nb * m * n)
        v = b.buffer("v", ty, "read_write", count=nb * n * n) if vectors else None
        k.params()
        base = b.let(z * b.lit(m * n, "u32"), name="base")
        vbase = b.let(z * b.lit(n * n, "u32"), name="vbase")

        def coeffs(p: Any, q: Any, c: Any, sn: Any) -> None:
            al = b.var(ty, b.lit(0.0, ty), name="al")
            be = b.var(ty, b.lit(0.0, ty), name="be")
            ga = b.var(ty, b.lit(0.0, ty), name="ga")
            with b.for_range(0, b.lit(m, "u32")) as i:
                x, y = b.let(w[base + i * n + p]), b.let(w[base + i * n + q])
                al += x * x
                be += y * y
                ga += x * y
            with b.if_((ga != 0.0) & (abs(ga) > (al * be).sqrt() * eps)):
                tt = b.let(_tangent(k, ty, (be - al) / (ga * 2.0)))
                cc = b.let(b.lit(1.0, ty) / (tt * tt + 1.0).sqrt())
                c.set(cc)
                sn.set(tt * cc)

        with b.if_(z < b.lit(nb, "u32")):
            if v is not None:
                with b.if_(k.lo == 0):
                    _identity(k, ty, v, vbase, n)
                    b.barrier("storage")
            with b.for_range(k.lo, k.hi) as s:
                P, Q, C, S, half = _rotations(k, ty, n, s, coeffs)
                _rotate_columns(k, w, base, m, n, P, Q, C, S, half, nh)
                if v is not None:
                    _rotate_columns(k, v, vbase, n, n, P, Q, C, S, half, nh)
                b.barrier("storage")
                b.barrier()
        return b.build()

    return _cached(("svd", ty, nb, m, n, vectors), build)


def svd_steps(p: Plan, ty: str, nb: int, m: int, n: int, w: Any, v: Any | None) -> None:
    wg = workgroup_for(max(m, n))
    nh = (n + (n & 1)) // 2
    rounds = max(1, n + (n & 1) - 1)
    cost = per(nh, wg) * (m + 1) + per(m * nh, wg) + (per(n * nh, wg) if v is not None else 0) + 4
    total = sweeps_for(n, ty) * rounds
    costs = [cost + (per(n * n, wg) if s == 0 and v is not None else 0) for s in range(total)]
    steps(p, svd_program(ty, nb, m, n, v is not None), [w] + ([v] if v is not None else []), nb, costs)


def sort_program(ty: str, nb: int, rows: int, n: int, norms: bool, mats: tuple[int, ...]) -> Program:
    """Buffers ``src`` (nb*rows*n: its diagonal (rows == n) or, ``norms``, its column norms are the keys),
    ``kt`` (nb*n scratch), ``keys`` (nb*n, the sorted keys), then per entry R of ``mats`` an input (nb*R*n)
    and an output whose columns are the input's in the keys' order; the range uniform (one step).
    Ascending for diagonals, descending for norms."""
    wg = workgroup_for(n)

    def build() -> Program:
        k = start(f"linalg_sort_{ty}", wg, ty, nb)
        b, z, t = k.b, k.z, k.t
        src = b.buffer("src", ty, "read", count=nb * rows * n)
        kt = b.buffer("kt", ty, "read_write", count=nb * n)
        keys = b.buffer("keys", ty, "read_write", count=nb * n)
        io = [(b.buffer(f"in{j}", ty, "read", count=nb * r * n),
               b.buffer(f"out{j}", ty, "read_write", count=nb * r * n), r) for j, r in enumerate(mats)]
        k.params()
        base = b.let(z * b.lit(rows * n, "u32"), name="base")
        kb = b.let(z * b.lit(n, "u32"), name="kb")
        N = b.lit(n, "u32")
        with b.if_(z < b.lit(nb, "u32")):
            with b.for_range(t, N, wg) as j:
                if norms:
                    acc = b.var(ty, b.lit(0.0, ty), name="acc")
                    with b.for_range(0, b.lit(rows, "u32")) as i:
                        x = b.let(src[base + i * n + j])
                        acc += x * x
                    kt[kb + j] = acc.sqrt()
                else:
                    kt[kb + j] = src[base + j * (n + 1)]
            b.barrier("storage")
            with b.for_range(t, N, wg) as j:
                key = b.let(kt[kb + j])
                rank = b.var("u32", b.lit(0, "u32"), name="rank")
                with b.for_range(0, N) as i:
                    o = b.let(kt[kb + i])
                    ahead = (o > key) if norms else (o < key)
                    with b.if_(ahead | ((o == key) & (i < j))):
                        rank += 1
                keys[kb + rank] = key
                for src_m, dst_m, r in io:
                    mb = b.let(z * b.lit(r * n, "u32"))
                    with b.for_range(0, b.lit(r, "u32")) as i:
                        dst_m[mb + i * n + rank] = src_m[mb + i * n + j]
        return b.build()

    return _cached(("sort", ty, nb, rows, n, norms, mats), build)


def sort_steps(p: Plan, ty: str, nb: int, rows: int, n: int, norms: bool, src: Any, kt: Any, keys: Any,
               mats: list[tuple[int, Any, Any]]) -> None:
    """Append the sort (see :func:`sort_program`); ``mats``: (rows, input handle, output handle)."""
    wg = workgroup_for(n)
    cost = per(n, wg) * ((rows if norms else 0) + n + sum(r for r, _, _ in mats) + 4)
    prog = sort_program(ty, nb, rows, n, norms, tuple(r for r, _, _ in mats))
    handles = [src, kt, keys] + [h for _, i, o in mats for h in (i, o)]
    steps(p, prog, handles, nb, [cost])


__all__ = ["MAX_N", "WORKGROUP_BYTES", "max_columns", "sweeps_for", "eigh_program", "eigh_steps", "svd_program",
           "svd_steps", "sort_program", "sort_steps"]
