"""Searching and sorting functions of the standard (argmax, argmin, sort, argsort, nonzero, searchsorted,
count_nonzero).
"""

from __future__ import annotations

__all__: list[str] = []
