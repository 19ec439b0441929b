"""IR-to-IR passes. Each is a pure, deterministic function ``Program -> Program``
(or, for analyses, ``Program -> value``); none mutates its input.

The WGSL lowering runs :func:`wgsl_pipeline`:

1. :func:`hoist_atomics` - every atomic becomes the whole value of a ``let``/``eval``;
2. :func:`bool_storage` - bool buffers become u32 words;
3. :func:`mask_shifts` - shift amounts get ``& 31u``;
4. :func:`hoist_constants` - no operation is left with only constant operands
   (WGSL would fold it at shader creation and reject e.g. ``1u / 0u``).

and :func:`atomic_arrays` to learn which arrays are declared ``atomic<T>``.
"""

from __future__ import annotations

from ..program import Program
from .atomic_temps import hoist_atomics
from .atomics import atomic_arrays
from .bool_storage import bool_buffers, bool_storage
from .const_hoist import hoist_constants
from .shifts import mask_shifts

WGSL_PASSES = (hoist_atomics, bool_storage, mask_shifts, hoist_constants)


def wgsl_pipeline(program: Program) -> Program:
    """Run the passes the WGSL lowering needs, in order."""
    for p in WGSL_PASSES:
        program = p(program)
    return program


__all__ = [
    "hoist_atomics", "atomic_arrays", "bool_storage", "bool_buffers", "mask_shifts", "hoist_constants",
    "WGSL_PASSES", "wgsl_pipeline",
]
