"""Kept for vyre/frontend/launch.py, which imports ``astype`` from here: the standard's elementwise
functions are in vyre/array/_elementwise.py, ``astype`` in vyre/array/_dtypes.py. Remove this module
once that import names vyre.array._dtypes.
"""

from __future__ import annotations

from ._dtypes import astype

__all__ = ["astype"]
