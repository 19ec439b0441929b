"""Linear algebra functions of the standard (matmul and ``@``, matrix_transpose, vecdot, tensordot).
"""

from __future__ import annotations

__all__: list[str] = []
