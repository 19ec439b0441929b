"""sort.radix and sort.radix_pairs: stable ascending LSD radix sort of u32 keys (4-bit digits).

Kernel strategy (see ``_radix``): 8 passes, each a per-workgroup digit histogram, a
multi-block exclusive scan of the (digit, block) counts and a stable scatter ranking every
key among the equal digits of its block with a workgroup prefix sum; keys (and values)
ping-pong between two buffers. Integer op: bit-exact.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...backends.schedule import BufferSpec, Pipeline
from ...errors import DispatchError
from ...ir.types import DataType
from ..registry import EXACT, OpSpec, Witness, register
from ._radix import WG, sort_steps

U32 = DataType.U32


def build_keys(n: int) -> Pipeline:
    buffers = {"keys": BufferSpec(U32, n)}
    steps = sort_steps(n, ("keys",), ("sorted",), ("keys_tmp",), buffers)
    return Pipeline("sort.radix", buffers, ("keys",), ("sorted",), tuple(steps))


def build_pairs(n: int) -> Pipeline:
    buffers = {"keys": BufferSpec(U32, n), "values": BufferSpec(U32, n)}
    steps = sort_steps(n, ("keys", "values"), ("sorted_keys", "sorted_values"), ("keys_tmp", "values_tmp"), buffers)
    return Pipeline("sort.radix_pairs", buffers, ("keys", "values"), ("sorted_keys", "sorted_values"), tuple(steps))


def reference_keys(keys: np.ndarray, n: int) -> list[np.ndarray]:
    return [np.sort(np.asarray(keys, np.uint32), kind="stable")]


def reference_pairs(keys: np.ndarray, values: np.ndarray, n: int) -> list[np.ndarray]:
    order = np.argsort(np.asarray(keys, np.uint32), kind="stable")
    return [keys[order], values[order]]


def _check_keys(name: str, a: np.ndarray) -> None:
    if a.dtype != np.uint32:
        raise DispatchError(f"sort: {name} must be u32, got {a.dtype}",
                            fix=f"pass {name}.astype(np.uint32) (for other types sort an order-preserving u32 key)")
    if a.ndim != 1 or a.size == 0:
        raise DispatchError(f"sort: {name} must be a non-empty 1-D array, got shape {a.shape}",
                            fix=f"pass {name}.ravel() with at least one element")


def params_keys(keys: np.ndarray) -> dict[str, Any]:
    _check_keys("keys", keys)
    return {"n": int(keys.size)}


def params_pairs(keys: np.ndarray, values: np.ndarray) -> dict[str, Any]:
    _check_keys("keys", keys)
    _check_keys("values", values)
    if values.size != keys.size:
        raise DispatchError(f"sort.radix_pairs: {keys.size} keys but {values.size} values",
                            fix="pass one value per key")
    return {"n": int(keys.size)}


def _key_sets() -> list[tuple[str, np.ndarray]]:
    r = np.random.default_rng(40)
    big = 1 << 16
    return [
        ("size1", np.array([0xFFFFFFFF], np.uint32)),
        ("random_1000", r.integers(0, 2**32, 1000, dtype=np.uint64).astype(np.uint32)),
        ("edges_and_all_ones", np.resize(np.array([0xFFFFFFFF, 0, 1, 0x80000000, 0x7FFFFFFF, 0xFFFFFFFF, 0xF0F0F0F0,
                                                   16, 15], np.uint32), WG + 3)),
        ("already_sorted", np.arange(3 * WG + 5, dtype=np.uint32) * 7919),
        ("reverse_sorted", (np.arange(2 * WG - 1, dtype=np.uint32) * 0x01010101)[::-1].copy()),
        ("all_equal", np.full(WG + 1, 0xDEADBEEF, np.uint32)),
        ("few_distinct_large", r.integers(0, 20, 4099).astype(np.uint32) * np.uint32(0x11111111)),
        (f"random_{big}", r.integers(0, 2**32, big, dtype=np.uint64).astype(np.uint32)),
    ]


def witnesses_keys() -> list[Witness]:
    return [Witness(name, {"n": int(k.size)}, (k,)) for name, k in _key_sets()]


def witnesses_pairs() -> list[Witness]:
    # values = original index: any instability shows up as a permuted run of equal keys
    return [Witness(name, {"n": int(k.size)}, (k, np.arange(k.size, dtype=np.uint32))) for name, k in _key_sets()]


register(OpSpec(
    id="sort.radix", category="sort",
    summary="Sort u32 keys ascending (stable LSD radix sort, 4-bit digits, 8 passes).",
    build=build_keys, reference=reference_keys, witnesses=witnesses_keys, params_for=params_keys,
    tolerance=EXACT,
))

register(OpSpec(
    id="sort.radix_pairs", category="sort",
    summary="Sort u32 keys ascending carrying u32 values; stable (equal keys keep their input order).",
    build=build_pairs, reference=reference_pairs, witnesses=witnesses_pairs, params_for=params_pairs,
    tolerance=EXACT,
))
