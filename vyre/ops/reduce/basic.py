"""reduce.sum, reduce.prod, reduce.min, reduce.max, reduce.mean over u32/i32/f32.

Over the whole buffer (axis=None: a 0-d result) or along one axis of an N-d array (the
result has that axis removed), built from the multi-pass kernel of ``_blocks``.

Semantics: integer sums and products wrap (bit-exact with numpy's uint32 arithmetic);
min/max are exact; f32 sums start from -0.0 (the IEEE additive identity, so a sum of -0.0
is -0.0), a sum with +inf is +inf, with NaN (or +inf and -inf) NaN; f32 min/max with NaN
operands are not portable (WGSL min/max), so the witnesses leave NaN out of them.
``reduce.mean`` returns f32 for every input type: elements are converted to f32 and summed
in f32, then divided by the axis length.

Tolerances: ints and min/max bit-exact. The numpy references compute in float64 and round
once, so the budget is the GPU's own rounding. An element passes through at most ``h`` f32
additions on its way to the output (``_blocks.depth``: serial loads per lane + the vec4
lanes + the tree levels, summed over the passes), so the first-order error bound of the sum
is h * eps * sum|x|: same-sign data is within rtol = (h + 2) * eps (one more for the
reference's rounding), mixed-sign data within atol = (h + 1) * eps * n * max|x| with
max|x| <= SUM_ABS_MAX (the bound of the mixed-sign witness data; one more eps for the
int -> f32 conversion of the mean, whose budget is divided by n). E.g. 2^18 elements in
[-1, 1]: h = 32, atol = 1.03; the observed error is ~5e-5. Products: each of the n - 1
multiplications rounds once whatever the order, so rtol = (n + 1) * eps.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ...backends.schedule import Pipeline
from ..registry import EXACT, OpSpec, Tolerance, Witness, register, rel
from . import _blocks as blk
from . import subgroup_sum
from ._blocks import NUMPY, Reducer

EPS = float(np.finfo(np.float32).eps)
# |x| bound of the mixed-sign witness data, per input type (the tolerance's max|x|)
SUM_ABS_MAX = {"f32": 1.0, "i32": 2.0**31, "u32": 2.0**32}

_IDENTITY = {
    "sum": {"u32": 0, "i32": 0, "f32": -0.0},
    "prod": {"u32": 1, "i32": 1, "f32": 1.0},
    "min": {"u32": 0xFFFFFFFF, "i32": 2**31 - 1, "f32": float("inf")},
    "max": {"u32": 0, "i32": -(2**31), "f32": float("-inf")},
}
_COMBINE = {
    "sum": lambda b, a, c: (a[0] + c[0],),
    "prod": lambda b, a, c: (a[0] * c[0],),
    "min": lambda b, a, c: (b.min(a[0], c[0]),),
    "max": lambda b, a, c: (b.max(a[0], c[0]),),
}


def reducer(op: str, dtype: str, length: int) -> Reducer:
    if op == "mean":
        lift = (lambda b, v, p: (v,)) if dtype == "f32" else (lambda b, v, p: (v.cast("f32"),))
        return Reducer("mean", dtype, ("f32",), (-0.0,), "f32", lift, _COMBINE["sum"],
                       lambda b, s: s[0] / b.lit(float(length), "f32"))
    return Reducer(op, dtype, (dtype,), (_IDENTITY[op][dtype],), dtype, lambda b, v, p: (v,), _COMBINE[op])


def _build(op: str) -> Callable[..., Pipeline]:
    def build(shape: Sequence[int], dtype: str, axis: int | None = None) -> Pipeline:
        shape, dtype, axis = blk.check_params(shape, dtype, axis)
        return blk.build_pipeline(reducer(op, dtype, blk.collapse(shape, axis)[1]), shape, axis)

    return build


def _reference(op: str) -> Callable[..., list[np.ndarray]]:
    def reference(x: np.ndarray, shape: Sequence[int], dtype: str, axis: int | None = None) -> list[np.ndarray]:
        shape, dtype, axis = blk.check_params(shape, dtype, axis)
        x = blk.reshaped(x, shape)
        with np.errstate(invalid="ignore", over="ignore"):  # inf - inf, inf * 0 give NaN quietly
            if op == "mean":
                out = np.mean(x.astype(np.float64), axis=axis).astype(np.float32)
            elif op in ("min", "max"):
                out = (np.min if op == "min" else np.max)(x, axis=axis)
            elif dtype == "f32":
                out = (np.sum if op == "sum" else np.prod)(x.astype(np.float64), axis=axis).astype(np.float32)
            else:  # wrapping integer arithmetic: uint32 has the same bits as i32
                out = (np.sum if op == "sum" else np.prod)(x.view(np.uint32), axis=axis, dtype=np.uint32)
                out = np.asarray(out).view(NUMPY[dtype])
        return [np.asarray(out, dtype=NUMPY["f32" if op == "mean" else dtype])]

    return reference


def _tolerance(op: str) -> Callable[[dict[str, Any]], Tolerance]:
    def tolerance_for(params: dict[str, Any]) -> Tolerance:
        shape, dtype, axis = blk.check_params(params["shape"], params["dtype"], params.get("axis"))
        if op in ("min", "max") or (dtype != "f32" and op != "mean"):
            return EXACT
        n = blk.collapse(shape, axis)[1]
        if op == "prod":
            return rel((n + 1) * EPS)
        h = blk.depth(shape, axis)
        if op == "sum" and subgroup_sum.applies(params):  # its subgroup variant, held to the same tolerance
            h = max(h, subgroup_sum.depth(shape, axis))
        if op == "mean":  # + the int -> f32 conversion and the division
            return rel((h + 3) * EPS, (h + 1) * EPS * SUM_ABS_MAX[dtype])
        return rel((h + 2) * EPS, (h + 1) * EPS * n * SUM_ABS_MAX[dtype])

    return tolerance_for


# ----------------------------------------------------------------------------- witnesses
def _data(op: str, dtype: str, shape: Sequence[int], rng: np.random.Generator) -> np.ndarray:
    n = math.prod(shape)
    if dtype == "f32":
        if op == "prod":  # |x| in [0.9, 1.1] with both signs: no overflow or underflow
            signed: np.ndarray = rng.uniform(0.9, 1.1, n) * rng.choice([-1.0, 1.0], n)
            return signed.astype(np.float32).reshape(shape)
        return rng.uniform(-SUM_ABS_MAX["f32"], SUM_ABS_MAX["f32"], n).astype(np.float32).reshape(shape)
    if op == "prod":  # odd factors, or the product soon wraps to 0
        lo, hi = (0, 2**32) if dtype == "u32" else (-(2**31), 2**31)
        return (rng.integers(lo, hi, n, dtype=np.int64) | 1).astype(NUMPY[dtype]).reshape(shape)
    if dtype == "u32":
        return rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32).reshape(shape)
    return rng.integers(-(2**31), 2**31, n, dtype=np.int64).astype(np.int32).reshape(shape)


def _specials(op: str) -> list[tuple[str, dict[str, Any], np.ndarray]]:
    """Edge cases: overflow, wrap, inf, NaN, -0.0, exactly summable floats."""
    def f(v: Any) -> np.ndarray:
        return np.array(v, dtype=np.float32)

    top = np.full(1000, 0xFFFFFFF0, np.uint32) - np.arange(1000, dtype=np.uint32)  # sums wrap
    out: list[tuple[str, dict[str, Any], np.ndarray]] = [("u32_near_2^32", {"shape": (1000,), "dtype": "u32"}, top),
           ("i32_extremes", {"shape": (7,), "dtype": "i32"},
            np.array([2**31 - 1, 2**31 - 1, -(2**31), -(2**31), -1, 1, 0], np.int32))]
    if op in ("sum", "mean"):
        out += [("f32_inf", {"shape": (300,), "dtype": "f32"}, np.r_[f(np.arange(299)), f([np.inf])]),
                ("f32_nan", {"shape": (300,), "dtype": "f32"}, np.r_[f([1.0, np.nan]), f(np.ones(298))]),
                ("f32_inf_minus_inf", {"shape": (5,), "dtype": "f32"}, f([1, np.inf, 2, -np.inf, 3])),
                ("f32_negative_zeros", {"shape": (4,), "dtype": "f32"}, f([-0.0] * 4)),
                # k/256 with |k| <= 64: every partial sum of 2^18 of them is exact in f32
                ("f32_exact_large", {"shape": (1 << 18,), "dtype": "f32"},
                 (np.random.default_rng(7).integers(-64, 65, 1 << 18) / 256).astype(np.float32)),
                ("f32_same_sign_big", {"shape": (5000,), "dtype": "f32"},
                 np.random.default_rng(8).uniform(1e30, 3e30, 5000).astype(np.float32))]
    elif op == "prod":
        out += [("f32_inf_nan", {"shape": (6, 3), "dtype": "f32", "axis": 0},
                 f([[1, np.inf, 2], [2, 3, 0], [-1, 1, 1], [1, 1, 1], [0.5, np.nan, 2], [1, 1, -0.0]])),
                ("i32_wrap_ones", {"shape": (40,), "dtype": "i32"}, np.full(40, -3, np.int32))]
    else:
        out += [("f32_inf_negzero", {"shape": (8, 3), "dtype": "f32", "axis": 0},
                 f([[np.inf, -0.0, 1], [-np.inf, 0.0, 2], [5, -0.0, -np.inf], [1, 0.0, np.inf],
                    [2, -0.0, 3], [3, 0.0, 4], [4, 1, 5], [-2, -1, 6]]))]
    return out


_SEED = {"sum": 1, "prod": 2, "min": 3, "max": 4, "mean": 5}


def _witnesses(op: str) -> Callable[[], list[Witness]]:
    def witnesses() -> list[Witness]:
        rng = np.random.default_rng(_SEED[op])
        ws = []
        for dtype in blk.DTYPES:
            for name, shape, axis in blk.BASE_SHAPES:
                ws.append(Witness(f"{dtype}_{name}", {"shape": shape, "dtype": dtype, "axis": axis},
                                  (_data(op, dtype, shape, rng),)))
        for k, (name, shape, axis) in enumerate(blk.AXIS_SHAPES):  # the axis shapes spread over the types
            dtype = blk.DTYPES[k % 3]
            ws.append(Witness(f"{dtype}_{name}", {"shape": shape, "dtype": dtype, "axis": axis},
                              (_data(op, dtype, shape, rng),)))
        for name, params, x in _specials(op):
            ws.append(Witness(name, {"axis": None, **params}, (x,)))
        return ws

    return witnesses


def _params_for(op: str) -> Callable[..., dict[str, Any]]:
    def params_for(x: np.ndarray, axis: int | None = None) -> dict[str, Any]:
        return blk.params_from_array(f"reduce.{op}", x, axis)

    return params_for


_SUMMARY = {
    "sum": "sum over the whole buffer or along an axis (integers wrap)",
    "prod": "product over the whole buffer or along an axis (integers wrap)",
    "min": "minimum over the whole buffer or along an axis",
    "max": "maximum over the whole buffer or along an axis",
    "mean": "mean (f32) over the whole buffer or along an axis",
}

# docs/ops.md's text of tolerance_for (n: the elements each output reduces, from shape and axis; h: the longest
# chain of roundings from an element to its output, _blocks.depth)
_TOLERANCE_RULE: dict[str, Callable[[dict[str, Any]], str | None]] = {
    "sum": lambda p: None if p["dtype"] != "f32" else
    "rtol=(h + 2)·2^-23 atol=(h + 1)·2^-23·n for |x| <= 1, n = the elements per output (shape, axis), "
    "h = the longest chain of additions to an output",
    "prod": lambda p: None if p["dtype"] != "f32" else
    "rtol=(n + 1)·2^-23, n = the elements per output (shape, axis)",
    "mean": lambda p: "rtol=(h + 3)·2^-23 atol=(h + 1)·2^-23" + {"f32": "", "i32": "·2^31", "u32": "·2^32"}[p["dtype"]]
    + " (h = the longest chain of additions to an output, from shape and axis)",
}

for _op in ("sum", "prod", "min", "max", "mean"):
    register(OpSpec(
        id=f"reduce.{_op}", category="reduce", summary=_SUMMARY[_op], build=_build(_op),
        reference=_reference(_op), witnesses=_witnesses(_op), params_for=_params_for(_op),
        tolerance=EXACT if _op in ("min", "max") else rel(1e-6), tolerance_for=_tolerance(_op),
        variants=(subgroup_sum.VARIANT,) if _op == "sum" else (),
        tolerance_rule=_TOLERANCE_RULE.get(_op),
    ))
