"""sort.topk: the k largest values of an f32 or u32 array and their indices, largest first.

Ties go to the lower index first. -0.0 and +0.0 are equal (the tie rule applies; the
returned value keeps its sign). NaN is not supported: a NaN with the sign bit clear ranks
above +inf and one with it set below -inf, while numpy's order puts every NaN last, so the
witnesses leave NaN out.

Kernel strategy: one program maps every value to a u32 key whose ascending order is
descending value order (f32: flip the magnitude bits of non-negative values, keep negative
ones; -0.0 first becomes +0.0; u32: complement), with the value's index as payload. The
stable radix sort of ``_radix`` (8 passes) sorts the pairs on the GPU (stability gives the
lower-index-first tie rule), and a last program gathers the first k indices and their
values. Everything runs on the device; values are copied, never recomputed: bit-exact.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...backends.schedule import BufferSpec, Pipeline, Step
from ...errors import DispatchError
from ...ir.builder import ProgramBuilder
from ...ir.program import Program
from ...ir.types import DataType
from ..registry import EXACT, OpSpec, Witness, register
from ._radix import WG, blocks_of, sort_steps

U32 = DataType.U32
DTYPES = ("f32", "u32")


def _keys_program(dtype: str) -> Program:
    b = ProgramBuilder(f"sort_topk_keys_{dtype}", WG)
    x = b.buffer("x", dtype)
    keys = b.buffer("keys", U32, access="write")
    idx = b.buffer("idx", U32, access="write")
    i = b.global_index()
    with b.if_(i < x.len()):
        if dtype == "f32":
            bits = b.let(x[i].bitcast(U32), "bits")
            bits = b.let(b.select(bits == 0x80000000, 0, bits), "no_neg_zero")
            keys[i] = b.select(bits >= 0x80000000, bits, bits ^ 0x7FFFFFFF)
        else:
            keys[i] = ~x[i]
        idx[i] = i
    return b.build()


def _take_program(dtype: str) -> Program:
    b = ProgramBuilder(f"sort_topk_take_{dtype}", WG)
    x = b.buffer("x", dtype)
    order = b.buffer("order", U32)
    values = b.buffer("values", dtype, access="write")
    indices = b.buffer("indices", U32, access="write")
    j = b.global_index()
    with b.if_(j < values.len()):
        src = b.let(order[j], "src")
        indices[j] = src
        values[j] = x[src]  # src < len(x): it is a permutation of 0..n-1
    return b.build()


def build(n: int, k: int, dtype: str) -> Pipeline:
    if dtype not in DTYPES:
        raise ValueError(f"sort.topk: dtype must be one of {DTYPES}, got {dtype!r}")
    if not 1 <= k <= n:
        raise ValueError(f"sort.topk: need 1 <= k <= n, got k={k}, n={n}")
    buffers = {"x": BufferSpec(DataType(dtype), n), "keys": BufferSpec(U32, n), "idx": BufferSpec(U32, n),
               "values": BufferSpec(DataType(dtype), k), "indices": BufferSpec(U32, k)}
    nblk = blocks_of(n, WG)
    steps = [Step(_keys_program(dtype), ("x", "keys", "idx"), (nblk, 1, 1))]
    steps += sort_steps(n, ("keys", "idx"), ("sorted_keys", "order"), ("keys_tmp", "idx_tmp"), buffers)
    steps.append(Step(_take_program(dtype), ("x", "order", "values", "indices"), (blocks_of(k, WG), 1, 1)))
    return Pipeline("sort.topk", buffers, ("x",), ("values", "indices"), tuple(steps))


def reference(x: np.ndarray, n: int, k: int, dtype: str) -> list[np.ndarray]:
    x = np.asarray(x)
    # stable argsort of a descending key: ties keep the lower index first
    key = -x.astype(np.float64) if dtype == "f32" else ~x.astype(np.uint32)
    order = np.argsort(key, kind="stable")[:k]
    return [x[order], order.astype(np.uint32)]


def params_for(x: np.ndarray, k: int | None = None) -> dict[str, Any]:
    if k is None:
        raise DispatchError("sort.topk needs k", fix="call sort_topk(backend, x, k=...)")
    if x.dtype not in (np.float32, np.uint32):
        raise DispatchError(f"sort.topk takes f32 or u32 values, got {x.dtype}",
                            fix="pass x.astype(np.float32) or x.astype(np.uint32)")
    if x.ndim != 1 or x.size == 0:
        raise DispatchError(f"sort.topk: x must be a non-empty 1-D array, got shape {x.shape}", fix="pass x.ravel()")
    if not 1 <= int(k) <= x.size:
        raise DispatchError(f"sort.topk: k={k} is outside 1..{x.size}", fix=f"pass k between 1 and {x.size}")
    if x.dtype == np.float32 and np.isnan(x).any():
        raise DispatchError("sort.topk: x contains NaN, which has no portable rank",
                            fix="replace NaN first, e.g. np.nan_to_num(x, nan=-np.inf)")
    return {"n": int(x.size), "k": int(k), "dtype": "f32" if x.dtype == np.float32 else "u32"}


def witnesses() -> list[Witness]:
    r = np.random.default_rng(41)
    specials = np.array([np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 1e-40, -1e-40, 3.4e38, -3.4e38, 0.0, -0.0, 1.0,
                         np.inf], np.float32)
    sets = [
        ("size1_f32", np.array([-0.0], np.float32), 1),
        ("size1_u32", np.array([7], np.uint32), 1),
        ("random_f32_1000_k10", r.standard_normal(1000).astype(np.float32), 10),
        ("specials_ties_f32_k_all", np.resize(specials, 301), 301),  # NaN left out: not portable (module doc)
        ("small_ints_ties_f32", r.integers(-3, 4, 777).astype(np.float32), 300),
        ("u32_all_ones_ties", np.resize(np.array([0xFFFFFFFF, 0, 5, 0xFFFFFFFF, 0x80000000], np.uint32), 513), 7),
        ("u32_random_20000_k1000", r.integers(0, 2**32, 20000, dtype=np.uint64).astype(np.uint32), 1000),
    ]
    return [Witness(name, {"n": int(x.size), "k": int(k), "dtype": "f32" if x.dtype == np.float32 else "u32"}, (x,))
            for name, x, k in sets]


register(OpSpec(
    id="sort.topk", category="sort",
    summary="The k largest f32/u32 values and their u32 indices, largest first; ties: lower index first.",
    build=build, reference=reference, witnesses=witnesses, params_for=params_for, tolerance=EXACT,
))
