"""The ``subgroup`` variant of scan.inclusive and scan.exclusive.

Same reduce-then-scan levels and tiles as the generic kernel (``_tiles``: TILE = 256 invocations x
ITEMS elements, tile sums, their exclusive scan, then each tile scanned with its offset), but the
workgroup-wide parts go through subgroup operations (:class:`vyre.ops._subgroup.Combine`):

* ``tile_sums``: each lane folds its ITEMS coalesced loads, then a subgroup sum per subgroup, one
  barrier, and a second subgroup sum over the subgroup totals (generic: an 8-level tree, 8 barriers);
* ``scan_tile``: the tile is staged through workgroup memory as in the generic kernel so each lane
  scans ITEMS consecutive elements in registers; the 256 lane totals are then scanned with
  ``subgroupExclusiveAdd`` inside each subgroup plus the prefix of the subgroup totals (one barrier)
  instead of 8 Hillis-Steele steps with a barrier each.

Float error: per level an element passes through at most ``ITEMS - 1`` serial additions, the
workgroup prefix (:func:`vyre.ops._subgroup.prefix_depth`, worst over subgroup sizes 4..128), and
the tile offset and the lane's own run (2); a tile sum is ITEMS + :func:`~vyre.ops._subgroup.sum_depth`
deep. :func:`depth` is the longest chain; scan.*'s f32 tolerance covers it (``prefix.tolerance_for``).
"""

from __future__ import annotations

from collections.abc import Callable

from ...backends.schedule import Pipeline
from ...ir.builder import ProgramBuilder, Val
from ...ir.program import Program
from .. import _subgroup as sg
from ..variants import Variant
from . import _tiles
from ._tiles import ITEMS, TILE, WG


def subgroup_total(b: ProgramBuilder, dtype: str, t: Val, acc: Val) -> Val:
    """The workgroup's sum of ``acc``: a subgroup sum, one barrier, a sum of the subgroup totals."""
    comb = sg.Combine(b, b.workgroup_array("totals", dtype, sg.slots(WG)), WG, dtype)
    return comb.reduce(acc, "tile_total", reuse=False)


def tile_sums_program(dtype: str) -> Program:
    return _tiles.tile_sums_program(dtype, subgroup_total, "_subgroup")


def subgroup_prefix(b: ProgramBuilder, dtype: str, t: Val, total: Val) -> Val:
    """The sum of the lane totals before lane ``t``: ``subgroupExclusiveAdd`` plus the prefix of the
    subgroup totals (one barrier)."""
    comb = sg.Combine(b, b.workgroup_array("totals", dtype, sg.slots(WG)), WG, dtype)
    return comb.exclusive_prefix(total, "before")


def scan_tile_program(dtype: str, exclusive: bool) -> Program:
    return _tiles.scan_tile_program(dtype, exclusive, subgroup_prefix, "_subgroup")


def depth(n: int) -> int:
    """Longest chain of f32 additions from an element to an output, at the worst subgroup size."""
    h = (ITEMS - 1) + sg.prefix_depth(WG) + 2
    if n <= TILE:
        return h
    return h + ITEMS + sg.sum_depth(WG) + depth(-(-n // TILE))


def build_scan(n: int, dtype: str, exclusive: bool) -> Pipeline:
    """The levels of ``_tiles.build_scan`` with the subgroup programs."""
    return _tiles.build_scan(n, dtype, exclusive, tile_sums_program, scan_tile_program)


def variant(exclusive: bool, check: Callable[[int, str], tuple[int, str]]) -> Variant:
    """The variant of scan.exclusive (``exclusive``) or scan.inclusive; ``check(n, dtype)`` validates params."""
    def build(n: int, dtype: str) -> Pipeline:
        n, dtype = check(n, dtype)
        return build_scan(n, dtype, exclusive)

    return Variant(
        # not chosen automatically: on the H200 it measured no faster than the generic scan (f32 2^20:
        # 13.8 vs 11.5 µs; 2^24: 84.5 vs 83.4 µs; u32 2^24: 81.7 vs 84.0 µs); the tuner may still pick it
        name="subgroup", build=build, features=frozenset({"subgroup"}), prefer_on=frozenset({"discrete-gpu"}),
        automatic=False,
        summary="subgroupExclusiveAdd within subgroups and one barrier across them, instead of the "
                "workgroup-memory tree and Hillis-Steele steps (8 barriers each)",
    )


__all__ = ["build_scan", "depth", "variant", "tile_sums_program", "scan_tile_program"]
