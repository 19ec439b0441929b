"""histogram: counts (u32) of the u32 values 0 .. bins-1; values >= bins are ignored.

Like ``np.bincount(x[x < bins], minlength=bins)`` (the input is flattened).

Kernel: each workgroup keeps a private histogram of up to RANGE = 4096 bins (16 KiB, the
portable workgroup memory limit) in workgroup memory: it clears it, counts its share of the
input (a grid-stride loop, 256 lanes) with workgroup atomics, then adds every non-zero bin
to the global histogram with one global atomic — not one global atomic per element. More
than 4096 bins are split into ranges of 4096: the grid is (blocks, ranges) and a workgroup
counts only the values of its range, so each range re-reads the input; past MAX_RANGES
ranges (32768 bins) that costs more than it saves — with that many bins few values share
one — and the kernel adds one global atomic per element instead.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...backends.schedule import BufferSpec, Pipeline, Step
from ...errors import DispatchError
from ...ir.builder import ProgramBuilder, Val
from ...ir.program import Program
from ...ir.types import DataType
from ...ir.values import MutVar
from ..registry import EXACT, OpSpec, Witness, register

WG = 256
RANGE = 4096  # bins of one workgroup-private histogram (u32: 16 KiB)
MAX_RANGES = 8
ITEMS = 16  # elements per lane a workgroup aims for (more when its range is wide)
MAX_WORKGROUPS = 1024


def _grid_stride(b: ProgramBuilder, n: Val | int) -> tuple[MutVar, Val]:
    """(i, stride): this lane's first element and the grid stride, for a ``while i < n`` loop."""
    i = b.var("u32", b.workgroup_id(0) * WG + b.local_index(), name="i")
    return i, b.let(b.num_workgroups(0) * WG, "stride")


def private_program(bins: int) -> Program:
    """Workgroup-private histograms of ``width`` bins, merged with one atomic per bin."""
    width = min(bins, RANGE)
    b = ProgramBuilder(f"histogram_private_{bins}", WG)
    x = b.buffer("x", "u32")
    hist = b.buffer("hist", "u32", "read_write", count=bins)
    local = b.workgroup_array("local_hist", "u32", width)
    lid = b.let(b.local_index(), "lid")
    lo = b.let(b.workgroup_id(1) * width, "lo")  # this workgroup's bins: lo .. lo + limit - 1
    limit = b.let(b.min(b.lit(width), bins - lo), "limit")
    with b.for_range(lid, width, step=WG) as k:
        local[k] = 0
    b.barrier()
    n = b.let(x.len(), "n")
    i, stride = _grid_stride(b, n)
    with b.while_(i < n):
        v = b.let(x[i] - lo, "v")  # wraps past limit below lo
        with b.if_(v < limit):
            local.atomic_add(v, 1, discard=True)
        i += stride
    b.barrier()
    with b.for_range(lid, width, step=WG) as k:
        count = b.let(local.atomic_load(k), "count")
        with b.if_(count > 0):
            hist.atomic_add(lo + k, count, discard=True)
    return b.build()


def global_program(bins: int) -> Program:
    """One global atomic per counted element (many bins: little contention)."""
    b = ProgramBuilder(f"histogram_global_{bins}", WG)
    x = b.buffer("x", "u32")
    hist = b.buffer("hist", "u32", "read_write", count=bins)
    n = b.let(x.len(), "n")
    i, stride = _grid_stride(b, n)
    with b.while_(i < n):
        v = b.let(x[i], "v")
        with b.if_(v < bins):
            hist.atomic_add(v, 1, discard=True)
        i += stride
    return b.build()


def _check(n: int, bins: int) -> tuple[int, int]:
    n, bins = int(n), int(bins)
    if n < 1 or bins < 1:
        raise ValueError(f"n and bins must be >= 1, got n={n}, bins={bins}")
    return n, bins


def build(n: int, bins: int) -> Pipeline:
    n, bins = _check(n, bins)
    ranges = -(-bins // RANGE)
    if ranges <= MAX_RANGES:
        per_block = max(WG * ITEMS, min(bins, RANGE))  # amortise clearing and merging the range
        blocks = max(1, min(-(-n // per_block), MAX_WORKGROUPS // ranges))
        step = Step(private_program(bins), ("x", "hist"), (blocks, ranges, 1))
    else:
        blocks = max(1, min(-(-n // (WG * ITEMS)), MAX_WORKGROUPS))
        step = Step(global_program(bins), ("x", "hist"), (blocks, 1, 1))
    buffers = {"x": BufferSpec(DataType.U32, n), "hist": BufferSpec(DataType.U32, bins)}  # hist starts at zero
    return Pipeline(name="histogram", buffers=buffers, inputs=("x",), outputs=("hist",), steps=(step,))


def reference(x: np.ndarray, n: int, bins: int) -> list[np.ndarray]:
    n, bins = _check(n, bins)
    x = np.asarray(x).reshape(n)
    return [np.bincount(x[x < bins], minlength=bins).astype(np.uint32)]


def witnesses() -> list[Witness]:
    rng = np.random.default_rng(30)
    cases = [
        ("n1_bins1", rng.integers(0, 1, 1), 1),
        ("n1000_bins7_with_ignored", rng.integers(0, 10, 1000), 7),
        ("n1001_bins256", rng.integers(0, 256, 1001), 256),
        ("large_2^18_bins1000", rng.integers(0, 1100, 1 << 18), 1000),
        ("all_one_bin_contention", np.full(50000, 3), 5),
        ("bins4096_skewed", np.minimum(rng.exponential(300, 100000), 5000).astype(np.int64), 4096),
        ("bins10000_three_ranges", rng.integers(0, 10500, 70001), 10000),
        ("bins100000_global_atomics", rng.integers(0, 120000, 50000), 100000),
        ("u32_extremes_ignored", np.array([0xFFFFFFFF, 0x80000000, 0, 4095, 4096, 4097, 0xFFFFFFFF]), 4097),
    ]
    return [Witness(name, {"n": int(x.size), "bins": bins}, (np.asarray(x).astype(np.uint32),))
            for name, x, bins in cases]


def params_for(x: np.ndarray, bins: int | None = None) -> dict[str, Any]:
    if x.dtype != np.uint32:
        raise DispatchError(f"histogram takes a u32 array, got {x.dtype}",
                            fix="pass non-negative integer values as x.astype(np.uint32)")
    if bins is None or int(bins) < 1:
        raise DispatchError(f"histogram needs bins >= 1, got {bins!r}", fix="pass bins=<number of bins>, e.g. bins=256")
    if x.size == 0:
        raise DispatchError("histogram of an empty array", fix="pass at least one value")
    return {"n": int(x.size), "bins": int(bins)}


register(OpSpec(
    id="histogram", category="reduce",
    summary="counts (u32) of the u32 values in [0, bins); values >= bins are ignored",
    build=build, reference=reference, witnesses=witnesses, params_for=params_for, tolerance=EXACT,
))
