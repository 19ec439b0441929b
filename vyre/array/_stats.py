"""Statistical functions of the standard (sum, prod, min, max, mean, var, std, cumulative_sum, cumulative_prod)
with axis and keepdims; reductions fuse the elementwise work that feeds them.
"""

from __future__ import annotations

__all__: list[str] = []
