"""Building blocks of the LSD radix sort shared by sort.radix, sort.radix_pairs, sort.topk and the
array namespace's sort/argsort.

One pass sorts by one 4-bit digit (8 passes for u32 keys, fewer when the caller knows the keys fit in
fewer bits: :func:`passes_for`) in three stages over blocks of ``BLOCK`` = ``WG * ITEMS`` keys:

1. ``hist``: every workgroup counts the digits of its block (workgroup atomics) and writes them
   digit-major: ``counts[digit * blocks + block]``;
2. ``scan``: an exclusive scan of ``counts`` turns them into each (digit, block)'s first
   output position (reduce-then-scan over blocks of ``SCAN_BLOCK`` counts, recursive, so any
   length works);
3. ``scatter``: every key goes to ``offsets[digit * blocks + block] + rank``, where ``rank``
   is the number of keys of the same digit before it in its block. Invocation ``t`` holds
   ``ITEMS`` consecutive keys: it ranks them among themselves by comparisons and counts them
   (16 counts of 16 bits packed in two ``vec4<u32>``); one workgroup prefix sum of those
   counts adds the keys of the invocations before it. Ranks follow input order, so each
   pass is stable and LSD passes sort the whole key.

Why ITEMS keys per invocation: the prefix sum (a barrier per step) is the cost of a pass on
every device; over ``ITEMS`` keys it is paid once per ``BLOCK`` keys instead of per ``WG`` (sort.radix of
2^20 keys on lavapipe: 0.26-0.39 s with one key per invocation, 0.15 s with 8), the (digit, block)
counts the scan reads shrink by the same factor, and a block's keys of one digit land in runs
``ITEMS`` times longer (coalesced writes on a GPU).

Keys ping-pong between two buffers across passes. Every program reads its sizes at run
time (``len``, ``num_workgroups``), so the programs do not depend on the key count: one
compilation serves every size.
"""

from __future__ import annotations

from ...backends.schedule import BufferSpec, Step
from ...errors import DispatchError
from ...ir.builder import ProgramBuilder, Val
from ...ir.program import Program
from ...ir.types import DataType
from ...ir.values import BufRef, MutVar, Operand

WG = 256  # invocations per workgroup
LOG_WG = 8
ITEMS = 8  # keys per invocation in hist and scatter
BLOCK = WG * ITEMS  # keys per workgroup (below 2^16: the packed 16-bit counts)
RADIX_BITS = 4
RADIX = 1 << RADIX_BITS
PASSES = 32 // RADIX_BITS
SCAN_ITEMS = 4  # counts per invocation in the scan programs
SCAN_BLOCK = WG * SCAN_ITEMS

U32 = DataType.U32
MAX_BLOCKS = 65535  # workgroups along x: WebGPU's default maxComputeWorkgroupsPerDimension
MAX_KEYS = MAX_BLOCKS * BLOCK
# The access of buffers a program writes in full (every element, whatever was there): "read_write", not
# "write", whose host semantics (run_pipeline, the array namespace's run_pipeline_on) zero the buffer before
# every step that writes it again -- a clear of the keys (and values) per pass, ~40% more traffic.
OVERWRITTEN = "read_write"


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


def passes_for(bits: int) -> int:
    """Digit passes sorting keys whose values fit in ``bits`` bits (1..32): the higher digits are 0."""
    if not 1 <= bits <= 32:
        raise ValueError(f"radix sort: key width {bits} bits is outside 1..32")
    return -(-bits // RADIX_BITS)


def hist_program(shift: int) -> Program:
    """``counts[digit * blocks + block]``: the digit histogram of each block of ``BLOCK`` keys."""
    b = ProgramBuilder(f"sort_radix_hist_b{shift}", WG)
    keys = b.buffer("keys", U32)
    counts = b.buffer("counts", U32, access=OVERWRITTEN)
    cnt = b.workgroup_array("digit_counts", U32, RADIX)
    lid, blk, nblk = b.local_index(), b.workgroup_id(0), b.num_workgroups(0)
    first = b.let(blk * BLOCK + lid, "first")  # striped (coalesced loads): counting needs no order
    n = b.let(keys.len(), "n")
    with b.if_(lid < RADIX):
        cnt[lid] = 0
    b.barrier()
    for j in range(ITEMS):
        g = b.let(first + j * WG)
        with b.if_(g < n):
            cnt.atomic_add((keys[g] >> shift) & (RADIX - 1), 1, discard=True)
    b.barrier()
    with b.if_(lid < RADIX):
        counts[lid * nblk + blk] = cnt.atomic_load(lid)
    return b.build()


def _field(b: ProgramBuilder, lo: Val, hi: Val, digit: Val) -> Val:
    """Count ``digit`` of the 16 packed in (lo, hi): word d >> 1 of the eight, bits (d & 1) * 16."""
    w = b.let(digit >> 1)
    words = [lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w]
    packed = words[7]
    for k in range(6, -1, -1):
        packed = b.select(w == k, words[k], packed)
    return (packed >> ((digit & 1) * 16)) & 0xFFFF


def _scan_pair(b: ProgramBuilder, sh_lo: BufRef, sh_hi: BufRef, lid: Val, lo: Val, hi: Val) -> tuple[MutVar, MutVar]:
    """Inclusive workgroup prefix sums of two vec4<u32> per invocation (workgroup_inclusive_scan of both
    at once: one barrier per step)."""
    acc_lo, acc_hi = b.var(DataType.VEC4_U32, lo), b.var(DataType.VEC4_U32, hi)
    sh_lo[lid] = acc_lo
    sh_hi[lid] = acc_hi
    b.barrier()
    for k in range(LOG_WG):
        src, dst = (k % 2) * WG, (1 - k % 2) * WG
        with b.if_(lid >= (1 << k)):
            acc_lo.set(acc_lo + sh_lo[src + lid - (1 << k)])
            acc_hi.set(acc_hi + sh_hi[src + lid - (1 << k)])
        sh_lo[dst + lid] = acc_lo
        sh_hi[dst + lid] = acc_hi
        b.barrier()
    return acc_lo, acc_hi


def scatter_program(shift: int, with_values: bool) -> Program:
    """Every key (and value) of the block to ``offsets[digit * blocks + block] + rank``, ``rank`` = the keys
    of its digit before it in the block: invocation ``t`` holds keys ``t * ITEMS ..`` (input order), ranks
    them among themselves by comparisons and counts them (16 counts of 16 bits in two vec4<u32>); one
    workgroup prefix sum of those counts adds the keys of the invocations before it."""
    kind = "pairs" if with_values else "keys"
    b = ProgramBuilder(f"sort_radix_scatter_{kind}_b{shift}", WG)
    keys_in = b.buffer("keys_in", U32)
    vals_in = b.buffer("vals_in", U32) if with_values else None
    offsets = b.buffer("offsets", U32)
    keys_out = b.buffer("keys_out", U32, access=OVERWRITTEN)
    vals_out = b.buffer("vals_out", U32, access=OVERWRITTEN) if with_values else None
    sh_lo = b.workgroup_array("counts_lo", DataType.VEC4_U32, 2 * WG)
    sh_hi = b.workgroup_array("counts_hi", DataType.VEC4_U32, 2 * WG)
    lid, blk, nblk = b.local_index(), b.workgroup_id(0), b.num_workgroups(0)
    n = b.let(keys_in.len(), "n")
    first = b.let(blk * BLOCK + lid * ITEMS, "first")
    valid = [b.let(first + j < n) for j in range(ITEMS)]
    keys = [load_or(b, keys_in, first + j, n) for j in range(ITEMS)]
    digits = [b.let((k >> shift) & (RADIX - 1)) for k in keys]
    zero = b.vec(DataType.VEC4_U32, 0, 0, 0, 0)
    lo, hi = b.var(DataType.VEC4_U32, zero), b.var(DataType.VEC4_U32, zero)
    local: list[Val] = []
    for j, d in enumerate(digits):
        # rank among this invocation's earlier keys: a comparison per earlier key (no dynamic indexing)
        same = [b.select(valid[i] & (digits[i] == d), b.lit(1), b.lit(0)) for i in range(j)]
        local.append(b.let(sum(same[1:], same[0]) if same else b.lit(0)))
        w, bit = b.let(d >> 1), b.let(b.select(valid[j], b.lit(1) << ((d & 1) * 16), b.lit(0)))
        lo.set(lo + b.vec(DataType.VEC4_U32, *[b.select(w == c, bit, 0) for c in range(4)]))
        hi.set(hi + b.vec(DataType.VEC4_U32, *[b.select(w == c + 4, bit, 0) for c in range(4)]))
    # exclusive = inclusive - own; each field stays below BLOCK < 2^16, so no field carries into the next
    inc_lo, inc_hi = _scan_pair(b, sh_lo, sh_hi, lid, lo, hi)
    ex_lo, ex_hi = b.let(inc_lo - lo), b.let(inc_hi - hi)
    for j, d in enumerate(digits):
        with b.if_(valid[j]):
            dest = b.let(offsets[d * nblk + blk] + _field(b, ex_lo, ex_hi, d) + local[j])
            keys_out[dest] = keys[j]
            if vals_out is not None and vals_in is not None:  # with_values
                vals_out[dest] = vals_in[first + j]
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
    sums = b.buffer("sums", U32, access=OVERWRITTEN)
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
               buffers: dict[str, BufferSpec], bits: int = 32) -> list[Step]:
    """All passes sorting ``n`` keys (with values when the tuples have two names) stably; ``bits``: the
    keys are below ``2**bits`` (the passes of the higher digits, all 0, are left out).

    ``src`` is read by the first pass and never written; the result lands in ``dst``; the
    passes alternate ``src -> tmp -> dst -> tmp -> ... -> dst``. Adds the u32 buffers
    ``dst``, ``tmp``, ``counts`` and the scan's block sums to ``buffers``.
    """
    with_values = len(src) == 2
    if n > MAX_KEYS:
        raise DispatchError(f"radix sort of {n} keys: at most {MAX_KEYS} ({MAX_BLOCKS} blocks of {BLOCK})",
                            fix="sort at most that many keys at a time (e.g. in pieces) and merge the results")
    nblk = blocks_of(n, BLOCK)
    passes = passes_for(bits)
    for name in dst + tmp:
        buffers[name] = BufferSpec(U32, n)
    buffers["counts"] = BufferSpec(U32, RADIX * nblk)
    scan = scan_steps("counts", RADIX * nblk, buffers)
    steps: list[Step] = []
    for p in range(passes):
        shift = p * RADIX_BITS
        read = src if p == 0 else (tmp if (passes - p) % 2 == 1 else dst)
        write = dst if (passes - p) % 2 == 1 else tmp
        steps.append(Step(hist_program(shift), (read[0], "counts"), (nblk, 1, 1)))
        steps.extend(scan)
        bind: tuple[str, ...]
        if with_values:
            bind = (read[0], read[1], "counts", write[0], write[1])
        else:
            bind = (read[0], "counts", write[0])
        steps.append(Step(scatter_program(shift, with_values), bind, (nblk, 1, 1)))
    return steps
