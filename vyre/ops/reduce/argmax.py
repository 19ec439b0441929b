"""reduce.argmax: the first index of the maximum (u32), over the whole buffer or along an axis.

Like numpy.argmax: over the whole buffer the index is into the flattened array; along an
axis it is the position along that axis. Ties go to the smallest index.

Every comparison is on integer keys, so the result is exact and portable (no float
compares, which the WGSL spec lets implementations treat loosely for NaN): an element maps
to a u32 key whose unsigned order is the value order — u32 itself, i32 with the sign bit
flipped, f32 through its bits (positive: bits | 0x80000000, negative: ~bits), with -0.0
made +0.0 first (they compare equal, so the first of them wins, as in numpy) and every NaN
mapped to 0xFFFFFFFF, above +inf: the first NaN wins, as in numpy. The reduction state is
(key, index), combined by (larger key, then smaller index); the multi-pass kernel is
``_blocks``'s.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from ...backends.schedule import Pipeline
from ...ir.builder import ProgramBuilder, Val
from ..registry import EXACT, OpSpec, Witness, register
from . import _blocks as blk
from ._blocks import Reducer, State

NO_INDEX = 0xFFFFFFFF


def order_key(b: ProgramBuilder, v: Val, dtype: str) -> Val:
    """A u32 whose unsigned order is the order of ``v`` (NaN above everything, -0.0 == +0.0)."""
    if dtype == "u32":
        return v
    if dtype == "i32":
        return v.bitcast("u32") ^ 0x80000000
    raw = b.let(v.bitcast("u32"))
    bits = b.let(b.select(raw == 0x80000000, 0, raw))
    nan = (bits & 0x7FFFFFFF) > 0x7F800000
    return b.select(nan, NO_INDEX, b.select(bits >= 0x80000000, ~bits, bits | 0x80000000))


def _combine(b: ProgramBuilder, a: State, c: State) -> State:
    better = b.let((c[0] > a[0]) | ((c[0] == a[0]) & (c[1] < a[1])))
    return b.select(better, c[0], a[0]), b.select(better, c[1], a[1])


def reducer(dtype: str) -> Reducer:
    return Reducer("argmax", dtype, ("u32", "u32"), (0, NO_INDEX), "u32",
                   lambda b, v, pos: (order_key(b, v, dtype), pos), _combine, lambda b, s: s[1])


def build(shape: Sequence[int], dtype: str, axis: int | None = None) -> Pipeline:
    shape, dtype, axis = blk.check_params(shape, dtype, axis)
    return blk.build_pipeline(reducer(dtype), shape, axis)


def reference(x: np.ndarray, shape: Sequence[int], dtype: str, axis: int | None = None) -> list[np.ndarray]:
    shape, dtype, axis = blk.check_params(shape, dtype, axis)
    return [np.asarray(np.argmax(blk.reshaped(x, shape), axis=axis), dtype=np.uint32)]


def _data(dtype: str, shape: Sequence[int], rng: np.random.Generator) -> np.ndarray:
    """Few distinct values, so the maximum repeats and the first index matters."""
    n = math.prod(shape)
    if dtype == "f32":
        return (rng.integers(-40, 41, n) / 4).astype(np.float32).reshape(shape)
    if dtype == "u32":
        return rng.choice(np.array([0, 1, 7, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFE, 0xFFFFFFFF], np.uint32),
                          n).reshape(shape)
    out: np.ndarray = rng.integers(-(2**31), -(2**31) + 50, n, dtype=np.int64).astype(np.int32).reshape(shape) + \
        rng.choice(np.array([0, 2**31 - 60], np.int32), n).reshape(shape)
    return out


def witnesses() -> list[Witness]:
    rng = np.random.default_rng(6)
    ws = []
    for dtype in blk.DTYPES:
        for name, shape, axis in blk.BASE_SHAPES:
            ws.append(Witness(f"{dtype}_{name}", {"shape": shape, "dtype": dtype, "axis": axis},
                              (_data(dtype, shape, rng),)))
    for k, (name, nd_shape, nd_axis) in enumerate(blk.AXIS_SHAPES):
        dtype = blk.DTYPES[k % 3]
        ws.append(Witness(f"{dtype}_{name}", {"shape": nd_shape, "dtype": dtype, "axis": nd_axis},
                          (_data(dtype, nd_shape, rng),)))
    def f(v: Any) -> np.ndarray:
        return np.array(v, dtype=np.float32)

    nan_late = f(rng.uniform(-1, 1, 5000))
    nan_late[[3001, 4500]] = np.nan
    nan_late[10] = np.inf
    ws += [
        # numpy: the first NaN is the argmax, also after +inf; -0.0 and +0.0 tie (first wins)
        Witness("f32_nan_first_wins", {"shape": (5000,), "dtype": "f32", "axis": None}, (nan_late,)),
        Witness("f32_specials_columns", {"shape": (5, 4), "dtype": "f32", "axis": 0},
                (f([[-0.0, -np.inf, 1, -np.nan], [0.0, -np.inf, np.inf, 2], [0.0, -3e38, np.inf, np.nan],
                    [-1, -np.inf, -np.inf, 5], [-0.0, -np.inf, 2, 5]]),)),
        Witness("f32_all_negative", {"shape": (777,), "dtype": "f32", "axis": None},
                (-f(rng.uniform(1, 100, 777)),)),
        Witness("i32_extremes", {"shape": (6,), "dtype": "i32", "axis": None},
                (np.array([-(2**31), -1, 2**31 - 1, 0, 2**31 - 1, -(2**31)], np.int32),)),
        Witness("u32_all_equal", {"shape": (3000,), "dtype": "u32", "axis": None},
                (np.full(3000, 0xFFFFFFFF, np.uint32),)),
    ]
    return ws


def params_for(x: np.ndarray, axis: int | None = None) -> dict[str, Any]:
    return blk.params_from_array("reduce.argmax", x, axis)


register(OpSpec(
    id="reduce.argmax", category="reduce",
    summary="first index (u32) of the maximum over the whole buffer or along an axis; NaN is the maximum",
    build=build, reference=reference, witnesses=witnesses, params_for=params_for, tolerance=EXACT,
))
