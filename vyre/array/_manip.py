"""Manipulation functions of the standard (expand_dims, squeeze, concat, stack, flip, moveaxis, roll, tile,
repeat, unstack, broadcast_arrays).
"""

from __future__ import annotations

__all__: list[str] = []
