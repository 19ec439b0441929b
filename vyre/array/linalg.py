"""``vyre.array.linalg``: the standard's linear algebra extension (2024.12). The functions are defined in
vyre/array/_linalg.py (products, norms, views; it says what is provided and how) and, for the
decompositions that run on the device, vyre/array/_linalg_solve.py (LU, Cholesky), _linalg_qr.py
(Householder QR) and _linalg_eig.py (Jacobi eigh and svd); this module is the extension's namespace.
"""

from __future__ import annotations

from ._linalg import (
           cross,
           diagonal,
           matmul,
           matrix_norm,
           matrix_power,
           matrix_transpose,
           outer,
           tensordot,
           trace,
           vecdot,
           vector_norm,
)
from ._linalg_eig import EighResult, SVDResult, eigh, eigvalsh, matrix_rank, pinv, svd, svdvals
from ._linalg_qr import QRResult, qr
from ._linalg_solve import LinAlgError, SlogdetResult, cholesky, det, inv, slogdet, solve

__all__ = ["cholesky", "cross", "det", "diagonal", "eigh", "eigvalsh", "inv", "matmul", "matrix_norm", "matrix_power",
           "matrix_rank", "matrix_transpose", "outer", "pinv", "qr", "slogdet", "solve", "svd", "svdvals", "tensordot",
           "trace", "vecdot", "vector_norm", "LinAlgError", "EighResult", "QRResult", "SlogdetResult", "SVDResult"]
