"""hash.fnv1a32 (one buffer) and hash.fnv1a32.rows (one hash per row, one invocation per row).

FNV-1a: ``h = 0x811C9DC5; for each byte: h = (h ^ byte) * 0x01000193`` (mod 2^32). Each step
depends nonlinearly on the previous hash, so one buffer cannot be split across invocations:
hash.fnv1a32 walks it in one invocation, a whole word (4 unrolled bytes) per load;
hash.fnv1a32.rows gives the parallelism, hashing many equal-length rows at once.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ...backends.schedule import Pipeline
from ...ir.builder import ProgramBuilder, Val
from ...ir.values import MutVar
from ..pipeline import single
from ..registry import EXACT, OpSpec, Witness, register
from ._bytes import as_bytes, fold, rows_of, sample, words

OFFSET = 0x811C9DC5
PRIME = 0x01000193
WG_ROWS = 64


def _step(h: MutVar) -> Callable[[Val], None]:
    return lambda byte: h.set((h ^ byte) * PRIME)


def build(nbytes: int) -> Pipeline:
    nbytes = int(nbytes)
    b = ProgramBuilder("hash_fnv1a32", 1)
    data = b.buffer("data", "u32")
    out = b.buffer("hash", "u32", access="write", count=1)
    h = b.var("u32", OFFSET, "h")
    body = nbytes // 4 * 4
    fold(b, data, 0, body, _step(h), aligned=True)
    if body < nbytes:
        fold(b, data, body, nbytes, _step(h), aligned=False)
    out[0] = h
    return single(b.build(), grid=(1, 1, 1), input_counts={"data": words(nbytes)}, output_shapes={"hash": ()})


def build_rows(rows: int, length: int) -> Pipeline:
    rows, length = int(rows), int(length)
    b = ProgramBuilder("hash_fnv1a32_rows", WG_ROWS, grid_from="hash")  # one invocation per row
    data = b.buffer("data", "u32")
    out = b.buffer("hash", "u32", access="write")  # runtime-sized: rows may be 0 (no declared count of 0)
    i = b.global_index()
    with b.if_(i < rows):
        h = b.var("u32", OFFSET, "h")
        start = b.let(i * length, "start")
        fold(b, data, start, start + length, _step(h), aligned=length % 4 == 0)
        out[i] = h
    return single(b.build(), input_counts={"data": words(rows * length)}, counts={"hash": rows})


def _fnv(rows: np.ndarray) -> np.ndarray:
    """numpy FNV-1a over the rows of a (rows, length) uint8 array."""
    h = np.full(rows.shape[0], OFFSET, dtype=np.uint32)
    for k in range(rows.shape[1]):
        h = (h ^ rows[:, k]) * np.uint32(PRIME)
    return h


def reference(data: np.ndarray, *, nbytes: int) -> list[np.ndarray]:
    return [_fnv(np.asarray(data, np.uint8).reshape(1, nbytes))[0].reshape(())]


def reference_rows(data: np.ndarray, *, rows: int, length: int) -> list[np.ndarray]:
    return [_fnv(np.asarray(data, np.uint8).reshape(rows, length))]


def _known(text: bytes) -> tuple[dict[str, Any], tuple[np.ndarray, ...]]:
    return {"nbytes": len(text)}, (np.frombuffer(text, np.uint8).copy(),)


def witnesses() -> list[Witness]:
    out = [Witness(name, *_known(t)) for name, t in [("empty", b""), ("a", b"a"), ("check", b"123456789")]]
    for name, n, seed in [("size1", 1, 1), ("words", 1024, 2), ("tail", 4093, 3)]:
        out.append(Witness(name, {"nbytes": n}, (sample(seed, n),)))
    return out


def witnesses_rows() -> list[Witness]:
    out = []
    for name, rows, length, seed in [("size1", 1, 1, 4), ("aligned", 1000, 16, 5), ("unaligned", 777, 13, 6),
                                     ("empty-rows", 3, 0, 7), ("wide", 300, 64, 8),
                                     ("no-rows", 0, 8, 9)]:
        data = sample(seed, rows * length).reshape(rows, length)
        out.append(Witness(name, {"rows": rows, "length": length}, (data,)))
    return out


register(OpSpec(
    id="hash.fnv1a32", category="hash", summary="FNV-1a 32-bit hash of a uint8 buffer (one invocation)",
    build=build, reference=reference, witnesses=witnesses,
    params_for=lambda data: {"nbytes": int(as_bytes("hash.fnv1a32", data).size)}, tolerance=EXACT,
))
register(OpSpec(
    id="hash.fnv1a32.rows", category="hash",
    summary="FNV-1a 32-bit hash of every row of a (rows, length) uint8 array, one invocation per row",
    build=build_rows, reference=reference_rows, witnesses=witnesses_rows,
    params_for=lambda data: dict(zip(("rows", "length"), rows_of("hash.fnv1a32.rows", data))), tolerance=EXACT,
))
