"""Byte data in programs: a uint8 array arrives packed 4 bytes per u32 word, little-endian
(vyre.ops.pipeline.pack_bytes); the byte length travels as a build param."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ...errors import DispatchError
from ...ir.builder import ProgramBuilder, Val
from ...ir.values import BufRef


def words(nbytes: int) -> int:
    return (nbytes + 3) // 4


def byte_at(words_buf: BufRef, pos: Val) -> Val:
    """Byte ``pos`` of the packed data."""
    return (words_buf[pos >> 2] >> ((pos & 3) << 3)) & 0xFF


def fold(b: ProgramBuilder, words_buf: BufRef, lo: Val | int, hi: Val | int, step: Callable[[Val], None], *,
         aligned: bool) -> None:
    """``step(byte)`` for the bytes lo..hi-1 in order. ``aligned``: lo and hi are multiples
    of 4, so whole words are loaded once and their 4 bytes unrolled."""
    if aligned:
        wlo = lo // 4 if isinstance(lo, int) else lo >> 2
        whi = hi // 4 if isinstance(hi, int) else hi >> 2
        with b.for_range(wlo, whi) as k:
            w = b.let(words_buf[k], "w")
            for s in range(4):
                step(w & 0xFF if s == 0 else (w >> (8 * s)) & 0xFF)
    else:
        with b.for_range(lo, hi) as p:
            step(byte_at(words_buf, p))


def as_bytes(op_id: str, data: np.ndarray) -> np.ndarray:
    if data.dtype != np.uint8:
        raise DispatchError(f"{op_id} hashes bytes: pass a uint8 array, got {data.dtype}",
                            fix="np.frombuffer(data, dtype=np.uint8) for bytes, or arr.view(np.uint8)")
    return data


def rows_of(op_id: str, data: np.ndarray) -> tuple[int, int]:
    as_bytes(op_id, data)
    if data.ndim != 2:
        raise DispatchError(f"{op_id} hashes the rows of a 2-d uint8 array, got shape {data.shape}",
                            fix="reshape to (rows, length), e.g. data.reshape(rows, -1)")
    return int(data.shape[0]), int(data.shape[1])


def sample(seed: int, n: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 256, n, dtype=np.uint8)


__all__ = ["words", "byte_at", "fold", "as_bytes", "rows_of", "sample"]
