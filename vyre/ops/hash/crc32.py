"""hash.crc32 (one buffer, parallel) and hash.crc32.rows (one invocation per row).

CRC-32 (IEEE 802.3, reflected, polynomial 0xEDB88320, as zlib/PNG/gzip), table-driven: each
workgroup first fills a 256-entry table in workgroup memory (entry ``l`` by invocation ``l``).

hash.crc32 splits the buffer: the CRC without pre/post conditioning ("raw") is linear, so
``raw(A || B) = raw(A) * x^(8|B|) ^ raw(B)`` (mod the polynomial) and leading zero bytes
leave it unchanged. The buffer is front-padded (virtually) with zeros to a whole number of
workgroups x 256 chunks of ``chunk`` bytes; every invocation computes the raw CRC of its
chunk, each workgroup merges its 256 CRCs in a tree (8 levels, multiplying by the constant
x^(8 * span) with a 32-step carry-less multiply), and further passes merge 256 partial CRCs
per workgroup until one is left. The standard CRC is then
``raw ^ (0xFFFFFFFF * x^(8n)) ^ 0xFFFFFFFF``; every x^k constant is computed at build time.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable
from typing import Any

import numpy as np

from ...backends.schedule import BufferSpec, Pipeline, Step
from ...ir.builder import ProgramBuilder, Val
from ...ir.program import Program
from ...ir.types import DataType
from ...ir.values import BufRef, MutVar
from ..pipeline import single
from ..registry import EXACT, OpSpec, Witness, register
from ._bytes import as_bytes, fold, rows_of, sample, words

POLY = 0xEDB88320
WG = 256
LEVELS = 8  # log2(WG)
U32 = DataType.U32


# ----------------------------------------------------------------------------- GF(2) on the host
def mulmod(a: int, b: int) -> int:
    """a * b mod P, both in the reflected representation (bit 31 is x^0)."""
    p = 0
    for k in range(32):
        if (a >> (31 - k)) & 1:
            p ^= b
        b = (b >> 1) ^ (POLY if b & 1 else 0)
    return p


def xpow8n(n: int) -> int:
    """x^(8n) mod P: shifting a CRC register over n zero bytes multiplies it by this."""
    result, power = 1 << 31, 1 << 23  # x^0, x^8
    while n:
        if n & 1:
            result = mulmod(result, power)
        power = mulmod(power, power)
        n >>= 1
    return result


# ----------------------------------------------------------------------------- program pieces
def _table(b: ProgramBuilder) -> BufRef:
    """The 256-entry CRC table in workgroup memory (needs a 256-invocation workgroup)."""
    table = b.workgroup_array("table", "u32", 256)
    c = b.var("u32", b.local_index(), "c")
    for _ in range(8):
        c.set((c >> 1) ^ (POLY & (b.lit(0) - (c & 1))))
    table[b.local_index()] = c
    b.barrier()
    return table


def _step(table: BufRef, crc: MutVar) -> Callable[[Val], None]:
    return lambda byte: crc.set(table[(crc ^ byte) & 0xFF] ^ (crc >> 8))


def _mulmod(b: ProgramBuilder, a: Val, k: int) -> MutVar:
    """a * k mod P for a constant k: 32 conditional xors of k * x^i."""
    p = b.var("u32", 0, "p")
    kk = b.var("u32", k, "kk")
    with b.for_range(0, 32) as i:
        bit = (a >> (b.lit(31) - i)) & 1
        p.set(p ^ (kk & (b.lit(0) - bit)))
        kk.set((kk >> 1) ^ (POLY & (b.lit(0) - (kk & 1))))
    return p


def _merge(b: ProgramBuilder, acc: BufRef, span: int) -> None:
    """Tree-merge the workgroup's 256 raw CRCs (each covering ``span`` bytes) into acc[0]."""
    lid = b.local_index()
    for level in range(LEVELS):
        s = 1 << level
        with b.if_(lid < WG // (2 * s)):
            left = b.let(lid * (2 * s), "left")
            acc[left] = _mulmod(b, acc[left], xpow8n(span * s)) ^ acc[left + s]
        b.barrier()


def _chunks_program(nbytes: int, chunk: int, pad: int, out_count: int, final_xor: int | None) -> Program:
    aligned = nbytes % 4 == 0 and chunk % 4 == 0
    b = ProgramBuilder(f"crc32_chunks_{chunk}", WG)
    data = b.buffer("data", "u32")
    out = b.buffer("out", "u32", access="write", count=out_count)
    table = _table(b)
    acc = b.workgroup_array("acc", "u32", WG)
    lid = b.local_index()
    vstart = b.let(b.global_index() * chunk, "vstart")  # the chunk in the front-padded stream
    crc = b.var("u32", 0, "crc")
    with b.if_(vstart + chunk > pad):  # chunks entirely in the padding stay 0
        lo = b.let(vstart.max(pad) - pad, "lo")
        fold(b, data, lo, vstart + chunk - pad, _step(table, crc), aligned=aligned)
    acc[lid] = crc
    b.barrier()
    _merge(b, acc, chunk)
    with b.if_(lid == 0):
        out[b.workgroup_id(0)] = acc[0] if final_xor is None else acc[0] ^ final_xor
    return b.build()


def _combine_program(count: int, span: int, pad: int, final_xor: int | None) -> Program:
    b = ProgramBuilder("crc32_combine", WG)
    src = b.buffer("src", "u32", count=count)
    groups = (count + pad) // WG
    out = b.buffer("out", "u32", access="write", count=groups)
    acc = b.workgroup_array("acc", "u32", WG)
    lid = b.local_index()
    v = b.let(b.global_index(), "v")
    acc[lid] = b.select(v >= pad, src[b.select(v >= pad, v - pad, b.lit(0))], b.lit(0))
    b.barrier()
    _merge(b, acc, span)
    with b.if_(lid == 0):
        out[b.workgroup_id(0)] = acc[0] if final_xor is None else acc[0] ^ final_xor
    return b.build()


def build(nbytes: int, chunk: int = 64) -> Pipeline:
    nbytes, chunk = int(nbytes), int(chunk)
    if chunk < 1:
        raise ValueError("chunk must be >= 1 byte")
    final = mulmod(0xFFFFFFFF, xpow8n(nbytes)) ^ 0xFFFFFFFF
    chunks = -(-nbytes // chunk)  # ceil(nbytes / chunk): one per invocation
    groups = max(1, -(-chunks // WG))
    pad = groups * WG * chunk - nbytes
    buffers = {"data": BufferSpec(U32, words(nbytes))}
    name = "p1" if groups > 1 else "hash"
    buffers[name] = BufferSpec(U32, groups)
    steps = [Step(_chunks_program(nbytes, chunk, pad, groups, None if groups > 1 else final),
                  ("data", name), (groups, 1, 1))]
    span, count, level = chunk * WG, groups, 1
    while count > 1:
        nxt = -(-count // WG)
        level += 1
        dst = f"p{level}" if nxt > 1 else "hash"
        buffers[dst] = BufferSpec(U32, nxt)
        prog = _combine_program(count, span, nxt * WG - count, None if nxt > 1 else final)
        steps.append(Step(prog, (name, dst), (nxt, 1, 1)))
        name, span, count = dst, span * WG, nxt
    return Pipeline(name="hash.crc32", buffers=buffers, inputs=("data",), outputs=("hash",), steps=tuple(steps),
                    output_shapes={"hash": ()})


def build_rows(rows: int, length: int) -> Pipeline:
    rows, length = int(rows), int(length)
    b = ProgramBuilder("crc32_rows", WG, grid_from="hash")  # one invocation per row
    data = b.buffer("data", "u32")
    out = b.buffer("hash", "u32", access="write")  # runtime-sized: rows may be 0 (no declared count of 0)
    table = _table(b)
    i = b.global_index()
    with b.if_(i < rows):
        crc = b.var("u32", 0xFFFFFFFF, "crc")
        start = b.let(i * length, "start")
        fold(b, data, start, start + length, _step(table, crc), aligned=length % 4 == 0)
        out[i] = ~crc
    return single(b.build(), input_counts={"data": words(rows * length)}, counts={"hash": rows})


# ----------------------------------------------------------------------------- reference, witnesses
def reference(data: np.ndarray, *, nbytes: int, chunk: int = 64) -> list[np.ndarray]:
    # zlib's C implementation: independent of the interpreter and of the kernel's method
    return [np.array(zlib.crc32(np.asarray(data, np.uint8).tobytes()), np.uint32).reshape(())]


def reference_rows(data: np.ndarray, *, rows: int, length: int) -> list[np.ndarray]:
    d = np.asarray(data, np.uint8).reshape(rows, length)
    return [np.array([zlib.crc32(r.tobytes()) for r in d], np.uint32)]


def witnesses() -> list[Witness]:
    out = [Witness("empty", {"nbytes": 0}, (np.zeros(0, np.uint8),)),
           Witness("check", {"nbytes": 9}, (np.frombuffer(b"123456789", np.uint8).copy(),))]
    for name, n, chunk, seed in [("size1", 1, 64, 1), ("one-group", 16384, 64, 2), ("unaligned", 100_003, 64, 3),
                                 ("three-passes", 300_000, 4, 4), ("odd-chunk", 5001, 7, 5)]:
        out.append(Witness(name, {"nbytes": n, "chunk": chunk}, (sample(seed, n),)))
    return out


def witnesses_rows() -> list[Witness]:
    out = [Witness("check", {"rows": 1, "length": 9}, (np.frombuffer(b"123456789", np.uint8).reshape(1, 9).copy(),))]
    for name, rows, length, seed in [("aligned", 1000, 64, 6), ("unaligned", 513, 37, 7), ("empty-rows", 2, 0, 8),
                                    ("no-rows", 0, 8, 9)]:
        data = sample(seed, rows * length).reshape(rows, length)
        out.append(Witness(name, {"rows": rows, "length": length}, (data,)))
    return out


def _params(data: np.ndarray, chunk: int = 64) -> dict[str, Any]:
    return {"nbytes": int(as_bytes("hash.crc32", data).size), "chunk": int(chunk)}


register(OpSpec(
    id="hash.crc32", category="hash",
    summary="CRC-32 (IEEE, zlib) of a uint8 buffer: per-invocation chunks merged by GF(2) multiplies",
    build=build, reference=reference, witnesses=witnesses, params_for=_params, tolerance=EXACT,
))
register(OpSpec(
    id="hash.crc32.rows", category="hash",
    summary="CRC-32 (IEEE, zlib) of every row of a (rows, length) uint8 array, one invocation per row",
    build=build_rows, reference=reference_rows, witnesses=witnesses_rows,
    params_for=lambda data: dict(zip(("rows", "length"), rows_of("hash.crc32.rows", data))), tolerance=EXACT,
))
