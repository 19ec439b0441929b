"""Tiled multi-level prefix sums (reduce-then-scan).

The input is cut into tiles of TILE = 256 invocations x ITEMS elements. With more than one
tile, a level is three parts:

1. ``tile_sums``: each workgroup sums its tile (ITEMS coalesced loads per lane in registers,
   then a tree in workgroup memory) into ``sums[tile]``;
2. the tile sums are scanned *exclusively* by the same construction, recursively, giving
   each tile's offset (levels are laid out at build time from n: a level per factor of
   TILE, e.g. 3 levels past TILE^2 = 1M elements);
3. ``scan_tile``: each workgroup scans its tile and adds its offset. Lanes load the tile
   coalesced (element j*256 + lane) into workgroup memory, then each lane takes ITEMS
   consecutive elements into registers and scans them serially; the 256 lane totals are
   scanned by Hillis-Steele with double buffering (one barrier per step); lane results are
   written back to workgroup memory and stored coalesced. Workgroup memory is padded by
   one word per 32 (``_pad``) so the lanes' strided ITEMS-element accesses hit distinct
   banks.

Reduce-then-scan reads the input twice and writes it once (scan-then-add-offsets would
read and write it twice). A single tile is just ``scan_tile`` with a zero offset.
The programs use runtime-sized buffers (``len``), so one compiled program serves every n.
Loads and stores are scalar: the tile is staged through workgroup memory, so each load and
store instruction of a workgroup already covers 256 consecutive words; vec4 would also need
n % 4 == 0 and a flat input array (see ``vyre/ops/reduce/_blocks.py``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from ...backends.schedule import BufferSpec, Pipeline, Step
from ...ir.builder import ProgramBuilder, Val
from ...ir.program import Program
from ...ir.types import DataType

WG = 256
ITEMS = 4
TILE = WG * ITEMS
LOG_WG = 8


_I = TypeVar("_I", int, Val)


def _pad(i: _I) -> _I:
    return i + (i >> 5)


def _zero(dtype: str) -> float | int:
    return 0.0 if dtype == "f32" else 0


def tree_total(b: ProgramBuilder, dtype: str, t: Val, acc: Val) -> Val:
    """The workgroup's sum of the lanes' ``acc``, valid in lane 0: a tree in workgroup memory."""
    sh = b.workgroup_array("sh", dtype, WG)
    sh[t] = acc
    b.barrier()
    s = WG // 2
    while s >= 1:  # sequential addressing; lane 0 keeps its running sum in a register
        with b.if_(t < s):
            acc += sh[t + s]
            if s > 1:
                sh[t] = acc
        if s > 1:
            b.barrier()
        s //= 2
    return acc


#: (builder, dtype, lane index, lane value) -> the workgroup's total (valid in lane 0 at least).
TileTotal = Callable[[ProgramBuilder, str, Val, Val], Val]


def tile_sums_program(dtype: str, tile_total: TileTotal = tree_total, suffix: str = "") -> Program:
    """Each workgroup sums its tile into ``sums[tile]``: ITEMS coalesced loads per lane into a register,
    then ``tile_total`` combines the lanes (a variant's own)."""
    b = ProgramBuilder(f"scan_tile_sums_{dtype}{suffix}", WG)
    x = b.buffer("x", dtype)
    sums = b.buffer("sums", dtype, "write")
    t = b.let(b.local_index(), "t")
    base = b.let(b.workgroup_id(0) * TILE, "base")
    n = b.let(x.len(), "n")
    acc = b.var(dtype, _zero(dtype), name="acc")
    for j in range(ITEMS):
        g = b.let(base + (j * WG) + t)
        with b.if_(g < n):
            acc += x[g]
    total = tile_total(b, dtype, t, acc)
    with b.if_(t == 0):
        sums[b.workgroup_id(0)] = total
    return b.build()


def hillis_steele_prefix(b: ProgramBuilder, dtype: str, t: Val, total: Val) -> Val:
    """The sum of the lane totals before lane ``t``: Hillis-Steele over the WG lane totals,
    double-buffered in workgroup memory (one barrier per step)."""
    tot = b.workgroup_array("tot", dtype, 2 * WG)
    tot[t] = total
    b.barrier()
    src = 0
    for k in range(LOG_WG):
        dst = 1 - src
        acc = b.var(dtype, tot[src * WG + t])
        with b.if_(t >= (1 << k)):
            acc += tot[src * WG + t - (1 << k)]
        tot[dst * WG + t] = acc
        b.barrier()
        src = dst
    before = b.var(dtype, _zero(dtype), name="before")
    with b.if_(t > 0):
        before.set(tot[src * WG + t - 1])
    return before


#: (builder, dtype, lane index, lane total) -> the sum of the totals of the lanes before it.
LanePrefix = Callable[[ProgramBuilder, str, Val, Val], Val]


def scan_tile_program(dtype: str, exclusive: bool, lane_prefix: LanePrefix = hillis_steele_prefix,
                      suffix: str = "") -> Program:
    """Scan one tile and add its offset; ``lane_prefix`` combines the lanes' totals (a variant's own)."""
    kind = "exclusive" if exclusive else "inclusive"
    b = ProgramBuilder(f"scan_{kind}_tile_{dtype}{suffix}", WG)
    x = b.buffer("x", dtype)
    offsets = b.buffer("offsets", dtype)
    out = b.buffer("out", dtype, "write")
    sh = b.workgroup_array("sh", dtype, _pad(TILE))
    t = b.let(b.local_index(), "t")
    wid = b.let(b.workgroup_id(0), "wid")
    base = b.let(wid * TILE, "base")
    n = b.let(x.len(), "n")

    # coalesced load of the tile into workgroup memory
    for j in range(ITEMS):
        i = b.let(t + j * WG)
        g = b.let(base + i)
        v = b.var(dtype, _zero(dtype))
        with b.if_(g < n):
            v.set(x[g])
        sh[_pad(i)] = v
    b.barrier()

    # each lane scans its ITEMS consecutive elements in registers
    mine = b.let(t * ITEMS, "mine")
    run: list[Val] = []
    for j in range(ITEMS):
        e = b.let(sh[_pad(mine + j)])
        run.append(e if j == 0 else b.let(run[-1] + e))

    before = lane_prefix(b, dtype, t, run[-1])  # sum of the lanes before this one
    prefix = b.let(offsets[wid] + before, "prefix")

    # results back through workgroup memory (each lane rewrites only the words it read), stored coalesced
    for j in range(ITEMS):
        if exclusive:
            sh[_pad(mine + j)] = prefix if j == 0 else prefix + run[j - 1]
        else:
            sh[_pad(mine + j)] = prefix + run[j]
    b.barrier()
    for j in range(ITEMS):
        i = b.let(t + j * WG)
        g = b.let(base + i)
        with b.if_(g < n):
            out[g] = sh[_pad(i)]
    return b.build()


def levels(n: int) -> int:
    """Number of scan levels for n elements (1 up to TILE, 2 up to TILE^2, ...)."""
    count = 1
    while n > TILE:
        n = -(-n // TILE)
        count += 1
    return count


def depth(n: int) -> int:
    """Longest chain of additions from an element to an output (for float error budgets)."""
    h = (ITEMS - 1) + LOG_WG + 2  # serial run, Hillis-Steele, + lanes before, + tile offset
    if n <= TILE:
        return h
    return h + ITEMS + LOG_WG + depth(-(-n // TILE))  # the tile sum, then its exclusive scan


def build_scan(n: int, dtype: str, exclusive: bool, tile_sums: Callable[[str], Program] = tile_sums_program,
               scan_tile: Callable[[str, bool], Program] = scan_tile_program) -> Pipeline:
    """The levels for n elements; ``tile_sums`` and ``scan_tile`` make the programs (a variant's own)."""
    dt = DataType.parse(dtype)
    buffers = {"x": BufferSpec(dt, n), "out": BufferSpec(dt, n)}
    steps: list[Step] = []

    def emit(src: str, count: int, dst: str, excl: bool, level: int) -> None:
        tiles = -(-count // TILE)
        if tiles == 1:
            zero = "zero"
            buffers.setdefault(zero, BufferSpec(dt, 1))
            steps.append(Step(scan_tile(dtype, excl), (src, zero, dst), (1, 1, 1)))
            return
        sums, offs = f"sums{level}", f"offsets{level}"
        buffers[sums] = BufferSpec(dt, tiles)
        buffers[offs] = BufferSpec(dt, tiles)
        steps.append(Step(tile_sums(dtype), (src, sums), (tiles, 1, 1)))
        emit(sums, tiles, offs, True, level + 1)
        steps.append(Step(scan_tile(dtype, excl), (src, offs, dst), (tiles, 1, 1)))

    emit("x", n, "out", exclusive, 0)
    return Pipeline(name=f"scan.{'exclusive' if exclusive else 'inclusive'}", buffers=buffers, inputs=("x",),
                    outputs=("out",), steps=tuple(steps))
