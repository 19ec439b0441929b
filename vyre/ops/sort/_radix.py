"""Building blocks of the LSD radix sort shared by sort.radix, sort.radix_pairs and sort.topk.

One pass sorts by one 4-bit digit (8 passes for u32 keys) in three stages:

1. ``hist``: every workgroup counts the digits of its block of ``WG`` keys (workgroup
   atomics) and writes them digit-major: ``counts[digit * blocks + block]``;
2. ``scan``: an exclusive scan of ``counts`` turns them into each (digit, block)'s first
   output position (reduce-then-scan over blocks of ``SCAN_BLOCK`` counts, recursive, so any
   length works);
3. ``scatter``: every key goes to ``offsets[digit * blocks + block] + rank``, where ``rank``
   is the number of keys of the same digit before it in its block: a workgroup prefix sum
   of one-hot digit flags packed 8 bits per digit into a ``vec4<u32>``. Ranks follow input
   order, so each pass is stable and LSD passes sort the whole key.

Keys ping-pong between two buffers across passes. Every program reads its sizes at run
time (``len``, ``num_workgroups``), so the programs do not depend on the key count: one
compilation serves every size.
"""

from __future__ import annotations

from ...backends.schedule import BufferSpec, Step
from ...ir.builder import ProgramBuilder, Val
from ...ir.program import Program
from ...ir.types import DataType
from ...ir.values import BufRef, MutVar, Operand

WG = 256  # invocations per workgroup; hist and scatter take one key per invocation
LOG_WG = 8
RADIX_BITS = 4
RADIX = 1 << RADIX_BITS
PASSES = 32 // RADIX_BITS
SCAN_ITEMS = 4  # counts per invocation in the scan programs
SCAN_BLOCK = WG * SCAN_ITEMS

U32 = DataType.U32


def blocks_of(n: int, size: int) -> int:
    return max(1, -(-n // size))


def load_or(b: ProgramBuilder, buf: BufRef, index: Val, n: Val | int, default: Operand = 0) -> MutVar:
    """``buf[index]`` where ``index < n``, else ``default`` (never loads out of bounds)."""
    v = b.var(buf.dtype, default)
    with b.if_(index < n):
        v.set(buf[index])
    return v


def workgroup_inclusive_scan(b: ProgramBuilder, sh: BufRef, lid: Val, value: Val, dtype: str | DataType) -> MutVar:
    """Inclusive prefix sum of one value per invocation over a workgroup of ``WG``.

    Hillis-Steele over ``sh`` (a workgroup array of ``2 * WG``), double buffered so each of
    the ``log2(WG)`` steps needs one barrier. Every invocation must call it (it has barriers).
    """
    acc = b.var(dtype, value)
    sh[lid] = acc
    b.barrier()
    for k in range(LOG_WG):
        src, dst = (k % 2) * WG, (1 - k % 2) * WG
        with b.if_(lid >= (1 << k)):
            acc.set(acc + sh[src + lid - (1 << k)])
        sh[dst + lid] = acc
        b.barrier()
    return acc


def hist_program(shift: int) -> Program:
    b = ProgramBuilder(f"sort_radix_hist_b{shift}", WG)
    keys = b.buffer("keys", U32)
    counts = b.buffer("counts", U32, access="write")
    cnt = b.workgroup_array("digit_counts", U32, RADIX)
    lid, blk, nblk = b.local_index(), b.workgroup_id(0), b.num_workgroups(0)
    g = b.let(blk * WG + lid, "g")
    with b.if_(lid < RADIX):
        cnt[lid] = 0
    b.barrier()
    with b.if_(g < keys.len()):
        cnt.atomic_add((keys[g] >> shift) & (RADIX - 1), 1, discard=True)
    b.barrier()
    with b.if_(lid < RADIX):
        counts[lid * nblk + blk] = cnt.atomic_load(lid)
    return b.build()


def scatter_program(shift: int, with_values: bool) -> Program:
    kind = "pairs" if with_values else "keys"
    b = ProgramBuilder(f"sort_radix_scatter_{kind}_b{shift}", WG)
    keys_in = b.buffer("keys_in", U32)
    vals_in = b.buffer("vals_in", U32) if with_values else None
    offsets = b.buffer("offsets", U32)
    keys_out = b.buffer("keys_out", U32, access="write")
    vals_out = b.buffer("vals_out", U32, access="write") if with_values else None
    sh = b.workgroup_array("flags", DataType.VEC4_U32, 2 * WG)
    lid, blk, nblk = b.local_index(), b.workgroup_id(0), b.num_workgroups(0)
    g = b.let(blk * WG + lid, "g")
    valid = b.let(g < keys_in.len(), "valid")
    key = load_or(b, keys_in, g, keys_in.len())
    digit = b.let((key >> shift) & (RADIX - 1), "digit")
    word = b.let(digit >> 2, "word")  # digits 4w..4w+3 share component w, 8 bits each
    field = b.let((digit & 3) * 8, "field")
    one = b.let(b.vec(DataType.VEC4_U32, *[b.select(valid & (word == w), b.lit(1) << field, 0) for w in range(4)]),
                "one")
    # exclusive = inclusive - own flag; every field of it is < WG, so wrap-around in the
    # inclusive sums (a field reaching 256) cancels out modulo 2^32
    before = b.let(workgroup_inclusive_scan(b, sh, lid, one, DataType.VEC4_U32) - one, "before")
    packed = b.select(word == 0, before.x, b.select(word == 1, before.y, b.select(word == 2, before.z, before.w)))
    rank = b.let((packed >> field) & 255, "rank")
    with b.if_(valid):
        dest = b.let(offsets[digit * nblk + blk] + rank, "dest")
        keys_out[dest] = key
        if vals_out is not None and vals_in is not None:  # with_values
            vals_out[dest] = vals_in[g]
    return b.build()


def scan_block_program(with_base: bool) -> Program:
    """Exclusive scan of ``SCAN_BLOCK`` counts per workgroup, in place, plus ``base[block]``."""
    b = ProgramBuilder("sort_radix_scan_base" if with_base else "sort_radix_scan", WG)
    data = b.buffer("data", U32, access="read_write")
    base = b.buffer("base", U32) if with_base else None
    sh = b.workgroup_array("partial", U32, 2 * WG)
    lid, blk = b.local_index(), b.workgroup_id(0)
    first = b.let(blk * SCAN_BLOCK + lid * SCAN_ITEMS, "first")
    m = data.len()
    items = [load_or(b, data, first + j, m) for j in range(SCAN_ITEMS)]
    total = b.let(sum(items[1:], items[0]), "total")
    run = b.var(U32, workgroup_inclusive_scan(b, sh, lid, total, U32) - total, "run")
    if base is not None:  # with_base
        run += base[blk]
    for j, v in enumerate(items):
        with b.if_(first + j < m):
            data[first + j] = run
        run += v
    return b.build()


def block_sums_program() -> Program:
    """``sums[block]`` = the sum of the block's ``SCAN_BLOCK`` counts."""
    b = ProgramBuilder("sort_radix_block_sums", WG)
    data = b.buffer("data", U32)
    sums = b.buffer("sums", U32, access="write")
    sh = b.workgroup_array("partial", U32, 2 * WG)
    lid, blk = b.local_index(), b.workgroup_id(0)
    first = b.let(blk * SCAN_BLOCK + lid * SCAN_ITEMS, "first")
    items = [load_or(b, data, first + j, data.len()) for j in range(SCAN_ITEMS)]
    total = workgroup_inclusive_scan(b, sh, lid, sum(items[1:], items[0]), U32)
    with b.if_(lid == WG - 1):
        sums[blk] = total
    return b.build()


def scan_steps(name: str, m: int, buffers: dict[str, BufferSpec], level: int = 0) -> list[Step]:
    """Steps scanning pipeline buffer ``name`` (``m`` u32) exclusively in place; adds the
    block-sum buffers it needs to ``buffers``."""
    nblk = blocks_of(m, SCAN_BLOCK)
    if nblk == 1:
        return [Step(scan_block_program(False), (name,), (1, 1, 1))]
    sums = f"scan_sums{level}"
    buffers[sums] = BufferSpec(U32, nblk)
    return [
        Step(block_sums_program(), (name, sums), (nblk, 1, 1)),
        *scan_steps(sums, nblk, buffers, level + 1),
        Step(scan_block_program(True), (name, sums), (nblk, 1, 1)),
    ]


def sort_steps(n: int, src: tuple[str, ...], dst: tuple[str, ...], tmp: tuple[str, ...],
               buffers: dict[str, BufferSpec]) -> list[Step]:
    """All passes sorting ``n`` keys (with values when the tuples have two names) stably.

    ``src`` is read by the first pass and never written; the result lands in ``dst``; the
    passes alternate ``src -> tmp -> dst -> tmp -> ... -> dst``. Adds the u32 buffers
    ``dst``, ``tmp``, ``counts`` and the scan's block sums to ``buffers``.
    """
    with_values = len(src) == 2
    nblk = blocks_of(n, WG)
    for name in dst + tmp:
        buffers[name] = BufferSpec(U32, n)
    buffers["counts"] = BufferSpec(U32, RADIX * nblk)
    scan = scan_steps("counts", RADIX * nblk, buffers)
    steps: list[Step] = []
    for p in range(PASSES):
        shift = p * RADIX_BITS
        read = src if p == 0 else (tmp if (PASSES - p) % 2 == 1 else dst)
        write = dst if (PASSES - p) % 2 == 1 else tmp
        steps.append(Step(hist_program(shift), (read[0], "counts"), (nblk, 1, 1)))
        steps.extend(scan)
        bind: tuple[str, ...]
        if with_values:
            bind = (read[0], read[1], "counts", write[0], write[1])
        else:
            bind = (read[0], "counts", write[0])
        steps.append(Step(scatter_program(shift, with_values), bind, (nblk, 1, 1)))
    return steps
