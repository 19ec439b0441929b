"""The logical grid of a dispatch: the default-grid rule shared by every dispatch path and both
backends, and the folding of a logical grid into what a GPU can dispatch (see docs/architecture.md,
"Grid")."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..errors import DispatchError
from ..ir.nodes import Builtin, BuiltinName
from ..ir.program import Program
from ..ir.traverse import iter_exprs
from ..ir.types import Access

if TYPE_CHECKING:
    from .host import BufferPlan

#: WebGPU's maximum workgroup count per dimension (the default limit every adapter has).
MAX_WORKGROUPS_PER_DIM = 65535


class GridFacts:
    """What the default grid depends on, computed once per program: the binding-order index of
    ``grid_from`` (None when unset) and the first y/z grid built-in the program reads (as text, for
    the error; None when it reads none)."""

    __slots__ = ("grid_from", "multi_dim")

    def __init__(self, program: Program):
        decls = program.sorted_buffers
        self.grid_from = next((k for k, d in enumerate(decls) if d.name == program.grid_from), None)
        self.multi_dim = multi_dim_builtin(program)


_GRID_SHAPED = frozenset({BuiltinName.GLOBAL_ID, BuiltinName.WORKGROUP_ID, BuiltinName.NUM_WORKGROUPS})


def multi_dim_builtin(program: Program) -> str | None:
    """The first of ``global_id``, ``workgroup_id``, ``num_workgroups`` along y or z the program reads
    (``"global_id(1)"``), or None: such a program's grid has a shape the default grid cannot guess."""
    for e in iter_exprs(program.body):
        if type(e) is Builtin and e.name in _GRID_SHAPED and e.axis in (1, 2):
            return f"{e.name.value}({e.axis})"
    return None


def grid_for_count(program: Program, count: int) -> tuple[int, int, int]:
    """One invocation per element of a buffer of ``count`` elements: ``ceil(count / invocations)``
    workgroups along x (at least 1, so an empty buffer still gets one guarded workgroup)."""
    return (max(1, -(-count // program.workgroup_invocations)), 1, 1)


def default_grid(program: Program, plans: Sequence[BufferPlan],
                 facts: GridFacts | None = None) -> tuple[int, int, int]:
    """The grid of a dispatch given without one: the one shared rule of every dispatch path.

    * ``program.grid_from`` names a buffer: one invocation per element of that buffer;
    * else one invocation per element of the first writable buffer (the first buffer when
      none is writable), but only where that cannot silently cover part of the work: a
      DispatchError (before any GPU work) when the program reads ``global_id``,
      ``workgroup_id`` or ``num_workgroups`` along y or z (vyre cannot tell the grid's shape),
      or when a readable storage buffer has more elements than that buffer (vyre cannot tell
      whether the inputs or the outputs drive the work).
    """
    lay = facts if facts is not None else GridFacts(program)
    if lay.grid_from is not None:
        return grid_for_count(program, plans[lay.grid_from].count)
    if not plans:
        return (1, 1, 1)
    basis = next((p for p in plans if p.is_output), plans[0])
    fix = (f"pass an explicit grid (DispatchConfig(grid=...)), or build the program with grid_from='name' "
           f"(ProgramBuilder({program.name!r}, grid_from=...)) naming the buffer with one element per invocation")
    if lay.multi_dim is not None:
        raise DispatchError(
            f"program {program.name!r} has no grid: it reads {lay.multi_dim}, so its grid has a y/z shape "
            f"vyre cannot infer (the default grid runs ceil({basis.decl.name!r} count {basis.count} / "
            f"{program.workgroup_invocations}) workgroups along x only)",
            fix="pass an explicit grid, e.g. DispatchConfig(grid=(gx, gy)) with one workgroup per tile")
    bigger = [(p.decl.name, p.count) for p in plans
              if p.is_input and p.decl.access is not Access.UNIFORM and p.count > basis.count]
    if bigger:
        listed = ", ".join(f"{n!r} ({c})" for n, c in bigger)
        raise DispatchError(
            f"program {program.name!r} has no grid, and the default (one invocation per element of its first "
            f"writable buffer {basis.decl.name!r}, {basis.count} elements) would not cover the larger input "
            f"buffer(s) {listed}: vyre cannot tell whether the inputs or the outputs drive the work",
            fix=fix)
    return grid_for_count(program, basis.count)


def fold_grid(grid: tuple[int, int, int], max_per_dim: int = MAX_WORKGROUPS_PER_DIM) -> tuple[int, int, int]:
    """Workgroup counts to dispatch for a logical grid: its total folded into x, y, z.

    The shader recomputes the logical ids from the linear workgroup index and returns
    early from the surplus workgroups, so the result is always correct. x is the smallest width
    that fits the total in the rows needed, so the surplus is under one row (65536 workgroups
    dispatch as 32768 x 2, not 65535 x 2 with 65534 idle ones).
    """
    total = grid[0] * grid[1] * grid[2]
    if total == 0:
        return (0, 0, 0)
    z = math.ceil(total / (max_per_dim * max_per_dim))
    y = math.ceil(total / (max_per_dim * z))
    x = math.ceil(total / (y * z))
    if z > max_per_dim:
        raise DispatchError(
            f"grid {grid} has {total} workgroups, more than {max_per_dim}^3 can address",
            fix="use larger workgroups or a grid-stride loop",
        )
    return (x, y, z)


__all__ = ["MAX_WORKGROUPS_PER_DIM", "GridFacts", "grid_for_count", "default_grid", "multi_dim_builtin", "fold_grid"]
