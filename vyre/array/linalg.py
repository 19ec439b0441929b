"""``vyre.array.linalg``: the standard's linear algebra extension (2024.12). The functions are defined in
vyre/array/_linalg.py (which says what is provided and how); this module is the extension's namespace.
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

__all__ = ["cross", "diagonal", "matmul", "matrix_norm", "matrix_power", "matrix_transpose", "outer", "tensordot",
           "trace", "vecdot", "vector_norm"]
