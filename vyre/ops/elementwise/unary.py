"""map.<op>: unary elementwise ops over u32/i32/f32/f16 (and bool for map.not).

Kernel: one invocation per element, or per vec4 when the element count is a multiple of 4
(see _kernel). f16 transcendentals are computed in f32 and rounded back; exact ops (neg,
abs, floor, ...) run in f16. References compute in float64 and round once (correctly
rounded), so float tolerances budget the GPU's own error (WGSL's accuracy rules) plus the
interpreter's (numpy float32, within 1-2 ulp).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ...backends.schedule import Pipeline
from ...ir.builder import ProgramBuilder, Val
from ...ir.types import DataType
from .._ir import dtype_of, lanes_of
from ..registry import EXACT, OpSpec, Tolerance, Witness, register, rel, ulp
from . import _kernel as K
from ._values import F32_MAX, F32_TINY, INF, NAN, with_edges

FLOATS = ("f32", "f16")


def _in_f32(fn: Callable[[ProgramBuilder, Val], Val]) -> Callable[[ProgramBuilder, Val, str], Val]:
    """Compute ``fn`` in f32 (f16 operands are widened, the result rounded back to f16)."""

    def kernel(b: ProgramBuilder, x: Val, dtype: str) -> Val:
        if dtype != "f16":
            return fn(b, x)
        lanes = lanes_of(x)
        wide = x.cast(DataType.vector(DataType.F32, lanes))
        return fn(b, wide).cast(DataType.vector(DataType.F16, lanes))

    return kernel


def _native(fn: Callable[[Val], Val]) -> Callable[[ProgramBuilder, Val, str], Val]:
    return lambda b, x, dtype: fn(x)


def _tanh(b: ProgramBuilder, x: Val) -> Val:
    t = dtype_of(x)
    lim = b.vec(t, 10.0) if t.is_vector else 10.0
    return x.max(-lim).min(lim).tanh()


def _f64(fn: Callable[[np.ndarray], np.ndarray]) -> Callable[[np.ndarray], np.ndarray]:
    """numpy reference: compute in float64, round once to the input dtype."""

    def ref(x: np.ndarray) -> np.ndarray:
        with np.errstate(all="ignore"):
            out: np.ndarray = fn(x.astype(np.float64)).astype(x.dtype)
            return out

    return ref


@dataclass(frozen=True)
class Unary:
    name: str
    summary: str
    dtypes: tuple[str, ...]
    kernel: Callable[[ProgramBuilder, Val, str], Val]  # (b, x, dtype) -> value of dtype (vec4 or scalar)
    reference: Callable[..., Any]  # numpy: x -> result of x.dtype (a ufunc or a function)
    tolerance: dict[str, Tolerance] = field(default_factory=dict)  # dtype -> Tolerance (default exact)
    specials: tuple[float, ...] = ()  # float edge values (portable ones only, see the table)
    domain: tuple[float, float] = (-100.0, 100.0)
    f16_domain: tuple[float, float] | None = None


# Denormal inputs are left out everywhere (GPUs may flush them to zero); NaN only where the op
# is a sign-bit operation (neg, abs), since WGSL lets implementations assume no NaNs.
ROUNDING = (0.0, -0.0, 0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 1.0, -1.0, 2047.5, 8388607.5, 1e30, -1e30, INF, -INF)
TABLE = [
    Unary("neg", "negation (i32 wraps: -MIN = MIN)", ("i32", "f32", "f16"), _native(lambda x: -x),
          lambda x: -x, specials=(0.0, -0.0, 1.0, F32_MAX, -F32_TINY, INF, -INF, NAN)),
    Unary("abs", "absolute value (abs(i32::MIN) = i32::MIN)", ("i32", "f32", "f16"), _native(abs),
          np.abs, specials=(0.0, -0.0, -1.0, -F32_MAX, F32_TINY, INF, -INF, NAN)),
    Unary("sign", "-1, 0 or 1 (sign of ±0 is 0)", ("i32", "f32", "f16"), _native(lambda x: x.sign()),
          lambda x: np.sign(x) + x.dtype.type(0), specials=(0.0, -0.0, 3.0, -3.0, F32_MAX, -F32_TINY, INF, -INF)),
    Unary("not", "bitwise complement (logical not on bool)", ("u32", "i32", "bool"), _native(lambda x: ~x),
          lambda x: np.logical_not(x) if x.dtype == np.bool_ else ~x),
    Unary("floor", "round toward -inf", FLOATS, _native(lambda x: x.floor()), np.floor, specials=ROUNDING),
    Unary("ceil", "round toward +inf", FLOATS, _native(lambda x: x.ceil()), np.ceil, specials=ROUNDING),
    Unary("trunc", "round toward zero", FLOATS, _native(lambda x: x.trunc()), np.trunc, specials=ROUNDING),
    Unary("round", "round half to even", FLOATS, _native(lambda x: x.round()), np.rint, specials=ROUNDING),
    # x - floor(x), one rounding; tiny negative x (fract -> 1.0, which some GPUs clamp) are left out
    Unary("fract", "x - floor(x)", FLOATS, _native(lambda x: x.fract()), lambda x: x - np.floor(x),
          specials=(0.0, -0.0, 0.5, -0.25, 3.0, -3.0, 1234.5, -1234.75)),
    # WGSL: sqrt is inherited from inverseSqrt (2 ulp) and a division (2.5 ulp)
    Unary("sqrt", "square root", FLOATS, _in_f32(lambda b, x: x.sqrt()), _f64(np.sqrt),
          {"f32": ulp(4), "f16": ulp(1)}, (0.0, 1.0, 4.0, 2.0, 1e-30, F32_MAX, INF), (0.0, 1000.0)),
    Unary("rsqrt", "1 / sqrt(x)", FLOATS, _in_f32(lambda b, x: x.inverse_sqrt()), _f64(lambda v: 1 / np.sqrt(v)),
          {"f32": ulp(3), "f16": ulp(1)}, (1.0, 4.0, 0.25, 2.0, 1e-30, 1e30), (0.01, 1000.0)),
    # WGSL: exp/exp2 are within 3 + 2|x| ulp; the witnesses keep |x| <= 20 for finite results
    Unary("exp", "e^x", FLOATS, _in_f32(lambda b, x: x.exp()), _f64(np.exp),
          {"f32": rel(6e-6, F32_TINY), "f16": ulp(1)}, (0.0, 1.0, -1.0, 88.0, -87.0, -100.0, INF, -INF),
          (-20.0, 20.0), (-10.0, 10.0)),
    Unary("exp2", "2^x", FLOATS, _in_f32(lambda b, x: x.exp2()), _f64(np.exp2),
          {"f32": rel(6e-6, F32_TINY), "f16": ulp(1)}, (0.0, 1.0, 10.0, -10.0, 127.0, -126.0, -150.0, INF, -INF),
          (-20.0, 20.0), (-14.0, 15.0)),
    # WGSL: log/log2 are within 3 ulp outside [0.5, 2] and 2^-21 absolute inside
    Unary("log", "natural logarithm", FLOATS, _in_f32(lambda b, x: x.log()), _f64(np.log),
          {"f32": rel(4e-7, 5e-7), "f16": ulp(1)}, (1.0, 2.0, 0.5, 0.0, 1e-30, F32_MAX, INF), (0.01, 1000.0)),
    Unary("log2", "base-2 logarithm", FLOATS, _in_f32(lambda b, x: x.log2()), _f64(np.log2),
          {"f32": rel(4e-7, 5e-7), "f16": ulp(1)}, (1.0, 2.0, 1024.0, 0.5, 0.0, 1e-30, F32_MAX, INF), (0.01, 1000.0)),
    # absolute error budgets on |x| <= 10 (WGSL only promises 2^-11 on [-pi, pi]); inf -> NaN left out
    Unary("sin", "sine", FLOATS, _in_f32(lambda b, x: x.sin()), _f64(np.sin),
          {"f32": rel(0, 2e-6), "f16": rel(0, 1e-3)}, (0.0, -0.0, 1.0, -1.0, 3.14159265, 1.5707963), (-10.0, 10.0)),
    Unary("cos", "cosine", FLOATS, _in_f32(lambda b, x: x.cos()), _f64(np.cos),
          {"f32": rel(0, 2e-6), "f16": rel(0, 1e-3)}, (0.0, -0.0, 1.0, -1.0, 3.14159265, 1.5707963), (-10.0, 10.0)),
    Unary("tan", "tangent", FLOATS, _in_f32(lambda b, x: x.tan()), _f64(np.tan),
          {"f32": rel(1e-5, 2e-6), "f16": rel(2e-3, 1e-3)}, (0.0, -0.0, 1.0, -1.0, 1.5), (-1.5, 1.5)),
    # tanh's argument is clamped to [-10, 10] first (tanh(10) rounds to 1 in f32): GPUs that
    # compute tanh through exp overflow to NaN for large |x|
    Unary("tanh", "hyperbolic tangent", FLOATS, _in_f32(_tanh), _f64(np.tanh),
          {"f32": rel(1e-5, 1e-6), "f16": ulp(1)}, (0.0, -0.0, 1e-4, 0.5, -0.5, 5.0, 20.0, -20.0, INF, -INF),
          (-10.0, 10.0)),
]


def _tolerance(u: Unary) -> Callable[[dict[str, Any]], Tolerance]:
    return lambda params: u.tolerance.get(params["dtype"], EXACT)


def _build(u: Unary, items: int = 1) -> Callable[..., Pipeline]:
    def build(shape: Sequence[int], dtype: str) -> Pipeline:
        shape = tuple(int(d) for d in shape)
        body = lambda b, x: u.kernel(b, x, dtype)  # noqa: E731
        return K.pipeline(f"map_{u.name}_{dtype}", [shape], [dtype], dtype, body, names=("x",), items=items)

    return build


def _reference(u: Unary) -> Callable[..., list[np.ndarray]]:
    def reference(x: np.ndarray, *, shape: Sequence[int], dtype: str) -> list[np.ndarray]:
        x = np.asarray(x, dtype=K.NUMPY[dtype]).reshape(shape)
        with np.errstate(all="ignore"):
            return [np.asarray(u.reference(x), dtype=K.NUMPY[dtype]).reshape(shape)]

    return reference


def _witnesses(u: Unary, seed: int) -> Callable[[], list[Witness]]:
    def witnesses() -> list[Witness]:
        out = []
        for k, dt in enumerate(u.dtypes):
            lo, hi = (u.f16_domain or u.domain) if dt == "f16" else u.domain
            s = seed * 16 + k
            # odd length: the scalar path; specials first
            x = with_edges(dt, 1001, s, u.specials, lo, hi)
            out.append(Witness(f"{dt}-edges", {"shape": (1001,), "dtype": dt}, (x,)))
            # 2-D, a multiple of 4: the vec4 path over many workgroups
            x = with_edges(dt, 100_000, s + 8, u.specials, lo, hi).reshape(250, 400)
            out.append(Witness(f"{dt}-vec4", {"shape": (250, 400), "dtype": dt}, (x,)))
        dt = u.dtypes[0]
        lo, hi = u.domain
        out.append(Witness("size1", {"shape": (1,), "dtype": dt}, (with_edges(dt, 1, seed, (), lo, hi)[-1:],)))
        return out

    return witnesses


def _params_for(u: Unary) -> Callable[..., dict[str, Any]]:
    def params_for(x: np.ndarray) -> dict[str, Any]:
        return {"shape": K.shape_of(x), "dtype": K.dtype_name(f"map.{u.name}", x, u.dtypes)}

    return params_for


for _seed, _u in enumerate(TABLE):
    register(OpSpec(
        id=f"map.{_u.name}", category="elementwise",
        summary=f"{_u.summary}, elementwise over {'/'.join(_u.dtypes)}",
        build=_build(_u), reference=_reference(_u), witnesses=_witnesses(_u, 100 + _seed),
        params_for=_params_for(_u), tolerance=_u.tolerance.get("f32", EXACT),
        tolerance_for=_tolerance(_u), needs_for=K.needs_f16,
        variants=(K.coarse_variant(_build(_u, K.COARSE_ITEMS), lambda p: math.prod(p["shape"])),),
    ))
