"""Scalars as 32-bit words: the one encoding of scalar parameters in a params uniform (an array
evaluation's scalars, a kernel's scalar arguments).

Each scalar is one little-endian 32-bit word by its numpy kind: ``f`` as its float32 bits (an f16
parameter too: the shader converts), ``b`` as 0 or 1, ``i`` as the int32 two's complement, ``u`` as
the uint32. :func:`pack_scalars` packs a run of them at once with a struct cached per kind string.
Range checks are the caller's (a value out of range raises ``struct.error`` here).
"""

from __future__ import annotations

import struct
from collections.abc import Sequence

_CODE = {"f": "f", "b": "?3x", "i": "i", "u": "I"}  # bool: one byte then 3 zero bytes, a u32 of 0/1
_FORMATS: dict[str, struct.Struct] = {}


def words_format(kinds: str) -> struct.Struct:
    """The struct packing scalars of numpy kinds ``kinds`` (one letter each of ``fbiu``) as words."""
    fmt = _FORMATS.get(kinds)
    if fmt is None:
        fmt = _FORMATS[kinds] = struct.Struct("<" + "".join(_CODE[k] for k in kinds))
    return fmt


def pack_scalars(kinds: str, values: Sequence[object]) -> bytes:
    """``values`` (one per letter of ``kinds``) as 32-bit words."""
    return words_format(kinds).pack(*values)


__all__ = ["pack_scalars", "words_format"]
