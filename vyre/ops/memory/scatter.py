"""memory.scatter and memory.scatter_add: ``out[idx[i]] = src[i]`` / ``out[idx[i]] += src[i]``.

``out`` has ``size`` elements (default ``len(src)``) and starts at 0; indices outside
``0..size-1`` (including negative i32 indices) are dropped.

Duplicates: several invocations storing to one slot is a race on the GPU (an arbitrary
winner), so ``memory.scatter`` requires the in-range indices to be unique (the convenience
layer raises DispatchError otherwise) and ``memory.scatter_add`` combines duplicates with
an atomic add (u32/i32, wrapping), which is order-independent and therefore bit-exact.
One invocation per source element in both.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ...backends.schedule import BufferSpec, Pipeline, Step
from ...errors import DispatchError
from ...ir.builder import ProgramBuilder
from ...ir.program import Program
from ...ir.types import DataType
from ..pipeline import single
from ..registry import EXACT, OpSpec, Witness, register
from ._common import DTYPES, INDEX_DTYPES, check_1d, dtype_name, index_in_range, values

WG = 256
ADD_DTYPES = ("u32", "i32")


def _grid(n: int) -> tuple[int, int, int]:
    return (-(-n // WG), 1, 1)


def _check(op: str, dtype: str, index: str, allowed: Sequence[str]) -> None:
    if dtype not in allowed or index not in INDEX_DTYPES:
        raise ValueError(f"{op}: dtype must be one of {allowed} and index one of {INDEX_DTYPES}")


def build_scatter(n: int, size: int, dtype: str, index: str = "u32") -> Pipeline:
    _check("memory.scatter", dtype, index, DTYPES)
    b = ProgramBuilder(f"memory_scatter_{dtype}_{index}", WG)
    src = b.buffer("src", dtype)
    idx = b.buffer("idx", index)
    out = b.buffer("out", dtype, access="write")
    i = b.global_index()
    with b.if_(i < src.len()):
        j, ok = index_in_range(b, idx[i], index, out.len())
        with b.if_(ok):
            out[j] = src[i]
    return single(b.build(), grid=_grid(n), input_counts={"src": n, "idx": n}, counts={"out": size})


def _zero_program(dtype: str) -> Program:
    b = ProgramBuilder(f"memory_fill_zero_{dtype}", WG)
    out = b.buffer("out", dtype, access="write")
    i = b.global_index()
    with b.if_(i < out.len()):
        out[i] = 0
    return b.build()


def _add_program(dtype: str, index: str) -> Program:
    b = ProgramBuilder(f"memory_scatter_add_{dtype}_{index}", WG)
    src = b.buffer("src", dtype)
    idx = b.buffer("idx", index)
    out = b.buffer("out", dtype, access="read_write")
    i = b.global_index()
    with b.if_(i < src.len()):
        j, ok = index_in_range(b, idx[i], index, out.len())
        with b.if_(ok):
            out.atomic_add(j, src[i], discard=True)
    return b.build()


def build_scatter_add(n: int, size: int, dtype: str, index: str = "u32") -> Pipeline:
    _check("memory.scatter_add", dtype, index, ADD_DTYPES)
    buffers = {"src": BufferSpec(DataType(dtype), n), "idx": BufferSpec(DataType(index), n),
               "out": BufferSpec(DataType(dtype), size)}
    steps = (Step(_zero_program(dtype), ("out",), _grid(size)),
             Step(_add_program(dtype, index), ("src", "idx", "out"), _grid(n)))
    return Pipeline("memory.scatter_add", buffers, ("src", "idx"), ("out",), steps)


def _in_range(idx: np.ndarray, size: int) -> tuple[np.ndarray, np.ndarray]:
    i = np.asarray(idx).astype(np.int64)
    return i, (i >= 0) & (i < size)


def reference_scatter(src: np.ndarray, idx: np.ndarray, n: int, size: int, dtype: str,
                      index: str = "u32") -> list[np.ndarray]:
    i, ok = _in_range(idx, size)
    out = np.zeros(size, dtype=src.dtype)
    out[i[ok]] = src[ok]
    return [out]


def reference_scatter_add(src: np.ndarray, idx: np.ndarray, n: int, size: int, dtype: str,
                          index: str = "u32") -> list[np.ndarray]:
    i, ok = _in_range(idx, size)
    acc = np.zeros(size, dtype=np.uint64)
    np.add.at(acc, i[ok], src[ok].view(np.uint32).astype(np.uint64))
    return [(acc & 0xFFFFFFFF).astype(np.uint32).view(src.dtype)]


def _params(op: str, src: np.ndarray, idx: np.ndarray, size: int | None, allowed: Sequence[str]) -> dict[str, Any]:
    check_1d(op, "src", src)
    check_1d(op, "idx", idx)
    if idx.size != src.size:
        raise DispatchError(f"{op}: {src.size} values but {idx.size} indices", fix="pass one index per value")
    size = src.size if size is None else int(size)
    if size < 1:
        raise DispatchError(f"{op}: size must be >= 1, got {size}", fix="pass size=len(out) (default len(src))")
    return {"n": int(src.size), "size": size, "dtype": dtype_name(op, "src", src, allowed),
            "index": dtype_name(op, "idx", idx, INDEX_DTYPES)}


def params_scatter(src: np.ndarray, idx: np.ndarray, size: int | None = None) -> dict[str, Any]:
    params = _params("memory.scatter", src, idx, size, DTYPES)
    i, ok = _in_range(idx, params["size"])
    kept = i[ok]
    if np.unique(kept).size != kept.size:
        raise DispatchError("memory.scatter: duplicate indices (the GPU would keep an arbitrary one)",
                            fix="make the indices unique, or use memory.scatter_add to sum duplicates")
    return params


def params_scatter_add(src: np.ndarray, idx: np.ndarray, size: int | None = None) -> dict[str, Any]:
    return _params("memory.scatter_add", src, idx, size, ADD_DTYPES)


def witnesses_scatter() -> list[Witness]:
    r = np.random.default_rng(51)
    out = []

    def add(name: str, src: np.ndarray, idx: np.ndarray, size: int | None = None) -> None:
        out.append(Witness(name, params_scatter(src, idx, size), (src, idx)))

    add("size1", np.array([-0.0], np.float32), np.array([0], np.uint32))
    add("size1_dropped", np.array([9], np.uint32), np.array([3], np.uint32), 2)
    for dtype in DTYPES:
        src = values(r, dtype, 1000)
        # a permutation into a larger output (gaps stay 0) with some indices out of range
        idx = r.permutation(1500)[:1000].astype(np.uint32)
        idx[:2] = [1500, 0xFFFFFFFF]
        add(f"{dtype}_partial_1000", src, idx, 1500)
    add("i32_index_negative", values(r, "i32", 513), (r.permutation(700)[:513] - 100).astype(np.int32), 600)
    add("u32_large_permutation", values(r, "u32", 1 << 16), r.permutation(1 << 16).astype(np.uint32))
    return out


def witnesses_scatter_add() -> list[Witness]:
    r = np.random.default_rng(52)
    out = []

    def add(name: str, src: np.ndarray, idx: np.ndarray, size: int | None = None) -> None:
        out.append(Witness(name, params_scatter_add(src, idx, size), (src, idx)))

    add("size1", np.array([0xFFFFFFFF], np.uint32), np.array([0], np.uint32))
    # heavy duplicates with wrap-around: every slot overflows u32 / i32
    add("u32_wrap_duplicates", np.full(1000, 0xF0000000, np.uint32), r.integers(0, 7, 1000).astype(np.uint32), 7)
    add("i32_wrap_duplicates", np.resize(np.array([2**31 - 1, -(2**31), 12345], np.int32), 777),
        r.integers(-2, 40, 777).astype(np.int32), 37)
    add("u32_histogram_like", np.ones(5000, np.uint32), r.integers(0, 300, 5000).astype(np.uint32), 300)
    add("i32_random_out_of_range", values(r, "i32", 1 << 16), r.integers(-10, 5000, 1 << 16).astype(np.int32), 4099)
    return out


register(OpSpec(
    id="memory.scatter", category="memory",
    summary="out[idx[i]] = src[i] into a zeroed out of `size` elements; in-range indices must be unique; "
            "out-of-range ones are dropped.",
    build=build_scatter, reference=reference_scatter, witnesses=witnesses_scatter, params_for=params_scatter,
    tolerance=EXACT,
))

register(OpSpec(
    id="memory.scatter_add", category="memory",
    summary="out[idx[i]] += src[i] (u32/i32, wrapping, atomic) into a zeroed out of `size` elements; "
            "out-of-range indices are dropped.",
    build=build_scatter_add, reference=reference_scatter_add, witnesses=witnesses_scatter_add,
    params_for=params_scatter_add, tolerance=EXACT,
))
