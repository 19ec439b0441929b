"""nn.gelu and nn.silu: elementwise activations on f32 and f16 (computed in f32).

nn.gelu is the tanh approximation (no erf):
``0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))``, evaluated through the identity
``0.5 (1 + tanh(u)) = 1 / (1 + exp(-2u))`` as ``x / (1 + exp(-2u))``: no tanh, and no NaN
from overflow (exp(-2u) = inf gives -0 for very negative x, x^3 = inf gives x for huge x).
nn.silu is ``x * sigmoid(x) = x / (1 + exp(-x))``. Both use the elementwise kernel (vec4
loads when the element count is a multiple of 4).

Tolerance: exp's error grows with its argument (WGSL: 3 + 2|x| ulp) and the negative tails
reach exp(88), so f32 results are held to a relative 3e-5; results below 1e-36 may differ
absolutely (exp overflows to inf where the exact value is a denormal or tiny). f16 results
are the f32 value rounded, so within 1 f16 ulp of the correctly rounded reference.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ...backends.schedule import Pipeline
from ...ir.builder import ProgramBuilder, Val
from ...ir.types import DataType
from .._ir import lanes_of
from ..registry import OpSpec, Witness, register, rel, ulp
from . import _kernel as K
from ._values import INF, with_edges

C0 = math.sqrt(2.0 / math.pi)
C1 = 0.044715
F32_TOL = rel(3e-5, 1e-36)
F16_TOL = ulp(1)
DTYPES = ("f32", "f16")


def _gelu(b: ProgramBuilder, x: Val) -> Val:
    u = x * (C0 + (C0 * C1) * (x * x))
    return x / (1.0 + (u * -2.0).exp())


def _silu(b: ProgramBuilder, x: Val) -> Val:
    return x / (1.0 + (-x).exp())


def _gelu_ref(x: np.ndarray) -> np.ndarray:
    u = C0 * (x + C1 * x**3)
    # 0.5 (1 + tanh(u)), written so that it does not cancel for very negative u
    e = np.exp(-2.0 * np.abs(u))
    s = np.where(u >= 0, 1.0 / (1.0 + e), e / (1.0 + e))
    out: np.ndarray = x * s
    return out


def _silu_ref(x: np.ndarray) -> np.ndarray:
    e = np.exp(-np.abs(x))
    out: np.ndarray = x * np.where(x >= 0, 1.0 / (1.0 + e), e / (1.0 + e))
    return out


def _register(name: str, summary: str, kernel: Callable[[ProgramBuilder, Val], Val],
              ref: Callable[[np.ndarray], np.ndarray], specials: Sequence[float], domain: tuple[float, float],
              seed: int) -> None:
    def make(shape: Sequence[int], dtype: str, items: int) -> Pipeline:
        def body(b: ProgramBuilder, x: Val) -> Val:
            if dtype == "f32":
                return kernel(b, x)
            lanes = lanes_of(x)
            wide = kernel(b, x.cast(DataType.vector(DataType.F32, lanes)))
            return wide.cast(DataType.vector(DataType.F16, lanes))

        return K.pipeline(f"nn_{name}_{dtype}", [tuple(int(d) for d in shape)], [dtype], dtype, body, names=("x",),
                          items=items)

    def build(shape: Sequence[int], dtype: str) -> Pipeline:
        return make(shape, dtype, 1)

    def coarse(shape: Sequence[int], dtype: str) -> Pipeline:
        return make(shape, dtype, K.COARSE_ITEMS)

    def reference(x: np.ndarray, *, shape: Sequence[int], dtype: str) -> list[np.ndarray]:
        x = np.asarray(x).reshape(shape)
        with np.errstate(all="ignore"):
            return [ref(x.astype(np.float64)).astype(K.NUMPY[dtype]).reshape(shape)]

    def witnesses() -> list[Witness]:
        out = []
        for k, dt in enumerate(DTYPES):
            lo, hi = domain
            out.append(Witness(f"{dt}-edges", {"shape": (1001,), "dtype": dt},
                               (with_edges(dt, 1001, seed + k, specials, lo, hi),)))
            x = with_edges(dt, 65536, seed + 4 + k, specials, lo, hi).reshape(256, 256)
            out.append(Witness(f"{dt}-vec4", {"shape": (256, 256), "dtype": dt}, (x,)))
        out.append(Witness("size1", {"shape": (1,), "dtype": "f32"}, (np.array([-0.75], np.float32),)))
        return out

    def params_for(x: np.ndarray) -> dict[str, Any]:
        return {"shape": K.shape_of(x), "dtype": K.dtype_name(f"nn.{name}", x, DTYPES)}

    register(OpSpec(
        id=f"nn.{name}", category="nn", summary=summary, build=build, reference=reference,
        witnesses=witnesses, params_for=params_for, tolerance=F32_TOL,
        tolerance_for=lambda p: F16_TOL if p["dtype"] == "f16" else F32_TOL, needs_for=K.needs_f16,
        variants=(K.coarse_variant(coarse, lambda p: math.prod(p["shape"])),),
    ))


_register("gelu", "GELU, tanh approximation: x / (1 + exp(-2 sqrt(2/pi) (x + 0.044715 x^3))), f32/f16",
          _gelu, _gelu_ref, (0.0, -0.0, 1.0, -1.0, 0.5, 3.0, -3.0, -5.0, -7.0, -9.0, -10.0, -20.0, 1e-20, 1e30,
                             -1e30, 60000.0, INF), (-8.0, 8.0), 300)
_register("silu", "SiLU (swish): x * sigmoid(x) = x / (1 + exp(-x)), f32/f16",
          _silu, _silu_ref, (0.0, -0.0, 1.0, -1.0, 0.5, 5.0, -5.0, -20.0, -80.0, -100.0, 80.0, 1e-20, 1e30,
                             60000.0, INF), (-20.0, 20.0), 310)
