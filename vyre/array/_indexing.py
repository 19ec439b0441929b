"""Indexing: ``x[key]`` (basic slicing, integer indexing) and ``x[key] = value`` (basic slices), ``take``,
``take_along_axis``.
"""

from __future__ import annotations

__all__: list[str] = []
