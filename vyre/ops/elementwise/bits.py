"""bits.popcount, bits.reverse, bits.clz, bits.ctz on u32 (elementwise, vec4 when n % 4 == 0)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ...backends.schedule import Pipeline
from ...ir.builder import ProgramBuilder, Val
from ..registry import EXACT, OpSpec, Witness, register
from . import _kernel as K
from ._values import with_edges


def _bits(x: np.ndarray) -> np.ndarray:
    """(n, 32) array of bits, least significant first."""
    return np.unpackbits(np.ascontiguousarray(x, dtype="<u4").view(np.uint8), bitorder="little").reshape(-1, 32)


def _popcount(x: np.ndarray) -> np.ndarray:
    out: np.ndarray = _bits(x).sum(axis=1, dtype=np.uint32)
    return out


def _reverse(x: np.ndarray) -> np.ndarray:
    return np.packbits(_bits(x)[:, ::-1], axis=1, bitorder="little").view("<u4").reshape(-1).astype(np.uint32)


def _ctz(x: np.ndarray) -> np.ndarray:
    b = _bits(x)
    return np.where(b.any(axis=1), b.argmax(axis=1), 32).astype(np.uint32)


def _clz(x: np.ndarray) -> np.ndarray:
    b = _bits(x)[:, ::-1]
    return np.where(b.any(axis=1), b.argmax(axis=1), 32).astype(np.uint32)


TABLE = [
    ("popcount", "number of set bits", lambda x: x.count_ones(), _popcount),
    ("reverse", "bit reversal (bit i -> bit 31 - i)", lambda x: x.reverse_bits(), _reverse),
    ("clz", "leading zero bits (32 for 0)", lambda x: x.count_leading_zeros(), _clz),
    ("ctz", "trailing zero bits (32 for 0)", lambda x: x.count_trailing_zeros(), _ctz),
]


def _register(name: str, summary: str, kernel: Callable[[Val], Val], ref: Callable[[np.ndarray], np.ndarray],
              seed: int) -> None:
    def body(b: ProgramBuilder, x: Val) -> Val:
        return kernel(x)

    def build(shape: Sequence[int]) -> Pipeline:
        return K.pipeline(f"bits_{name}", [tuple(int(d) for d in shape)], ["u32"], "u32", body, names=("x",))

    def reference(x: np.ndarray, *, shape: Sequence[int]) -> list[np.ndarray]:
        return [ref(np.asarray(x, np.uint32).reshape(-1)).reshape(shape)]

    def witnesses() -> list[Witness]:
        return [
            Witness("edges", {"shape": (1001,)}, (with_edges("u32", 1001, seed),)),
            Witness("vec4", {"shape": (300, 400)}, (with_edges("u32", 120_000, seed + 1).reshape(300, 400),)),
            Witness("size1", {"shape": (1,)}, (np.array([0x80000001], np.uint32),)),
        ]

    def params_for(x: np.ndarray) -> dict[str, Any]:
        K.dtype_name(f"bits.{name}", x, ("u32",))
        return {"shape": K.shape_of(x)}

    register(OpSpec(id=f"bits.{name}", category="bits", summary=f"{summary}, elementwise on u32", build=build,
                    reference=reference, witnesses=witnesses, params_for=params_for, tolerance=EXACT))


for _k, (_name, _summary, _kernel, _ref) in enumerate(TABLE):
    _register(_name, _summary, _kernel, _ref, 400 + 8 * _k)
