"""memory.gather: ``out[i] = src[idx[i]]``; an index outside ``0..len(src)-1`` (including a
negative i32 index) gives 0.

One invocation per output element: coalesced index loads and output stores, random source
loads. Pure data movement: bit-exact (NaN stays NaN, -0.0 keeps its sign).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...backends.schedule import Pipeline
from ...ir.builder import ProgramBuilder
from ..pipeline import single
from ..registry import EXACT, OpSpec, Witness, register
from ._common import DTYPES, INDEX_DTYPES, check_1d, dtype_name, index_in_range, values

WG = 256


def build(n_src: int, n: int, dtype: str, index: str = "u32") -> Pipeline:
    if dtype not in DTYPES or index not in INDEX_DTYPES:
        raise ValueError(f"memory.gather: dtype must be one of {DTYPES} and index one of {INDEX_DTYPES}")
    b = ProgramBuilder(f"memory_gather_{dtype}_{index}", WG)
    src = b.buffer("src", dtype)
    idx = b.buffer("idx", index)
    out = b.buffer("out", dtype, access="write")
    i = b.global_index()
    with b.if_(i < out.len()):
        j, ok = index_in_range(b, idx[i], index, src.len())
        with b.if_(ok):
            out[i] = src[j]
        with b.else_():
            out[i] = 0
    return single(b.build(), grid=(-(-n // WG), 1, 1), input_counts={"src": n_src, "idx": n}, counts={"out": n})


def reference(src: np.ndarray, idx: np.ndarray, n_src: int, n: int, dtype: str,
              index: str = "u32") -> list[np.ndarray]:
    i = np.asarray(idx).astype(np.int64)
    ok = (i >= 0) & (i < len(src))
    out = np.zeros(len(i), dtype=src.dtype)
    out[ok] = src[i[ok]]
    return [out]


def params_for(src: np.ndarray, idx: np.ndarray) -> dict[str, Any]:
    check_1d("memory.gather", "src", src)
    check_1d("memory.gather", "idx", idx)
    return {"n_src": int(src.size), "n": int(idx.size), "dtype": dtype_name("memory.gather", "src", src),
            "index": dtype_name("memory.gather", "idx", idx, INDEX_DTYPES)}


def witnesses() -> list[Witness]:
    r = np.random.default_rng(50)
    out = []

    def add(name: str, src: np.ndarray, idx: np.ndarray) -> None:
        out.append(Witness(name, params_for(src, idx), (src, idx)))

    add("size1_f32", np.array([-0.0], np.float32), np.array([0], np.uint32))
    add("size1_out_of_range", np.array([5], np.int32), np.array([1], np.uint32))
    for dtype in DTYPES:
        src = values(r, dtype, 1000)
        idx = r.integers(0, 1000, 777).astype(np.uint32)
        idx[:4] = [999, 1000, 0xFFFFFFFF, 0]  # last element, just past the end, far past the end
        add(f"{dtype}_random_777", src, idx)
    src = values(r, "i32", 300)
    add("i32_index_negative", src, r.integers(-400, 400, 1001).astype(np.int32))
    add("f32_large_permutation", values(r, "f32", 1 << 16), r.permutation(1 << 16).astype(np.uint32))
    return out


register(OpSpec(
    id="memory.gather", category="memory",
    summary="out[i] = src[idx[i]] (u32/i32/f32 values, u32/i32 indices); out-of-range indices give 0.",
    build=build, reference=reference, witnesses=witnesses, params_for=params_for, tolerance=EXACT,
))
