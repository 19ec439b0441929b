"""scan.inclusive and scan.exclusive: prefix sums over u32/i32/f32, any length.

Like numpy.cumsum without an axis, the input is flattened and the output has n elements;
the exclusive scan starts from 0 and drops the last element's contribution. Integer sums
wrap (bit-exact). Kernel: ``_tiles`` (reduce-then-scan, levels chosen at build time).

f32 tolerance: the numpy reference accumulates in float64 and rounds once, so the budget is
the GPU's rounding. An element passes through at most ``h`` additions on its way to any
output (``_tiles.depth``: the lane's serial run, the Hillis-Steele steps, the lane and tile
offsets and, per extra level, the tile sum and its scan: h = 13, 38, 63 for 1, 2, 3
levels), so the first-order bound is h * eps * sum|x| over the prefix: same-sign data is
within rtol = (h + 2) * eps, mixed-sign data within atol = (h + 1) * eps * n * ABS_MAX (the
bound on |x| of the mixed-sign witnesses). A +inf makes every later prefix +inf, NaN (or
+inf and -inf) every later one NaN — the same as the float64 reference; -0.0 sums are not
distinguished from +0.0 (the scan adds a +0.0 offset).

Variant ``subgroup`` (``_subgroup``, needs the adapter feature ``subgroup``): the same levels with
subgroup scans and sums instead of the workgroup-memory steps. Its chains are longer at small
subgroup sizes (h = 40, 103, 166 at 1, 2, 3 levels for 4-lane subgroups; 14 per level from 16
lanes up), and the tolerance takes the larger of the two kernels' h.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ...backends.schedule import Pipeline
from ...errors import DispatchError
from ..registry import EXACT, OpSpec, Tolerance, Witness, register, rel
from . import _subgroup, _tiles

DTYPES = ("u32", "i32", "f32")
NUMPY = {"u32": np.uint32, "i32": np.int32, "f32": np.float32}
EPS = float(np.finfo(np.float32).eps)
ABS_MAX = 1.0  # |x| bound of the mixed-sign f32 witness data (the tolerance's max|x|)


def _check(n: int, dtype: str) -> tuple[int, str]:
    n = int(n)
    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    if dtype not in DTYPES:
        raise ValueError(f"dtype must be one of {DTYPES}, got {dtype!r}")
    return n, dtype


def _build(exclusive: bool) -> Callable[..., Pipeline]:
    def build(n: int, dtype: str) -> Pipeline:
        n, dtype = _check(n, dtype)
        return _tiles.build_scan(n, dtype, exclusive)

    return build


def _reference(exclusive: bool) -> Callable[..., list[np.ndarray]]:
    def reference(x: np.ndarray, n: int, dtype: str) -> list[np.ndarray]:
        n, dtype = _check(n, dtype)
        x = np.asarray(x).reshape(n)
        with np.errstate(invalid="ignore", over="ignore"):
            if dtype == "f32":
                incl = np.cumsum(x.astype(np.float64)).astype(np.float32)
            else:  # wrapping: uint32 has the same bits as i32
                incl = np.cumsum(x.view(np.uint32), dtype=np.uint32).view(NUMPY[dtype])
        if exclusive:
            incl = np.concatenate([np.zeros(1, incl.dtype), incl[:-1]])
        return [incl]

    return reference


def tolerance_for(params: dict[str, Any]) -> Tolerance:
    n, dtype = _check(params["n"], params["dtype"])
    if dtype != "f32":
        return EXACT
    h = max(_tiles.depth(n), _subgroup.depth(n))  # the subgroup variant's chains are longer at 4 lanes
    return rel((h + 2) * EPS, (h + 1) * EPS * n * ABS_MAX)


def _data(dtype: str, n: int, rng: np.random.Generator) -> np.ndarray:
    if dtype == "f32":
        return rng.uniform(-ABS_MAX, ABS_MAX, n).astype(np.float32)
    if dtype == "u32":
        return rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32)
    return rng.integers(-(2**31), 2**31, n, dtype=np.int64).astype(np.int32)


# sizes: 1, not a multiple of 256, exactly one tile, one past a tile (2 levels), 2^18
# (2 levels, 256 tiles), and past TILE^2 (3 levels) for one type per op.
SIZES = [("one", 1), ("n1000", 1000), ("one_tile", _tiles.TILE), ("tile_plus_1", _tiles.TILE + 1),
         ("large_2^18", 1 << 18)]
THREE_LEVELS = _tiles.TILE**2 + 3 * _tiles.TILE + 7


def _witnesses(exclusive: bool) -> Callable[[], list[Witness]]:
    def witnesses() -> list[Witness]:
        rng = np.random.default_rng(21 if exclusive else 20)
        ws = []
        for dtype in DTYPES:
            for name, n in SIZES:
                ws.append(Witness(f"{dtype}_{name}", {"n": n, "dtype": dtype}, (_data(dtype, n, rng),)))
        big = "i32" if exclusive else "u32"
        ws.append(Witness(f"{big}_three_levels", {"n": THREE_LEVELS, "dtype": big},
                          (_data(big, THREE_LEVELS, rng),)))
        inf_late = _data("f32", 3000, rng)
        inf_late[2500] = np.inf
        nan_late = _data("f32", 3000, rng)
        nan_late[[1200, 1300]] = [np.inf, -np.inf]
        specials: list[tuple[str, np.ndarray]] = [
            ("u32_wrap_near_2^32", np.full(5000, 0xFFFFFFF0, np.uint32) - np.arange(5000, dtype=np.uint32)),
            ("i32_extremes", np.tile(np.array([2**31 - 1, 5, -(2**31), -7, 2**31 - 1, 2**31 - 1], np.int32), 400)),
            ("f32_inf_in_second_tile", inf_late),
            ("f32_inf_minus_inf_nan", nan_late),
            ("f32_signed_zeros", np.array([-0.0, 0.0, -0.0, 1.5, -1.5, -0.0, 2.0], np.float32)),
            # k/256, |k| <= 64: every prefix of these is exact in f32 whatever the order
            ("f32_exact_values", (rng.integers(-64, 65, 70001) / 256).astype(np.float32)),
            ("f32_same_sign_big", rng.uniform(1e30, 3e30, 4000).astype(np.float32)),
        ]
        for name, x in specials:
            ws.append(Witness(name, {"n": x.size, "dtype": name[:3]}, (x,)))
        return ws

    return witnesses


def _params_for(op_id: str) -> Callable[..., dict[str, Any]]:
    def params_for(x: np.ndarray) -> dict[str, Any]:
        names = {np.dtype(v): k for k, v in NUMPY.items()}
        if x.dtype not in names:
            raise DispatchError(f"{op_id} takes u32, i32 or f32 arrays, got {x.dtype}",
                                fix="convert the input, e.g. x.astype(np.float32)")
        if x.size == 0:
            raise DispatchError(f"{op_id} of an empty array", fix="pass at least one element")
        return {"n": int(x.size), "dtype": names[x.dtype]}

    return params_for


for _excl in (False, True):
    _id = "scan.exclusive" if _excl else "scan.inclusive"
    register(OpSpec(
        id=_id, category="scan",
        summary=("exclusive" if _excl else "inclusive") + " prefix sum of the flattened input (integers wrap)",
        build=_build(_excl), reference=_reference(_excl), witnesses=_witnesses(_excl),
        params_for=_params_for(_id), tolerance=rel(1e-6), tolerance_for=tolerance_for,
        tolerance_rule=lambda p: None if p["dtype"] != "f32" else
        "rtol=(h + 2)·2^-23 atol=(h + 1)·2^-23·n for |x| <= 1, h = the longest chain of additions from an "
        "element to an output (grows with log n: the larger of _tiles.depth(n) and _subgroup.depth(n))",
        variants=(_subgroup.variant(_excl, _check),),
    ))
