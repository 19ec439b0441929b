"""Find the arrays that atomics touch.

WGSL needs every array used by an atomic builtin declared as ``array<atomic<T>>``; the
lowering then turns plain loads and stores of those arrays into ``atomicLoad`` /
``atomicStore``. This module only reports the set; it rewrites nothing.
"""

from __future__ import annotations

from ..nodes import Atomic
from ..program import Program
from ..traverse import iter_exprs


def atomic_arrays(program: Program) -> frozenset[str]:
    """Names of the buffers and workgroup arrays used by any ``Atomic`` node."""
    return frozenset(e.buffer for e in iter_exprs(program.body) if isinstance(e, Atomic))


__all__ = ["atomic_arrays"]
