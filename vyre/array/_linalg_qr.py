"""The linalg extension's qr on the device: Householder reflections (vyre/array/_kernels/linalg_qr.py,
LAPACK geqrf's sign convention, so R's diagonal may be negative as numpy's is), batched over the leading
dimensions. Accuracy (float32, measured on random, ill-conditioned and rank-deficient inputs up to 32 x
32): ||A - QR|| / ||A|| and ||Q^T Q - I|| within ~1e-6 (tested at 2e-5). Complex matrices: zgeqrf's
reflectors (vyre/array/_kernels/linalg_qr_complex.py; R's diagonal real, Q unitary)."""

from __future__ import annotations

from typing import Any, NamedTuple

from ..errors import InvalidArgumentError
from ._array import Array
from ._complex import real
from ._creation import triu, zeros
from ._kernels.fused import Plan
from ._kernels.linalg_qr import qr_steps
from ._kernels.linalg_qr_complex import qr_complex_steps
from ._linalg_common import batch_count, compute_dtype, ir, matrices, result, scratch, work


class QRResult(NamedTuple):
    Q: Array
    R: Array


def factor(x: Array, dt: Any, qc: int) -> tuple[Array, Array | None, Plan]:
    """The factored work array (R in its upper triangle) and, for qc > 0, Q (..., m, qc), with the plan
    holding their steps (not yet run)."""
    m, n = x.shape[-2:]
    batch = x.shape[:-2]
    w, p, hw = work(x, dt)
    tau, ht = scratch((*batch, min(m, n)), dt, x.device)
    q, hq = scratch((*batch, m, qc), dt, x.device) if qc else (None, None)
    if dt.kind == "c":  # complex64 / complex128: zgeqrf's reflectors on the pairs' real type
        qr_complex_steps(p, ir(real(w).dtype), batch_count(x.shape), m, n, qc, hw, ht, hq)
    else:
        qr_steps(p, ir(dt), batch_count(x.shape), m, n, qc, hw, ht, hq)
    p.done.append(tau)  # kept alive (and committed) until the steps have run
    return w, q, p


def qr(x: Array, /, *, mode: str = "reduced") -> QRResult:
    """QR of each matrix (..., M, N), K = min(M, N): mode 'reduced' gives Q (..., M, K), R (..., K, N);
    'complete' gives Q (..., M, M), R (..., M, N)."""
    cplx = isinstance(x, Array) and x.dtype.kind == "c"
    a = matrices(real(x) if cplx else x, "qr")
    if cplx:
        a = x
    if mode not in ("reduced", "complete"):
        raise InvalidArgumentError(f"qr: mode must be 'reduced' or 'complete', got {mode!r}",
                                   fix="mode='reduced' (the default) or mode='complete'")
    m, n = a.shape[-2:]
    k = min(m, n)
    qc, rows = (k, k) if mode == "reduced" else (m, m)
    dt = a.dtype if cplx else compute_dtype(a)
    batch = a.shape[:-2]
    if a.size == 0:
        return QRResult(result(zeros((*batch, m, qc), dtype=dt, device=a.device), a),
                        result(zeros((*batch, rows, n), dtype=dt, device=a.device), a))
    w, q, p = factor(a, dt, qc)
    p.run()
    assert q is not None
    r = triu(w if rows == m else w[..., :rows, :])
    return QRResult(result(q, a), result(r, a))


__all__ = ["QRResult", "factor", "qr"]
