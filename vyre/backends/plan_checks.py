"""Checks of a dispatch plan before any GPU work: uniform buffer sizes, a resident handle bound to
several buffers of which one is written, and (on llvmpipe) loops that would be cut short. Each raises a
typed vyre error naming the buffer or loop and a fix."""

from __future__ import annotations

from collections.abc import Sequence

from ..errors import DispatchError, ValidationError
from ..ir.trips import loop_iterations_issue
from ..ir.types import Access
from .host import DispatchPlan


def check_uniform_sizes(plan: DispatchPlan, limit: int, what: str = "") -> None:
    """Every uniform buffer of ``plan`` fits the adapter's uniform binding limit (16-byte rows)."""
    for b in plan.buffers:
        if b.decl.access is Access.UNIFORM and (b.nbytes + 15) // 16 * 16 > limit:
            raise DispatchError(
                f"{what + ': ' if what else ''}uniform buffer {b.decl.name!r} needs {b.nbytes} bytes, over this "
                f"adapter's uniform binding limit of {limit} bytes",
                fix="declare it with access='read' (a read-only storage buffer) instead",
            )


def check_loop_iterations(plan: DispatchPlan, cap: int | None) -> None:
    """On an adapter that ends loops after ``cap`` iterations (llvmpipe), refuse a dispatch whose loops run
    more with its buffer sizes (bounds like ``len(x)``, which the validator cannot count) before any GPU
    work: ValidationError, rule ``loop-iterations`` (see vyre/ir/trips.py)."""
    if cap is None:
        return
    issue = loop_iterations_issue(plan.program, cap, {b.decl.name: b.count for b in plan.buffers})
    if issue is not None:
        raise ValidationError(plan.program.name, [issue])


def check_resident_bindings(plan: DispatchPlan, handle_ids: Sequence[int], limit: int, what: str) -> None:
    """A resident dispatch's checks beyond sizes: uniform buffers within ``limit``, and no handle bound to
    several buffers of the program when one of them is writable (the shader's view would be ambiguous)."""
    check_uniform_sizes(plan, limit, what)
    writers: dict[int, bool] = {}
    for b, hid in zip(plan.buffers, handle_ids):
        writes = b.decl.access.writable
        if hid in writers and (writes or writers[hid]):
            raise DispatchError(f"{what}: resident handle {hid} is bound to several buffers of "
                                f"{plan.program.name!r}, one of them writable",
                                fix="bind a writable buffer to its own handle")
        writers[hid] = writers.get(hid, False) or writes


__all__ = ["check_uniform_sizes", "check_loop_iterations", "check_resident_bindings"]
