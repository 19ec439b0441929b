"""A tiled, register-blocked GEMM kernel builder shared by matmul, matmul.batched,
matmul.f16 and conv2d (implicit GEMM).

``C[z, m, n] = sum_k A[z, m, k] * B[z, k, n]`` where the caller supplies how to read one
element of A and of B and how to store one element of C (:class:`GemmOperands`), so the
same kernel serves plain row-major matrices and on-the-fly im2col gathers.

Kernel (one workgroup per ``tile_m x tile_n`` output tile, ``z`` on the grid's third axis):

* ``(tile_m / reg_m) * (tile_n / reg_n)`` invocations; each one accumulates a
  ``reg_m x reg_n`` block of C in registers: ``reg_m * reg_n / 4`` vec4 accumulators
  (the IR has no local arrays, so the block is unrolled while building).
* K is walked in tiles of ``tile_k``. A's tile is stored transposed in workgroup memory
  (``As[k][m]`` as vec4 of 4 consecutive rows) and B's tile as ``Bs[k][n]`` (vec4 of 4
  consecutive columns), so the inner product reads one vec4 of A and one of B per 16 FMAs
  (``reg_m / 4`` + ``reg_n / 4`` vec4 loads per k for ``reg_m * reg_n`` FMAs).
* Bank conflicts: an invocation's rows are ``(g * TY + ty) * 4 + i`` and its columns
  ``(h * TX + tx) * 4 + j`` (strided by the thread grid), so the B reads of a warp are
  consecutive vec4s and the A reads are broadcasts. The transposing A store is
  XOR-swizzled (``m4 ^ k``) so consecutive k of one row land in different banks.
* Global memory: with vec4 operand hooks (row-major operands whose K, resp. N, is a
  multiple of 4) an invocation moves a 4x4 block of A with four vec4 loads (rows),
  transposed in registers into four vec4 k-slices, B in vec4 row pieces, and C is stored
  as vec4s; otherwise 4 scalar (coalesced) loads per unit and scalar stores.
* Two stages of workgroup memory with a register prefetch: the next K-tile is loaded from
  global memory into registers before the current one is multiplied, then stored into the
  other stage: one barrier per K-tile.
* The whole K-tile loop body is unrolled at build time (``tile_k`` steps).
* Bounds: M, N, K are build parameters, so guards are emitted only where a tile can be
  partial (``select(in_bounds, load, 0)``: on the GPU an out-of-bounds load returns some
  in-bounds value, never a fault, and the select discards it); full tiles load unguarded.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass

from ...ir.builder import ProgramBuilder, Val
from ...ir.program import Program
from ...ir.values import BufRef, MutVar, Operand

#: One unit a workgroup moves, per invocation: (inner, outer, in range or None when always in range).
Unit = tuple[Val, Val, Val | None]

WORKGROUP_BYTES = 16384  # the portable WebGPU default (maxComputeWorkgroupStorageSize)
MAX_INVOCATIONS = 256
F32X4 = "vec4<f32>"


def _pow2(v: int) -> bool:
    return v >= 1 and v & (v - 1) == 0


def _log2(v: int) -> int:
    return v.bit_length() - 1


class TileGeometry:
    """What every GEMM tile shape shares (:class:`GemmTiles`, the packed-f16 kernel's ``PackedTiles``):
    a workgroup computes ``tile_m x tile_n`` of C, an invocation ``reg_m x reg_n`` of it, K advances
    ``tile_k`` per stage through two stages of A and B tiles of ``ELEMENT_BYTES`` per element."""

    tile_m: int
    tile_n: int
    tile_k: int
    reg_m: int
    reg_n: int
    ELEMENT = "f32"
    ELEMENT_BYTES = 4

    @property
    def threads_x(self) -> int:
        return self.tile_n // self.reg_n

    @property
    def threads_y(self) -> int:
        return self.tile_m // self.reg_m

    @property
    def threads(self) -> int:
        return self.threads_x * self.threads_y

    @property
    def workgroup_bytes(self) -> int:
        return 2 * (self.tile_m + self.tile_n) * self.tile_k * self.ELEMENT_BYTES  # two stages of A and B

    def check_limits(self) -> None:
        """The register block fits the tile, and invocations and workgroup memory stay portable."""
        if self.reg_m > self.tile_m or self.reg_n > self.tile_n:
            raise ValueError("the register block must fit in the tile (reg_m <= tile_m, reg_n <= tile_n)")
        if self.threads > MAX_INVOCATIONS:
            raise ValueError(f"{self.threads} invocations per workgroup (tile/reg), over the portable limit of "
                             f"{MAX_INVOCATIONS}: grow reg_m/reg_n or shrink the tile")
        if self.workgroup_bytes > WORKGROUP_BYTES:
            raise ValueError(f"two stages of {self.tile_m}x{self.tile_k} + {self.tile_k}x{self.tile_n} "
                             f"{self.ELEMENT} tiles take {self.workgroup_bytes} bytes of workgroup memory, "
                             f"over {WORKGROUP_BYTES}: shrink tile_k")


@dataclass(frozen=True)
class GemmTiles(TileGeometry):
    """Tile shape of the f32-accumulating GEMM (see :class:`TileGeometry`). All powers of two,
    ``reg_m`` and ``reg_n`` multiples of 4."""

    tile_m: int = 64
    tile_n: int = 64
    tile_k: int = 16
    reg_m: int = 4
    reg_n: int = 4

    @property
    def vec_io(self) -> bool:
        """Whether operands should use the vec4 global paths (load_a4/load_b4/store4, for
        K resp. N multiples of 4): when every invocation moves whole 4x4 blocks of A. With
        fewer blocks than invocations (64x64x16 or 128x128x8 tiles of 256 invocations) the
        4 staging vec4s cost registers for nothing, and measured on an H200 the vec4 paths
        made those tiles slower (128x128x8 at 4096^3: 20-23 instead of 29 TFLOP/s), while
        64x64x16 tiles with 8x8 blocks (64 invocations) gained (31.6 -> 33.1 TFLOP/s)."""
        return self.tile_k >= 4 and self.tile_k * self.tile_m // 16 >= self.threads

    def as_params(self) -> dict:
        return asdict(self)

    def check(self) -> GemmTiles:
        for name, v in asdict(self).items():
            if not _pow2(v):
                raise ValueError(f"GEMM tile {name}={v} must be a power of two")
        if self.reg_m % 4 or self.reg_n % 4:
            raise ValueError(f"reg_m={self.reg_m} and reg_n={self.reg_n} must be multiples of 4 (vec4 accumulators)")
        self.check_limits()
        return self


NARROW = GemmTiles(32, 64, 16, 4, 4)  # 128 invocations, 4x4 each, 12 KiB
SMALL = GemmTiles(64, 64, 16, 4, 4)  # 256 invocations, 4x4 each, 16 KiB
LARGE = GemmTiles(128, 128, 8, 8, 8)  # 256 invocations, 8x8 each, 16 KiB
DEEP = GemmTiles(64, 64, 16, 8, 8)  # 64 invocations, 8x8 each, 16 KiB


def default_tiles(m: int, n: int, k: int) -> GemmTiles:
    """A sensible tile shape for an (m, k) @ (k, n) product when the caller names none
    (an auto-tuner may pick per adapter through the tile params instead).

    * 8x8 register blocks once both output sides span several tiles (arithmetic intensity):
      64x64x16 tiles (DEEP, vec4 global paths) when the tiles divide the output evenly, else
      128x128x8 (LARGE). Measured on an H200 (Vulkan, kernel time), DEEP vs LARGE:
      2048^3 27.0 vs 24.4 TFLOP/s, 4096^3 33.1 vs 29.1, 8192^3 35.3 vs 30.6; at 4000^3 LARGE
      (29.5) beats DEEP (26.1).
    * 64x64x16 with 4x4 blocks otherwise (less padding waste, more workgroups), and
      32x64 when m <= 32 (few output rows, e.g. a convolution with few output channels).
    * ... and also when the output has fewer than 256 64x64 tiles: an 8x8-block tile has 64 invocations, so
      (512, 1024) with DEEP was 128 workgroups of 64 on the H200's 132 multiprocessors (262 µs, 4 TFLOP/s)
      and (512, 784) with LARGE 28 workgroups (485 µs), in a training step's products.
    """
    if m >= 512 and n >= 512 and -(-m // 64) * -(-n // 64) >= 256:
        return DEEP if m % 64 == 0 and n % 64 == 0 else LARGE
    return NARROW if m <= 32 else SMALL


def tiles_from(params: dict, m: int, n: int, k: int) -> GemmTiles:
    """Tile shape from build params (tile_m, tile_n, tile_k, reg_m, reg_n), defaults filled in."""
    base = default_tiles(m, n, k)
    picked = {f: params.get(f) for f in ("tile_m", "tile_n", "tile_k", "reg_m", "reg_n")}
    return GemmTiles(**{f: int(v) if v is not None else getattr(base, f) for f, v in picked.items()}).check()


@dataclass
class GemmOperands:
    """How the kernel reaches its operands.

    declare(b) declares the program's buffers (binding order) and returns a context;
    load_a(b, ctx, z, row, k) and load_b(b, ctx, z, k, col, k_info, col_info) return one
    element as an f32 value (indices u32; out-of-range ones are discarded by the kernel's
    guards); store(b, ctx, z, row, col, col_info, value) writes one f32 result (always in
    bounds). The optional k_info(b, ctx, z, k) and col_info(b, ctx, z, col) hooks compute
    per-k and per-column values once and hand them to load_b/store (e.g. the (channel,
    kernel tap) and (image, pixel) an im2col index decomposes into).

    Vector paths (optional; give them only when K, resp. N, is a multiple of 4, and
    only when ``tiles.vec_io``):
    load_a4(b, ctx, z, row, k4) -> vec4 A[row, 4k4 .. 4k4+3]; load_b4(b, ctx, z, k, c4) ->
    vec4 B[k, 4c4 .. 4c4+3]; store4(b, ctx, z, row, c4, vec4) writes C[row, 4c4 .. 4c4+3].
    """

    declare: Callable[[ProgramBuilder], object]
    load_a: Callable[..., Val]
    load_b: Callable[..., Val]
    store: Callable[..., None]
    k_info: Callable[..., object] = lambda b, ctx, z, k: None
    col_info: Callable[..., object] = lambda b, ctx, z, col: None
    load_a4: Callable[..., Val] | None = None
    load_b4: Callable[..., Val] | None = None
    store4: Callable[..., None] | None = None


def gemm_grid(m: int, n: int, tiles: GemmTiles, batch: int = 1) -> tuple[int, int, int]:
    return (-(-n // tiles.tile_n), -(-m // tiles.tile_m), batch)


@dataclass
class TileFrame:
    """What both GEMM kernels (this one and the packed-f16 one) set up first: the builder, the operands'
    context, two stages of the A and B tiles in workgroup memory, the invocation's place (``lid``, its
    column ``tx`` and row ``ty`` in the tile grid), the tile's first column and row, the batch index
    ``z``, and which of M, N, K need bounds guards."""

    b: ProgramBuilder
    ctx: object
    a_sh: BufRef
    b_sh: BufRef
    lid: Val
    tx: Val
    ty: Val
    col0: Val
    row0: Val
    z: Val
    guard_m: bool
    guard_n: bool
    guard_k: bool
    threads: int

    def k_loop(self, k: int, tile_k: int, a_size: int, b_size: int, fetch: Callable[[Val], None],
               stash: Callable[[Val, Val], None], multiply: Callable[[Val, Val], None],
               after: Callable[[Val], None] | None = None) -> None:
        """The two-stage K loop: fetch the first K-tile and park it in stage 0; then per K-tile prefetch
        the next into registers, multiply the current stage (then ``after(kt)``), park the prefetched
        tile in the other stage, one barrier."""
        b, n_tiles = self.b, -(-k // tile_k)
        fetch(b.lit(0))
        stash(b.lit(0), b.lit(0))
        b.barrier()
        with b.for_range(0, n_tiles, name="kt") as kt:
            odd = b.let(kt & 1, "stage")
            more = b.let(kt + 1 < n_tiles, "more")
            with b.if_(more):  # prefetch the next K-tile into registers
                fetch((kt + 1) * tile_k)
            multiply(b.let(odd * a_size, "sa"), b.let(odd * b_size, "sb"))
            if after is not None:
                after(kt)
            with b.if_(more):  # ... and park it in the other stage
                stash(b.let((odd ^ 1) * a_size), b.let((odd ^ 1) * b_size))
            b.barrier()

    def guarded(self, conds: Sequence[Val | None], load: Callable[..., Val], zero: Operand) -> Val:
        """``load()``, or ``zero`` where one of the bounds conditions fails (None: needs no guard)."""
        ok = _all(conds)
        return load() if ok is None else self.b.select(ok, load(), zero)

    def fetch_b(self, ops: GemmOperands, k0: Val, n: int, k: int, units: Sequence[Unit], regs: Sequence[MutVar],
                vec: str, zero: Operand, zero4: Val, conv: Callable[[Val, bool], Val]) -> None:
        """Load this invocation's units of the B tile at ``k0`` into ``regs``: 4 columns of one k each, a
        ``vec`` loaded whole when B has vec4 rows (else 4 values), each passed through ``conv(value,
        is_vec4)``; values past N or K are ``zero`` (``zero4`` for a whole vec4)."""
        b, ctx, z, col0 = self.b, self.ctx, self.z, self.col0
        for (n4, kk, _), reg in zip(units, regs):
            kg = b.let(k0 + kk)
            kok = kg < k if self.guard_k else None
            load_b4 = ops.load_b4
            if load_b4 is not None:
                c4 = b.let((col0 >> 2) + n4)
                reg.set(self.guarded([kok, c4 < n // 4 if self.guard_n else None],
                                     lambda kg=kg, c4=c4, ld=load_b4: conv(ld(b, ctx, z, kg, c4), True), zero4))
                continue
            kinfo = ops.k_info(b, ctx, z, kg)
            vals = []
            for c in range(4):
                col = b.let(col0 + n4 * 4 + c)
                cinfo = ops.col_info(b, ctx, z, col)
                vals.append(self.guarded([kok, col < n if self.guard_n else None],
                                         lambda col=col, ci=cinfo, kg=kg, ki=kinfo:
                                         conv(ops.load_b(b, ctx, z, kg, col, ki, ci), False), zero))
            reg.set(b.vec(vec, *vals))

    def units(self, total: int, split: int, tag: str) -> list[Unit]:
        """Per invocation: (inner, outer, in_range or None) of each of the ``total`` units the workgroup
        moves, ``split`` inner positions per outer one."""
        b, T = self.b, self.threads
        out: list[Unit] = []
        for i in range(-(-total // T)):
            u = b.let(self.lid + i * T, f"u{tag}{i}") if i else self.lid
            inner = b.let(u & (split - 1), f"{tag}i{i}")
            outer = b.let(u >> _log2(split), f"{tag}o{i}")
            out.append((inner, outer, (u < total) if (i + 1) * T > total else None))
        return out


def tile_frame(name: str, m: int, n: int, k: int, t: TileGeometry, ops: GemmOperands, vec: str,
               a_size: int, b_size: int) -> TileFrame:
    """The :class:`TileFrame` of a GEMM program over ``t`` tiles (``a_size``/``b_size``: ``vec`` elements
    per stage of each tile)."""
    b = ProgramBuilder(name, workgroup_size=t.threads)
    ctx = ops.declare(b)
    a_sh = b.workgroup_array("a_tile", vec, 2 * a_size)
    b_sh = b.workgroup_array("b_tile", vec, 2 * b_size)
    lid = b.let(b.local_index(), "lid")
    tx = b.let(lid & (t.threads_x - 1), "tx")
    ty = b.let(lid >> _log2(t.threads_x), "ty")
    col0 = b.let(b.workgroup_id(0) * t.tile_n, "col0")
    row0 = b.let(b.workgroup_id(1) * t.tile_m, "row0")
    z = b.let(b.workgroup_id(2), "z")
    return TileFrame(b, ctx, a_sh, b_sh, lid, tx, ty, col0, row0, z,
                     m % t.tile_m != 0, n % t.tile_n != 0, k % t.tile_k != 0, t.threads)


def gemm_program(name: str, m: int, n: int, k: int, tiles: GemmTiles, ops: GemmOperands) -> Program:
    """Build the GEMM program; dispatch it over :func:`gemm_grid` workgroups."""
    t = tiles.check()
    TX, TY = t.threads_x, t.threads_y
    TM4, TN4, TK = t.tile_m // 4, t.tile_n // 4, t.tile_k
    A_SZ, B_SZ = TK * TM4, TK * TN4  # vec4 elements per stage
    f = tile_frame(name, m, n, k, t, ops, F32X4, A_SZ, B_SZ)
    b, ctx, a_sh, b_sh, tx, ty, col0, row0, z = f.b, f.ctx, f.a_sh, f.b_sh, f.tx, f.ty, f.col0, f.row0, f.z
    guard_m, guard_n, guard_k, units = f.guard_m, f.guard_n, f.guard_k, f.units

    # --- cooperative loads ---
    # A: units of (k, 4 rows) from scalar loads, or with vec4 loads (load_a4) units of
    # (4 k, 4 rows): four row vectors, transposed in registers into four k-slices of As.
    # B: units of (k, 4 columns), one vec4 load (load_b4) or four scalar loads.
    load_a4 = ops.load_a4
    a_vec = load_a4 is not None
    if a_vec and not t.vec_io:
        raise ValueError(f"{t}: these tiles move A with scalar loads; give no load_a4 (see GemmTiles.vec_io)")

    a_units = units(A_SZ // 4, TK // 4, "a") if a_vec else units(A_SZ, TK, "a")  # inner = k (or k/4), outer = m4
    b_units = units(B_SZ, TN4, "b")  # inner = column group n4, outer = k
    a_regs = [[b.var(F32X4, name=f"pa{i}_{r}") for r in range(4 if a_vec else 1)] for i in range(len(a_units))]
    b_regs = [b.var(F32X4, name=f"pb{i}") for i in range(len(b_units))]
    zero4 = b.vec(F32X4, 0.0)

    guarded = f.guarded

    def fetch(k0: Val) -> None:
        for (ki, m4, _), regs in zip(a_units, a_regs):
            if load_a4 is not None:
                k4 = b.let((k0 >> 2) + ki)
                for r, reg in enumerate(regs):
                    row = b.let(row0 + m4 * 4 + r)
                    reg.set(guarded([row < m if guard_m else None, k4 < k // 4 if guard_k else None],
                                    lambda row=row, k4=k4: load_a4(b, ctx, z, row, k4), zero4))
                continue
            kg = b.let(k0 + ki)
            vals = []
            for r in range(4):
                row = b.let(row0 + m4 * 4 + r)
                vals.append(guarded([row < m if guard_m else None, kg < k if guard_k else None],
                                    lambda row=row, kg=kg: ops.load_a(b, ctx, z, row, kg), 0.0))
            regs[0].set(b.vec(F32X4, *vals))
        f.fetch_b(ops, k0, n, k, b_units, b_regs, F32X4, 0.0, zero4, lambda v, is_vec: v)

    def a_slot(stage_a: Val, kk: Val, m4: Val) -> Val:  # As[k][m4], XOR-swizzled
        return stage_a + kk * TM4 + (m4 ^ (kk & (TM4 - 1)))

    def stash(stage_a: Val, stage_b: Val) -> None:
        for (ki, m4, ok), regs in zip(a_units, a_regs):
            def put_a(ki: Val = ki, m4: Val = m4, regs: list[MutVar] = regs) -> None:
                if not a_vec:
                    a_sh[a_slot(stage_a, ki, m4)] = regs[0]
                    return
                for i in range(4):  # k-slice i of the 4x4 block: one component of each row vector
                    kk = b.let(ki * 4 + i)
                    a_sh[a_slot(stage_a, kk, m4)] = b.vec(F32X4, *(regs[r][i] for r in range(4)))
            _maybe(b, ok, put_a)
        for (n4, kk, ok), reg in zip(b_units, b_regs):
            def put_b(n4: Val = n4, kk: Val = kk, reg: MutVar = reg) -> None:
                b_sh[stage_b + kk * TN4 + n4] = reg
            _maybe(b, ok, put_b)

    acc = [[b.var(F32X4, name=f"acc{r}_{h}") for h in range(t.reg_n // 4)] for r in range(t.reg_m)]

    def multiply(stage_a: Val, stage_b: Val) -> None:
        for kk in range(TK):
            sw = kk & (TM4 - 1)
            av = [b.let(a_sh[stage_a + (kk * TM4) + ((ty + g * TY) ^ sw)]) for g in range(t.reg_m // 4)]
            bv = [b.let(b_sh[stage_b + (kk * TN4 + h * TX) + tx]) for h in range(t.reg_n // 4)]
            for r in range(t.reg_m):
                a = b.vec(F32X4, av[r // 4][r % 4])
                for h in range(t.reg_n // 4):
                    acc[r][h].set(b.fma(a, bv[h], acc[r][h]))

    f.k_loop(k, TK, A_SZ, B_SZ, fetch, stash, multiply)

    # --- epilogue: each invocation writes its reg_m x reg_n block ---
    rows = [b.let(row0 + (ty + (r // 4) * TY) * 4 + (r % 4), f"orow{r}") for r in range(t.reg_m)]
    store4 = ops.store4
    if store4 is not None:  # one vec4 per row and column group
        for h in range(t.reg_n // 4):
            c4 = b.let((col0 >> 2) + tx + h * TX, f"ocol4_{h}")
            for r, row in enumerate(rows):
                ok = _all([row < m if guard_m else None, c4 < n // 4 if guard_n else None])
                _maybe(b, ok, lambda row=row, c4=c4, v=acc[r][h]: store4(b, ctx, z, row, c4, v))
        return b.build()
    for h in range(t.reg_n // 4):
        for c in range(4):
            col = b.let(col0 + (tx + h * TX) * 4 + c, f"ocol{h}_{c}")
            cinfo = ops.col_info(b, ctx, z, col)
            for r, row in enumerate(rows):
                ok = _all([row < m if guard_m else None, col < n if guard_n else None])
                _maybe(b, ok, lambda row=row, col=col, ci=cinfo, v=acc[r][h][c]: ops.store(b, ctx, z, row, col, ci, v))
    return b.build()


def _all(conds: Sequence[Val | None]) -> Val | None:
    live = [c for c in conds if c is not None]
    if not live:
        return None
    out = live[0]
    for c in live[1:]:
        out = out & c
    return out


def _maybe(b: ProgramBuilder, cond: Val | None, emit: Callable[..., object]) -> None:
    if cond is None:
        emit()
    else:
        with b.if_(cond):
            emit()


__all__ = ["GemmTiles", "GemmOperands", "NARROW", "SMALL", "LARGE", "DEEP", "default_tiles", "tiles_from",
           "gemm_grid", "gemm_program"]
