"""float32 products with one small side (M or N <= :data:`THIN`), optionally split along K.

The tiled GEMM (vyre/ops/linalg/matmul.py) computes 32x64 or 64x64 tiles of C per workgroup: for
``(89600, 9) @ (9, 8)`` nearly all of a tile's lanes compute nothing, and for ``(9, 89600) @ (89600, 8)``
(a weight gradient) the whole product is one tile, so one workgroup (one CPU thread on lavapipe) walks
all of K. The thin kernel instead gives one invocation a whole line of C along the small side (``D``
accumulators unrolled while building, ``D <= THIN``): rows mode (N small) one row of C per invocation,
columns mode (M small) one column. Lanes run along the large side, so one operand's loads are the same
address in every lane (a broadcast) and the other's are the lanes' own.

Split-K: when K is long and the large side gives too few invocations, K is cut into ``S`` slices of
``L`` (:func:`thin_shape`); invocation ``(s, z, r)`` sums its slice into ``part[s, z, :, :]`` and a
second kernel adds the ``S`` partials of each element in the order s = 0, 1, ..., S - 1: the same
result on every run (no atomics), rounded like a sum of S partial dot products. Loops stay short
(``L <= MAX_SLICE``, ``S <= MAX_SLICES``), far below lavapipe's 65,535-iteration cut-off.
Each kernel binds three buffers (A, B, C or the partials; the partials and C).
"""

from __future__ import annotations

from dataclasses import dataclass

from ...backends.config import DispatchConfig
from ...ir.builder import ProgramBuilder, Val
from ...ir.program import Program
from . import cache

THIN = 16  # the longest small side held in registers (one accumulator per element)
WG = 256
TARGET = 4096  # invocations worth having before K is split (a few per lane of every CPU thread)
MIN_SLICE = 256  # split only when each slice still sums at least this many products
# on a GPU adapter: a few waves of every multiprocessor, and short slices (each invocation's loop is a chain
# of dependent loads: (10, 256) @ (256, 256), 256 invocations walking K = 256, took 300 µs on the H200)
GPU_TARGET = 1 << 16
GPU_MIN_SLICE = 32
MAX_SLICE = 4096
MAX_SLICES = 1024
UNROLL_K = 32

_cached = cache.register("matmul_thin", 128, Program).get


@dataclass(frozen=True)
class ThinShape:
    """C[z] = A[z] @ B[z] (z < nb; ``a_batched``/``b_batched``: whether that operand has one matrix per
    z, else one for all), cut into ``slices`` K-slices of ``slice_len``; ``rows``: N is the small side."""

    nb: int
    m: int
    k: int
    n: int
    rows: bool
    a_batched: bool
    b_batched: bool
    slices: int = 1
    slice_len: int = 0

    @property
    def big(self) -> int:
        return self.m if self.rows else self.n

    @property
    def small(self) -> int:
        return self.n if self.rows else self.m

    @property
    def invocations(self) -> int:
        return self.slices * self.nb * self.big

    def grid(self) -> DispatchConfig | None:
        return DispatchConfig.coerce((-(-self.invocations // WG), 1, 1))


def thin_shape(nb: int, m: int, k: int, n: int, a_batched: bool, b_batched: bool,
               gpu: bool = False) -> ThinShape | None:
    """The thin kernel's shape for this product, or None where the tiled GEMM is the better fit (both
    sides larger than THIN). ``gpu``: split K for a GPU adapter's parallelism, not a CPU's."""
    if min(m, n) > THIN:
        return None
    rows = n <= m  # the smaller side in registers
    s = ThinShape(nb, m, k, n, rows, a_batched, b_batched)
    target, min_slice = (GPU_TARGET, GPU_MIN_SLICE) if gpu else (TARGET, MIN_SLICE)
    want = -(-target // s.invocations)
    if want > 1 and k >= 2 * min_slice:
        slices = min(want, k // min_slice, MAX_SLICES)
        slices = max(slices, -(-k // MAX_SLICE))
        length = -(-k // slices)
        s = ThinShape(nb, m, k, n, rows, a_batched, b_batched, -(-k // length), length)
    elif k > MAX_SLICE * MAX_SLICES:  # pragma: no cover - more than 2**22 summed per element
        return None
    return s


def thin_program(s: ThinShape) -> Program:
    """Invocation ``(slice, z, r)``: the line ``r`` of C[z] along the small side, over its K-slice."""

    def build() -> Program:
        split = s.slices > 1
        b = ProgramBuilder("array_matmul_thin", WG)
        a_ = b.buffer("a", "f32", "read", count=(s.nb if s.a_batched else 1) * s.m * s.k)
        b_ = b.buffer("b", "f32", "read", count=(s.nb if s.b_batched else 1) * s.k * s.n)
        c_ = b.buffer("part" if split else "c", "f32", "write", count=s.slices * s.nb * s.m * s.n)
        i = b.global_index()
        u = "u32"
        with b.if_(i < b.lit(s.invocations, u)):
            r = b.let(i % b.lit(s.big, u))
            t = b.let(i / b.lit(s.big, u))
            z = b.let(t % b.lit(s.nb, u)) if s.nb > 1 else b.lit(0, u)
            a0 = b.let(z * b.lit(s.m * s.k, u) if s.a_batched and s.nb > 1 else b.lit(0, u))
            b0 = b.let(z * b.lit(s.k * s.n, u) if s.b_batched and s.nb > 1 else b.lit(0, u))
            if split:
                sl = b.let(t / b.lit(s.nb, u))
                k0 = b.let(sl * b.lit(s.slice_len, u))
                k1 = b.let(b.min(k0 + b.lit(s.slice_len, u), b.lit(s.k, u)))
            else:
                k0, k1 = b.lit(0, u), b.lit(s.k, u)
            acc = [b.var("f32", b.lit(0.0, "f32")) for _ in range(s.small)]

            def step(kk: Val) -> None:
                if s.rows:  # C[r, j] += A[r, k] * B[k, j]: B's row is the same in every lane
                    x = b.let(a_[a0 + r * b.lit(s.k, u) + kk])
                    brow = b.let(b0 + kk * b.lit(s.n, u))
                    for j in range(s.small):
                        acc[j] += x * b_[brow + b.lit(j, u)]
                else:  # C[i, r] += A[i, k] * B[k, r]: A's column is the same in every lane
                    y = b.let(b_[b0 + kk * b.lit(s.n, u) + r])
                    for j in range(s.small):
                        acc[j] += a_[a0 + b.lit(j * s.k, u) + kk] * y

            if not split and s.k <= UNROLL_K:  # short K: unrolled, constant offsets, no loop
                for kk in range(s.k):
                    step(b.lit(kk, u))
            else:
                with b.for_range(k0, k1) as kv:
                    step(kv)
            base = (b.let(i / b.lit(s.big, u)) * b.lit(s.m * s.n, u))  # (slice, z) block of C or the partials
            for j in range(s.small):
                at = r * b.lit(s.n, u) + b.lit(j, u) if s.rows else b.lit(j * s.n, u) + r
                c_[base + at] = acc[j]
        return b.build()

    return _cached(("thin", s), build)


def partials_program(slices: int, count: int) -> Program:
    """c[e] = part[0, e] + part[1, e] + ... + part[S - 1, e] for ``count`` elements, in that order
    (deterministic); also the tiled split-K's second pass (vyre/array/_kernels/matmul_split.py)."""

    def build() -> Program:
        b = ProgramBuilder("array_matmul_split_sum", WG)
        part = b.buffer("part", "f32", "read", count=slices * count)
        c_ = b.buffer("c", "f32", "write", count=count)
        b.set_grid_from(c_)
        i = b.global_index()
        with b.if_(i < b.lit(count, "u32")):
            acc = b.var("f32", b.lit(0.0, "f32"))
            with b.for_range(b.lit(0, "u32"), b.lit(slices, "u32")) as q:
                acc += part[q * b.lit(count, "u32") + i]
            c_[i] = acc
        return b.build()

    return _cached(("split_sum", slices, count), build)


def partial_bytes(s: ThinShape) -> int:
    return 4 * s.slices * s.nb * s.m * s.n


def depth(s: ThinShape) -> int:
    """The longest chain of f32 roundings to an element of C (its tolerance budget)."""
    return (s.slice_len if s.slices > 1 else s.k) + s.slices


__all__ = ["THIN", "ThinShape", "thin_shape", "thin_program", "partials_program", "partial_bytes", "depth"]
