"""The kernels of cumulative_sum / cumulative_prod (vyre/array/_statistical.py): the input viewed as
(outer, L, inner), each of the R = outer * inner lines of L elements scanned along L, the pending input
tree fused into the loads (element k of line r = (o, c) is o * L * inner + k * inner + c: no transposed
copy, strided reads when inner > 1).

Two kernels, chosen by L:

* ``lines`` (L <= SERIAL_MAX, or L <= SERIAL_MAX_CPU on a CPU adapter): one invocation per line, a
  serial running sum or product (at most SERIAL_MAX_CPU iterations; adjacent invocations read adjacent
  elements when inner > 1). On lavapipe (2 cores) a serial line is ~6x cheaper per element than the
  workgroup scan's barriers and workgroup memory (1000 x 1000 along either axis: ~11-22 ms vs 65-100
  ms), so CPU adapters keep it up to SERIAL_MAX_CPU; GPUs need the tiles' parallelism.
* ``tiles`` (longer lines): a work-efficient multi-level reduce-then-scan. A line is cut into tiles of
  WG * items elements (items, a power of two up to ITEMS, fits the tile to short lines); one workgroup
  per (line, tile), the R * tiles workgroups folded into grid x and y. With one tile per line a level is
  one ``scan`` pass. With more, three parts: ``sums`` (each workgroup folds its tile: ``items`` loads per
  lane, then the lane totals raked in workgroup memory), the (R, tiles) tile totals scanned exclusively
  by the same construction (recursively: a level per factor of WG * items, 3 levels past ~4M elements per
  line), then ``scan`` (each workgroup scans its tile and starts from its tile's offset). The ``scan``
  pass loads the tile coalesced into workgroup memory, each lane scans its ``items`` consecutive
  elements in registers, the WG lane totals are scanned by raking (RAKE lanes scan RAKE totals each,
  one lane scans the RAKE raking totals: O(WG) work, three barriers), and the results go back through
  workgroup memory to coalesced stores. No kernel has a loop longer than SERIAL_MAX; the tile work is
  unrolled at build time. Every pass of one call runs in one submission, deferred into the submission of
  whatever reads the result.

Accumulation as in the reductions (:class:`~vyre.array._kernels.reduction.Reduction`: f32 for floats,
float16 rounded once per output; integers wrap, bit-exact whatever the association since + and * are
associative modulo 2**32). Float results are reassociated: :func:`depth` is the longest chain of f32
roundings from an element to an output, so |got - exact| <= (depth + 1) * eps * (the prefix of |x|)
for sums. A product's rounding is relative and every multiplication of the tree behind output k rounds
all of it: relative (k + depth + 1) * eps, as for a serial running product. The sum's identity is -0.0, so
a line of -0.0 scans to -0.0 as numpy's does; ``include_initial``'s first element is +0.0 (or 1).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ...ir.builder import ProgramBuilder
from ...ir.program import Program
from ...ir.values import Val
from . import cache
from .dtypes import ir_type
from .emit import Emitter
from .fused import Plan, defer
from .nodes import Node, collect
from .reduction import Reduction, load

if TYPE_CHECKING:
    from .._array import Array

WG = 256  # lanes per workgroup
RAKE = 16  # WG = RAKE * RAKE: lanes raking the lane totals, RAKE totals each
ITEMS = 8  # elements per lane in a full tile (tile = WG * ITEMS = 2048)
SERIAL_MAX = 64  # lines at most this long run one invocation each
SERIAL_MAX_CPU = 4096  # the same on a CPU adapter (lavapipe), where a serial line beats a workgroup scan
MAX_GRID = 65535  # workgroups along one grid axis (WebGPU's default limit)

programs = cache.register("scan", 256, Program)


@dataclass(frozen=True)
class Level:
    """One level of the tiled scan: ``rows`` lines of ``count`` elements, tiles of WG * ``items``."""

    rows: int
    count: int

    @property
    def items(self) -> int:
        per = -(-self.count // WG)
        return min(ITEMS, 1 << (per - 1).bit_length())

    @property
    def tile(self) -> int:
        return WG * self.items

    @property
    def tiles(self) -> int:
        return -(-self.count // self.tile)

    def grid(self) -> tuple[int, int, int]:
        w = self.rows * self.tiles
        gx = min(w, MAX_GRID)
        return gx, -(-w // gx), 1

    def next(self) -> Level | None:
        """The level scanning this one's tile totals (None: one tile per line)."""
        return Level(self.rows, self.tiles) if self.tiles > 1 else None


def serial(length: int, device: Any) -> bool:
    """Whether lines of ``length`` run the ``lines`` kernel on ``device`` (a backend)."""
    return length <= (SERIAL_MAX_CPU if _cpu_adapter(device) else SERIAL_MAX)


def _cpu_adapter(device: Any) -> bool:
    info = getattr(device, "adapter_info", None)  # WgpuBackend's (wgpu's adapter info); others have none
    if callable(info):
        info = info()
    kind = info.get("adapter_type") if isinstance(info, dict) else None
    return str(kind or "").replace("-", "").replace("_", "").lower() == "cpu"


def depth(length: int, lines: bool | None = None) -> int:
    """Longest chain of f32 roundings from an element to an output of a line of ``length`` (the float
    tolerance budget; see the module docstring); ``lines``: whether the ``lines`` kernel runs (None:
    as on a GPU)."""
    if lines if lines is not None else length <= SERIAL_MAX:
        return length
    d, lv = 0, Level(1, length)
    while True:
        d += lv.items + 2 * RAKE + 2  # serial run, raking of the lanes and of the rakes, offset, run
        nxt = lv.next()
        if nxt is None:
            return d
        d += lv.items + 2 * RAKE  # the tile total the offset is scanned from
        lv = nxt


def _pad(i: Any) -> Any:
    """Workgroup-memory index with one spare word per 32 (a lane's strided accesses on distinct banks)."""
    return i + (i >> 5)


# --- the reading and writing sides of a pass ------------------------------------------------------------

Read = Callable[[Val], Callable[[Val], Val]]  # row -> (position -> the element as an accumulator value)
Write = Callable[[Val], Callable[[Val, Val], None]]  # row -> (position, accumulator value -> None)
# (called with the row at the top of the body, where the row's base index is declared)


def _node_reader(b: ProgramBuilder, red: Reduction, node: Node, length: int, inner: int) -> Read:
    e = Emitter(b, node)  # its buffers first: Plan.bind(node)'s order

    def at(row: Val) -> Callable[[Val], Val]:
        src = b.let((row / inner) * (length * inner) + row % inner if inner > 1 else row * length, "src")
        return lambda k: load(b, e.value(src + (k * inner if inner > 1 else k)), node.dtype, red.acc)

    return at


def _out_writer(b: ProgramBuilder, red: Reduction, rows: int, length: int, inner: int,
                initial: bool) -> tuple[Write, Callable[[Val], Callable[[], None]] | None]:
    """The result's writer and (``initial``) the writer of a line's first element (+0, not -0.0, or 1)."""
    length2 = length + int(initial)
    out = b.buffer("out", ir_type(red.out), "write", count=max(1, rows * length2))
    base: dict[int, Val] = {}

    def dst(row: Val) -> Val:
        if id(row) not in base:
            base[id(row)] = b.let((row / inner) * (length2 * inner) + row % inner if inner > 1
                                  else row * length2, "dst")
        return base[id(row)]

    def write(row: Val) -> Callable[[Val, Val], None]:
        d = dst(row)

        def put(k: Val, v: Val) -> None:
            out[d + ((k + 1) * inner if initial else (k * inner if inner > 1 else k))] = red.finish(b, v)

        return put

    def first(row: Val) -> Callable[[], None]:
        d = dst(row)

        def put() -> None:
            out[d] = red.finish(b, b.lit(0 if red.op == "sum" else 1, red.acc))

        return put

    return write, (first if initial else None)


def _part_reader(b: ProgramBuilder, name: str, red: Reduction, lv: Level) -> Read:
    part = b.buffer(name, red.acc, "read", count=lv.rows * lv.count)

    def at(row: Val) -> Callable[[Val], Val]:
        base = b.let(row * lv.count, f"{name}_base")
        return lambda k: part[base + k]

    return at


def _part_writer(b: ProgramBuilder, name: str, red: Reduction, rows: int, count: int) -> Write:
    part = b.buffer(name, red.acc, "write", count=rows * count)

    def at(row: Val) -> Callable[[Val, Val], None]:
        base = b.let(row * count, f"{name}_base")

        def put(k: Val, v: Val) -> None:
            part[base + k] = v

        return put

    return at


# --- the passes -----------------------------------------------------------------------------------------


def _place(b: ProgramBuilder, lv: Level) -> tuple[Val, Val, Val]:
    """(row, tile, real) of this workgroup: the linear workgroup id over grid x and y, clamped into range
    so a spare workgroup takes every barrier (its stores are guarded by ``real``)."""
    gx, gy, _ = lv.grid()
    lin = b.workgroup_id(0) if gy == 1 else b.let(b.workgroup_id(0) + b.workgroup_id(1) * gx, "lin")
    w = lv.rows * lv.tiles
    real = lin < w
    lin_c = b.let(b.min(lin, w - 1), "lin_c") if gx * gy > w else lin
    if lv.tiles == 1:
        return lin_c, b.lit(0, "u32"), real
    return b.let(lin_c / lv.tiles, "row"), b.let(lin_c % lv.tiles, "tile"), real


def _rake_total(b: ProgramBuilder, red: Reduction, t: Val, total: Val, exclusive: bool) -> Val:
    """Over the WG lane values ``total``: the combination of the lanes before ``t`` (``exclusive``, every
    lane) or of all of them (valid in lane 0). Raking in workgroup memory: RAKE lanes fold (and scan) RAKE
    values each, one lane the RAKE raking totals."""
    tot = b.workgroup_array("tot", red.acc, _pad(WG))
    rk = b.workgroup_array("rk", red.acc, RAKE)
    tot[_pad(t)] = total
    b.barrier()
    with b.if_(t < RAKE):
        run = b.var(red.acc, red.identity(b), name="rake")
        for j in range(RAKE):
            at = b.let(_pad(t * RAKE + j))
            v = b.let(tot[at])
            if exclusive:
                tot[at] = run
            run.set(red.combine(b, run, v))
        rk[t] = run
    b.barrier()
    with b.if_(t == 0):
        run2 = b.var(red.acc, red.identity(b), name="rakes")
        for j in range(RAKE):
            v = b.let(rk[j])
            if exclusive:
                rk[j] = run2
            run2.set(red.combine(b, run2, v))
        if not exclusive:
            rk[0] = run2
    b.barrier()
    if not exclusive:
        return rk[0]
    return b.let(red.combine(b, rk[t / RAKE], tot[_pad(t)]), "before")


def _sums_body(b: ProgramBuilder, red: Reduction, lv: Level, read: Read, write: Write) -> None:
    t = b.let(b.local_index(), "t")
    row, tile, real = _place(b, lv)
    base = b.let(tile * lv.tile, "base")
    get, put = read(row), write(row)
    acc = b.var(red.acc, red.identity(b), name="acc")
    for j in range(lv.items):
        k = b.let(base + (j * WG) + t)
        with b.if_(k < lv.count):
            acc.set(red.combine(b, acc, get(k)))
    total = _rake_total(b, red, t, acc, exclusive=False)
    with b.if_((t == 0) & real):
        put(tile, total)


def _scan_body(b: ProgramBuilder, red: Reduction, lv: Level, read: Read, offset: Read | None, write: Write,
               exclusive: bool, first: Callable[[Val], Callable[[], None]] | None = None) -> None:
    t = b.let(b.local_index(), "t")
    row, tile, real = _place(b, lv)
    base = b.let(tile * lv.tile, "base")
    get, put = read(row), write(row)
    put_first = first(row) if first is not None else None
    off = b.let(offset(row)(tile), "offset") if offset is not None else None
    sh = b.workgroup_array("sh", red.acc, _pad(lv.tile))
    for j in range(lv.items):  # coalesced loads into workgroup memory
        i = t + j * WG
        k = b.let(base + i)
        v = b.var(red.acc, red.identity(b))
        with b.if_(k < lv.count):
            v.set(get(k))
        sh[_pad(i)] = v
    b.barrier()
    mine = b.let(t * lv.items, "mine")
    run: list[Val] = []
    for j in range(lv.items):  # this lane's consecutive elements, scanned in registers
        e = b.let(sh[_pad(mine + j)])
        run.append(e if j == 0 else b.let(red.combine(b, run[-1], e)))
    before = _rake_total(b, red, t, run[-1], exclusive=True)
    prefix = b.let(red.combine(b, off, before) if off is not None else before, "prefix")
    for j in range(lv.items):  # each lane rewrites the words it read
        if exclusive:
            sh[_pad(mine + j)] = prefix if j == 0 else red.combine(b, prefix, run[j - 1])
        else:
            sh[_pad(mine + j)] = red.combine(b, prefix, run[j])
    b.barrier()
    for j in range(lv.items):  # coalesced stores
        i = t + j * WG
        k = b.let(base + i)
        with b.if_((k < lv.count) & real):
            put(k, sh[_pad(i)])
    if put_first is not None:
        with b.if_((tile == 0) & (t == 0) & real):
            put_first()


def _lines_program(red: Reduction, node: Node, outer: int, length: int, inner: int, initial: bool) -> Program:
    """The ``lines`` kernel: one invocation per line, a serial loop of ``length`` <= SERIAL_MAX."""
    length2 = length + int(initial)

    def build() -> Program:
        b = ProgramBuilder(f"array_cumulative_{red.op}_lines", WG)
        e = Emitter(b, node)  # its buffers first: Plan.bind(node)'s order
        out = b.buffer("out", ir_type(red.out), "write", count=max(1, outer * length2 * inner))
        b.set_grid_from(out)  # at least one invocation per line (outer * inner <= the output's size)
        i = b.global_index()
        with b.if_(i < outer * inner):
            o, c = b.let(i / inner, "o"), b.let(i % inner, "c")
            src = b.let(o * (length * inner) + c, "src")
            dst = b.let(o * (length2 * inner) + c, "dst")
            acc = b.var(red.acc, red.identity(b), name="acc")
            if initial:
                out[dst] = red.finish(b, b.lit(0 if red.op == "sum" else 1, red.acc))  # +0, not -0.0
            with b.for_range(0, length, name="r") as r:
                acc.set(red.combine(b, acc, load(b, e.value(src + r * inner), node.dtype, red.acc)))
                out[dst + (r + int(initial)) * inner] = red.finish(b, acc)
        return b.build()

    return programs.get(("lines", red, outer, length, inner, initial, collect(node).key), build)


def _input_sums_program(red: Reduction, node: Node, lv: Level, inner: int) -> Program:
    """Level 0's ``sums`` pass: the tile totals of the fused input into a (rows, tiles) buffer."""
    def build() -> Program:
        b = ProgramBuilder(f"array_cumulative_{red.op}_sums", WG)
        read = _node_reader(b, red, node, lv.count, inner)
        _sums_body(b, red, lv, read, _part_writer(b, "sums", red, lv.rows, lv.tiles))
        return b.build()

    return programs.get(("input_sums", red, lv, inner, ITEMS, MAX_GRID, collect(node).key), build)


def _input_scan_program(red: Reduction, node: Node, lv: Level, inner: int, initial: bool) -> Program:
    """Level 0's ``scan`` pass: the fused input scanned per tile from its tile's offset (a (rows, tiles)
    buffer, when there are several tiles) into the result."""
    def build() -> Program:
        b = ProgramBuilder(f"array_cumulative_{red.op}_scan", WG)
        read = _node_reader(b, red, node, lv.count, inner)
        offset = _part_reader(b, "offsets", red, Level(lv.rows, lv.tiles)) if lv.tiles > 1 else None
        write, first = _out_writer(b, red, lv.rows, lv.count, inner, initial)
        _scan_body(b, red, lv, read, offset, write, exclusive=False, first=first)
        return b.build()

    return programs.get(("input_scan", red, lv, inner, initial, ITEMS, MAX_GRID, collect(node).key), build)


def _part_sums_program(red: Reduction, lv: Level) -> Program:
    def build() -> Program:
        b = ProgramBuilder(f"array_cumulative_{red.op}_part_sums", WG)
        read = _part_reader(b, "part", red, lv)
        _sums_body(b, red, lv, read, _part_writer(b, "sums", red, lv.rows, lv.tiles))
        return b.build()

    return programs.get(("part_sums", red.op, red.acc, lv, ITEMS, MAX_GRID), build)


def _part_scan_program(red: Reduction, lv: Level) -> Program:
    """An upper level's ``scan`` pass: the exclusive scan of a (rows, count) buffer of tile totals."""
    def build() -> Program:
        b = ProgramBuilder(f"array_cumulative_{red.op}_part_scan", WG)
        read = _part_reader(b, "part", red, lv)
        offset = _part_reader(b, "offsets", red, Level(lv.rows, lv.tiles)) if lv.tiles > 1 else None
        write = _part_writer(b, "scanned", red, lv.rows, lv.count)
        _scan_body(b, red, lv, read, offset, write, exclusive=True)
        return b.build()

    return programs.get(("part_scan", red.op, red.acc, lv, ITEMS, MAX_GRID), build)


def _parts(p: Plan, red: Reduction, lv: Level, src: Any, dst: Any) -> None:
    """Append the steps scanning the (rows, count) buffer ``src`` exclusively into ``dst``."""
    nxt = lv.next()
    if nxt is None:
        p.steps.append((_part_scan_program(red, lv), [src, dst], lv.grid()))
        return
    sums, offs = _temp(p, nxt), _temp(p, nxt)
    p.steps.append((_part_sums_program(red, lv), [src, sums], lv.grid()))
    _parts(p, red, nxt, sums, offs)
    p.steps.append((_part_scan_program(red, lv), [src, offs, dst], lv.grid()))


def _temp(p: Plan, lv: Level) -> Any:
    """A (rows, count) buffer of 4-byte accumulators, every element written before it is read, freed
    after the submission."""
    h = p.backend.allocate_resident(4 * lv.rows * lv.count, zeroed=False)
    p.temps.append(h)
    return h


def scan(red: Reduction, node: Node, dims: tuple[int, int, int], initial: bool, res: Array) -> Array:
    """The cumulative ``red`` of ``node`` viewed as ``dims`` = (outer, length, inner) along ``length``
    (both non-zero) into ``res``, a new array of (outer, length + ``initial``, inner) elements
    (``initial``: the identity first), deferred into the submission of whatever reads it (fused.defer):
    the pending work ``node`` reads computed in the same submission."""
    outer, length, inner = dims
    if serial(length, res.device):
        prog = _lines_program(red, node, outer, length, inner, initial)

        def lines(p: Plan, out: Any) -> None:
            p.steps.append((prog, [*p.bind(node), out]))

        return defer(res, [node], lines, zeroed=False)
    lv = Level(outer * inner, length)
    final = _input_scan_program(red, node, lv, inner, initial)
    nxt = lv.next()
    first = _input_sums_program(red, node, lv, inner) if nxt is not None else None

    def tiles(p: Plan, out: Any) -> None:
        if nxt is None or first is None:
            p.steps.append((final, [*p.bind(node), out], lv.grid()))
            return
        sums, offs = _temp(p, nxt), _temp(p, nxt)
        p.steps.append((first, [*p.bind(node), sums], lv.grid()))
        _parts(p, red, nxt, sums, offs)
        p.steps.append((final, [*p.bind(node), offs, out], lv.grid()))

    return defer(res, [node], tiles, zeroed=False)


def passes(length: int, device: Any = None) -> int:
    """The number of programs one call runs for lines of ``length`` on ``device`` (1 for the ``lines``
    kernel or one tile, 2 more per extra level)."""
    if serial(length, device):
        return 1
    n, lv = 1, Level(1, length)
    while (nxt := lv.next()) is not None:
        n, lv = n + 2, nxt
    return n


__all__ = ["scan", "serial", "depth", "passes", "Level", "SERIAL_MAX", "SERIAL_MAX_CPU", "ITEMS", "WG"]
