"""zip.<op>: binary elementwise ops with numpy-style broadcasting of the two inputs.

Both inputs have one dtype (u32/i32/f32/f16); arithmetic and bit ops return it, comparisons
return bool. Broadcasting follows numpy (any ranks; same shape, a scalar or size-1 operand,
rows, columns, N-d); the kernel (see _kernel) merges contiguous dims, bakes the remaining
extents and strides into the program and uses vec4 loads/stores when the innermost output
dim is a multiple of 4. Integer semantics are vyre's (docs/architecture.md): wrapping
arithmetic, x / 0 = x, x % 0 = 0, i32::MIN / -1 = i32::MIN, shift amounts masked to 5 bits
(the amount is the rhs reinterpreted as u32).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ...backends.schedule import Pipeline
from ...errors import DispatchError
from ...ir.builder import ProgramBuilder, Val
from ...ir.types import DataType
from .._ir import lanes_of
from ..registry import EXACT, OpSpec, Tolerance, Witness, register, rel, ulp
from . import _kernel as K
from ._values import F32_MAX, INF, random
from ._values import edges as edge_values

INTS = ("u32", "i32")
NUMERIC = ("u32", "i32", "f32", "f16")
FLOATS = ("f32", "f16")


# ----------------------------------------------------------------------------- references
def _int_div(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    if x.dtype == np.uint32:
        return np.where(y == 0, x, x // np.where(y == 0, np.uint32(1), y))
    a, d = x.astype(np.int64), y.astype(np.int64)
    q = np.abs(a) // np.where(d == 0, 1, np.abs(d))
    q = np.where((a < 0) != (d < 0), -q, q)
    return np.where(d == 0, a, q).astype(np.int32)  # MIN / -1 = 2^31 wraps to MIN


def _int_rem(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    if x.dtype == np.uint32:
        return np.where(y == 0, np.uint32(0), x % np.where(y == 0, np.uint32(1), y))
    a, d = x.astype(np.int64), y.astype(np.int64)
    return np.where(d == 0, 0, np.fmod(a, np.where(d == 0, 1, d))).astype(np.int32)  # sign of the dividend


def _div(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    return _int_div(x, y) if x.dtype.kind in "iu" else x / y


def _rem(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    if x.dtype.kind in "iu":
        return _int_rem(x, y)
    out: np.ndarray = x - y * np.trunc(x / y)  # WGSL's float %, each step rounded in the operand type
    return out


def _shift_amount(y: np.ndarray) -> np.ndarray:
    out: np.ndarray = y.astype(np.uint32) & np.uint32(31)  # i32 -> u32 keeps the bits
    return out


def _shl(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    out: np.ndarray = (x.astype(np.uint32) << _shift_amount(y)).astype(x.dtype)
    return out


def _shr(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    s = _shift_amount(y)
    out: np.ndarray = x >> s.astype(np.int32) if x.dtype == np.int32 else x >> s
    return out


def _pow(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    out: np.ndarray = np.power(x.astype(np.float64), y.astype(np.float64)).astype(x.dtype)
    return out


# ----------------------------------------------------------------------------- kernels
def _shift_kernel(op: str) -> Callable[[ProgramBuilder, Val, Val, str], Val]:
    def kernel(b: ProgramBuilder, x: Val, y: Val, dtype: str) -> Val:
        amount = y if dtype == "u32" else y.cast(DataType.vector(DataType.U32, lanes_of(y)))
        return x << amount if op == "shl" else x >> amount

    return kernel


def _pow_kernel(b: ProgramBuilder, x: Val, y: Val, dtype: str) -> Val:
    if dtype == "f16":
        lanes = lanes_of(x)
        wide = DataType.vector(DataType.F32, lanes)
        return x.cast(wide).pow(y.cast(wide)).cast(DataType.vector(DataType.F16, lanes))
    return x.pow(y)


# ----------------------------------------------------------------------------- inputs
def _nonzero(y: np.ndarray) -> np.ndarray:
    return np.where((y == 0) | np.isinf(y), y.dtype.type(1.5), y)


def _fix_div(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    # WGSL's division is accurate for |y| in [2^-126, 2^126]: no zero or infinite divisors
    return x, _nonzero(y)


def _fix_rem(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    # x - y * trunc(x / y) is only portable where x / y is not within the division's error of
    # an integer (an approximate quotient flips trunc): same-shape pairs with a quotient near
    # an integer or too large (and every broadcast pair) get a power-of-two divisor, which
    # divides exactly.
    x = np.where(np.isinf(x), x.dtype.type(1.25), x)
    y = _nonzero(y)
    pow2 = (np.sign(y) * np.exp2(np.clip(np.round(np.log2(np.abs(y.astype(np.float64)))), -2, 5))).astype(y.dtype)
    if x.shape != y.shape:
        return x, pow2
    q = np.abs(x.astype(np.float64) / y.astype(np.float64))
    frac = q - np.floor(q)
    # the quotient's own error (2.5 ulp) must stay well inside the 0.01 margin: |q| < 4 in f16
    limit = 4.0 if x.dtype == np.float16 else 1e4
    bad = ((frac < 0.01) | (frac > 0.99) | (q > limit)) & (x != 0)
    return x, np.where(bad, pow2, y)


def _fix_pow(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    # pow(x < 0, y) and pow(0, y <= 0) (exp2(0 * -inf)) are not portable
    x = np.abs(x)
    if x.shape == y.shape:
        y = np.where(x == 0, np.abs(y) + y.dtype.type(0.5), y)
    return x, y


@dataclass(frozen=True)
class Binary:
    name: str
    summary: str
    dtypes: tuple[str, ...]
    kernel: Callable[[ProgramBuilder, Val, Val, str], Val]  # (b, x, y, dtype) -> value; vec4 unless ``compare``
    reference: Callable[..., Any]  # numpy (x, y) -> result (a ufunc or a function)
    compare: bool = False  # bool result, computed per lane
    tolerance: dict[str, Tolerance] = field(default_factory=dict)  # dtype -> Tolerance (default exact)
    specials: tuple[float, ...] = ()  # float values whose cross product makes the edge witness
    f16_specials: tuple[float, ...] | None = None
    domain: tuple[float, float] = (-100.0, 100.0)
    rhs_domain: tuple[float, float] | None = None
    # (x, y) -> (x, y) for float inputs: keep them portable
    fix: Callable[[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]] | None = None


# No NaN inputs (WGSL lets implementations assume there are none) and no denormals (GPUs
# may flush them); infinities appear where IEEE hardware behaviour is all WGSL can do.
ARITH = (0.0, -0.0, 1.0, -1.0, 0.5, 2.5, -3.75, 7.0, 1e-30, 1e30, -1e30, F32_MAX, INF, -INF)
ARITH16 = (0.0, -0.0, 1.0, -1.0, 0.5, 2.5, -3.75, 7.0, 0.01, 60000.0, -60000.0, INF, -INF)
DIV = (0.0, -0.0, 1.0, -1.0, 0.5, 2.5, -3.75, 7.0, 3.0, 1e-30, 1e30, -1e30, INF, -INF)
DIV16 = (0.0, -0.0, 1.0, -1.0, 0.5, 2.5, -3.75, 7.0, 3.0, 100.0, 1000.0, INF, -INF)  # no denormal quotients
REM = (0.0, -0.0, 1.0, -1.0, 0.5, 2.5, -3.75, 7.25, -7.25, 3.0, 100.0)
CMP = (0.0, -0.0, 1.0, -1.0, 0.5, 2.5, -3.75, 1e30, -1e30, INF, -INF)
CMP16 = (0.0, -0.0, 1.0, -1.0, 0.5, 2.5, -3.75, 60000.0, INF, -INF)
POW = (0.0, 1.0, 2.0, 0.5, 3.0, 10.0)



def _fn(fn: Callable[[Val, Val], Val]) -> Callable[[ProgramBuilder, Val, Val, str], Val]:
    return lambda b, x, y, dtype: fn(x, y)


TABLE = [
    Binary("add", "x + y (integers wrap)", NUMERIC, _fn(lambda x, y: x + y), np.add,
           specials=ARITH, f16_specials=ARITH16),
    Binary("sub", "x - y (integers wrap)", NUMERIC, _fn(lambda x, y: x - y), np.subtract,
           specials=ARITH, f16_specials=ARITH16),
    Binary("mul", "x * y (integers wrap)", NUMERIC, _fn(lambda x, y: x * y), np.multiply,
           specials=ARITH, f16_specials=ARITH16),
    # WGSL: float division within 2.5 ulp (NVIDIA divides through a reciprocal)
    Binary("div", "x / y (integers truncate; x / 0 = x; i32::MIN / -1 = i32::MIN)", NUMERIC,
           _fn(lambda x, y: x / y), _div, tolerance={"f32": ulp(3), "f16": ulp(3)},
           specials=DIV, f16_specials=DIV16, fix=_fix_div),
    # the float remainder's last step may be contracted into an fma: up to an ulp of |x| <= 100
    Binary("rem", "x % y (sign of x; integers: x % 0 = 0; floats: x - y * trunc(x / y))", NUMERIC,
           _fn(lambda x, y: x % y), _rem, tolerance={"f32": rel(1e-5, 2e-5), "f16": rel(1e-3, 0.07)},
           specials=REM, domain=(-100.0, 100.0), fix=_fix_rem),
    Binary("min", "minimum", NUMERIC, _fn(lambda x, y: x.min(y)), np.minimum, specials=CMP, f16_specials=CMP16),
    Binary("max", "maximum", NUMERIC, _fn(lambda x, y: x.max(y)), np.maximum, specials=CMP, f16_specials=CMP16),
    # WGSL: pow is exp2(y * log2(x)); with |y log2 x| <= ~10 here that is a few ulp
    Binary("pow", "x ** y for x >= 0", FLOATS, _pow_kernel, _pow, tolerance={"f32": rel(4e-6, 1e-30), "f16": ulp(1)},
           specials=POW, domain=(0.1, 10.0), rhs_domain=(-3.0, 3.0), fix=_fix_pow),
    Binary("bit_and", "bitwise and", INTS, _fn(lambda x, y: x & y), np.bitwise_and),
    Binary("bit_or", "bitwise or", INTS, _fn(lambda x, y: x | y), np.bitwise_or),
    Binary("bit_xor", "bitwise xor", INTS, _fn(lambda x, y: x ^ y), np.bitwise_xor),
    Binary("shl", "x << (y & 31)", INTS, _shift_kernel("shl"), _shl),
    Binary("shr", "x >> (y & 31) (arithmetic on i32)", INTS, _shift_kernel("shr"), _shr),
    Binary("eq", "x == y -> bool", NUMERIC, _fn(lambda x, y: x == y), np.equal, True, specials=CMP, f16_specials=CMP16),
    Binary("ne", "x != y -> bool", NUMERIC, _fn(lambda x, y: x != y), np.not_equal, True, specials=CMP,
           f16_specials=CMP16),
    Binary("lt", "x < y -> bool", NUMERIC, _fn(lambda x, y: x < y), np.less, True, specials=CMP, f16_specials=CMP16),
    Binary("le", "x <= y -> bool", NUMERIC, _fn(lambda x, y: x <= y), np.less_equal, True, specials=CMP,
           f16_specials=CMP16),
    Binary("gt", "x > y -> bool", NUMERIC, _fn(lambda x, y: x > y), np.greater, True, specials=CMP,
           f16_specials=CMP16),
    Binary("ge", "x >= y -> bool", NUMERIC, _fn(lambda x, y: x >= y), np.greater_equal, True, specials=CMP,
           f16_specials=CMP16),
]

# (name, shape of x, shape of y, on every dtype): all run on f32 (or the op's first dtype)
SHAPES = [
    ("vec4", (250, 400), (250, 400), True),  # same shape, vec4 path, many workgroups
    ("bcast4d", (2, 3, 1, 8), (3, 5, 1), True),  # 4-d: x vec4 along the last dim, y one value per vec4
    ("scalar", (1001,), (), False),  # 0-d rhs, odd length: scalar path
    ("scalar-lhs", (1,), (64, 100), False),  # size-1 lhs splatted into vec4
    ("rows", (64, 100), (100,), False),  # a row vector against a matrix, vec4 path
    ("cols", (5, 1, 7), (5, 3, 1), False),  # general broadcasting, scalar path
    ("size1", (1,), (1,), False),
]


def _tolerance(op: Binary) -> Callable[[dict[str, Any]], Tolerance]:
    return lambda params: op.tolerance.get(params["dtype"], EXACT)


def _build(op: Binary, items: int = 1) -> Callable[..., Pipeline]:
    def build(shape_x: Sequence[int], shape_y: Sequence[int], dtype: str) -> Pipeline:
        shapes = [tuple(int(d) for d in shape_x), tuple(int(d) for d in shape_y)]
        out = "bool" if op.compare else dtype
        body = lambda b, x, y: op.kernel(b, x, y, dtype)  # noqa: E731
        return K.pipeline(f"zip_{op.name}_{dtype}", shapes, [dtype, dtype], out, body,
                          vector_body=not op.compare, names=("x", "y"), items=items)

    return build


def _out_size(params: dict[str, Any]) -> int:
    return math.prod(np.broadcast_shapes(tuple(params["shape_x"]), tuple(params["shape_y"])))


def _reference(op: Binary) -> Callable[..., list[np.ndarray]]:
    def reference(x: np.ndarray, y: np.ndarray, *, shape_x: Sequence[int], shape_y: Sequence[int],
                  dtype: str) -> list[np.ndarray]:
        t = K.NUMPY[dtype]
        x = np.asarray(x, dtype=t).reshape(shape_x)
        y = np.asarray(y, dtype=t).reshape(shape_y)
        out = np.bool_ if op.compare else t
        with np.errstate(all="ignore"):
            res = op.reference(x, y)
        return [np.asarray(res, dtype=out).reshape(np.broadcast_shapes(x.shape, y.shape))]

    return reference


def _edges(op: Binary, dt: str) -> np.ndarray:
    return edge_values(dt, op.f16_specials if dt == "f16" and op.f16_specials is not None else op.specials)


def _inputs(op: Binary, dt: str, shape_x: tuple[int, ...], shape_y: tuple[int, ...], seed: int,
            edges: bool) -> tuple[np.ndarray, np.ndarray]:
    nx, ny = int(np.prod(shape_x)), int(np.prod(shape_y))
    lo, hi = op.domain
    rlo, rhi = op.rhs_domain or op.domain
    x: np.ndarray
    y: np.ndarray
    if edges:
        g = _edges(op, dt)
        gx, gy = (a.ravel() for a in np.meshgrid(g, g))
        x = np.concatenate([gx, random(dt, nx - gx.size, seed, lo, hi)]).astype(K.NUMPY[dt])
        y = np.concatenate([gy, random(dt, ny - gy.size, seed + 1, rlo, rhi)]).astype(K.NUMPY[dt])
    else:
        x = random(dt, nx, seed, lo, hi)
        y = random(dt, ny, seed + 1, rlo, rhi)
    x, y = x.reshape(shape_x), y.reshape(shape_y)
    if op.fix is not None and dt in FLOATS:
        x, y = op.fix(x, y)
    return x.astype(K.NUMPY[dt]), y.astype(K.NUMPY[dt])


def _witnesses(op: Binary, seed: int) -> Callable[[], list[Witness]]:
    def witnesses() -> list[Witness]:
        out = []
        primary = "f32" if "f32" in op.dtypes else op.dtypes[0]
        for k, dt in enumerate(op.dtypes):
            s = seed * 64 + k * 8
            # the cross product of the edge values (odd length: scalar path), then random pairs
            n = max(1001, _edges(op, dt).size ** 2 + 1) | 1
            x, y = _inputs(op, dt, (n,), (n,), s, edges=True)
            out.append(Witness(f"{dt}-edges", {"shape_x": (n,), "shape_y": (n,), "dtype": dt}, (x, y)))
            for j, (name, sx, sy, every) in enumerate(SHAPES):
                if dt == primary or every:
                    x, y = _inputs(op, dt, sx, sy, s + j + 1, edges=False)
                    params = {"shape_x": sx, "shape_y": sy, "dtype": dt}
                    out.append(Witness(f"{dt}-{name}", params, (x, y)))
        return out

    return witnesses


def _params_for(op: Binary) -> Callable[..., dict[str, Any]]:
    def params_for(x: np.ndarray, y: np.ndarray) -> dict[str, Any]:
        oid = f"zip.{op.name}"
        dt = K.dtype_name(oid, x, op.dtypes)
        if y.dtype != x.dtype:
            raise DispatchError(f"{oid} takes two arrays of one dtype, got {x.dtype} and {y.dtype}",
                                fix=f"convert one of them, e.g. y.astype(np.{x.dtype.name})")
        try:
            np.broadcast_shapes(x.shape, y.shape)
        except ValueError:
            raise DispatchError(f"{oid}: shapes {x.shape} and {y.shape} do not broadcast",
                                fix="give dims that are equal or 1 (numpy broadcasting rules)") from None
        return {"shape_x": K.shape_of(x), "shape_y": K.shape_of(y), "dtype": dt}

    return params_for


for _seed, _op in enumerate(TABLE):
    register(OpSpec(
        id=f"zip.{_op.name}", category="elementwise",
        summary=f"{_op.summary}, numpy broadcasting, over {'/'.join(_op.dtypes)}",
        build=_build(_op), reference=_reference(_op), witnesses=_witnesses(_op, 200 + _seed),
        params_for=_params_for(_op), tolerance=_op.tolerance.get("f32", EXACT),
        tolerance_for=_tolerance(_op), needs_for=K.needs_f16,
        variants=(K.coarse_variant(_build(_op, K.COARSE_ITEMS), _out_size),),
    ))
