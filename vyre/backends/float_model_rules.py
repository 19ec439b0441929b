"""Error-bound rules of vyre's float model (docs/architecture.md, "Float model").

A value of the model interpreter (:mod:`vyre.backends.float_model_chunk`) is a :class:`Shadowed`:
the reference value ``v`` (exactly what the reference interpreter computes) plus, per lane and
component,

* ``e``: an absolute bound (float64) on how far a conforming GPU's value may be from ``v``
  (0 for integers and bools, which are exact);
* ``u``: "unspecified": the model promises nothing about the GPU's value (NaN or inf on the way,
  overflow possible within the bound, a division by a value that may be zero, a truncation or
  comparison whose outcome the bound leaves open, ...).

Each rule takes the operands' shadows and the reference result and returns the result's shadow.
The per-operation terms are WGSL's accuracy table (correctly rounded ``+ - *``, 2.5 ULP division,
``exp`` 3 + 2|x| ULP, ``log`` 2^-21 absolute near 1, ``sin``/``cos`` 2^-11 absolute inside
[-pi, pi] and nothing outside), widened by ``SLACK`` so that the reassociation and contraction
(fma) that Vulkan compilers apply stay inside the bound, plus the smallest normal number per
operation because GPUs may flush subnormals to zero.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

#: How many rounding errors of its operands' magnitudes each + - * may be off by: 1 for its own
#: rounding, the rest for the compiler reassociating or fusing it with its neighbours.
SLACK = 4.0

_F32 = np.dtype(np.float32)
_F16 = np.dtype(np.float16)
#: (unit roundoff, smallest normal, largest finite) per float type
FLOAT_INFO = {
    _F32: (2.0**-24, 2.0**-126, float(np.finfo(np.float32).max)),
    _F16: (2.0**-11, 2.0**-14, float(np.finfo(np.float16).max)),
}


class Shadowed:
    """A value of the model interpreter: reference value ``v``, bound ``e``, unspecified ``u``."""

    __slots__ = ("v", "e", "u")

    def __init__(self, v: np.ndarray, e: np.ndarray | float = 0.0, u: np.ndarray | bool = False):
        self.v = v
        # same shape as the value (a bound or flag is per lane and component)
        self.e = np.broadcast_to(np.asarray(e, dtype=np.float64), v.shape)
        self.u = np.broadcast_to(np.asarray(u, dtype=bool), v.shape)

    @property
    def is_float(self) -> bool:
        return self.v.dtype.kind == "f"

    @property
    def dtype(self) -> np.dtype:
        return self.v.dtype

    @property
    def shape(self) -> tuple[int, ...]:
        return self.v.shape

    def __repr__(self) -> str:  # pragma: no cover - debugging aid
        return f"Shadowed(v={self.v!r}, e={self.e!r}, u={self.u!r})"


def exact(v: np.ndarray) -> Shadowed:
    """A value known exactly (a literal, a built-in, an integer input): floats that are not
    finite are unspecified, subnormals may be flushed."""
    if v.dtype.kind != "f":
        return Shadowed(v)
    return finish(v, np.zeros(v.shape), np.zeros(v.shape, dtype=bool), extra_tiny=False)


def _f64(x: Shadowed | np.ndarray) -> np.ndarray:
    return (x.v if isinstance(x, Shadowed) else x).astype(np.float64)


def finish(r: np.ndarray, e: np.ndarray, u: np.ndarray, extra_tiny: bool = True) -> Shadowed:
    """The shadow of float result ``r``: the bound gets the flush-to-zero allowance; a result that
    is not finite, or that may overflow within its bound, is unspecified."""
    eps, tiny, fmax = FLOAT_INFO[r.dtype]
    rv = r.astype(np.float64)
    mag = np.abs(rv)
    sub = (mag < tiny) & (mag > 0)
    e = np.asarray(e, dtype=np.float64) + (tiny if extra_tiny else np.where(sub, tiny, 0.0))
    with np.errstate(all="ignore"):
        bad = ~np.isfinite(rv) | ~np.isfinite(e) | (mag + e >= fmax)
    return Shadowed(r, np.where(bad, 0.0, e), np.asarray(u, dtype=bool) | bad)


def _zero_sign(r: np.ndarray, e: np.ndarray) -> np.ndarray:
    """The bound of an otherwise exact result, at least the flush allowance where the result is a zero:
    drivers differ on its sign (min(-0.0, 0.0), sign(-0.0), ceil(-0.5)), which a bitcast would show."""
    return np.where(r == 0, np.maximum(e, _tiny(r)), e)


def _eps(r: np.ndarray) -> float:
    return FLOAT_INFO[r.dtype][0]


def _tiny(r: np.ndarray) -> float:
    return FLOAT_INFO[r.dtype][1]


def _ulps(r: np.ndarray, n: float | np.ndarray) -> np.ndarray:
    """``n`` ULPs of ``r`` (an ULP is at most twice the unit roundoff relative to the value)."""
    return 2.0 * _eps(r) * np.asarray(n) * np.abs(r.astype(np.float64))


# --------------------------------------------------------------------------- arithmetic
def add(a: Shadowed, b: Shadowed, r: np.ndarray) -> Shadowed:
    e = a.e + b.e + SLACK * _eps(r) * (np.abs(_f64(a)) + np.abs(_f64(b)))
    return finish(r, e, a.u | b.u)


def mul(a: Shadowed, b: Shadowed, r: np.ndarray) -> Shadowed:
    av, bv = np.abs(_f64(a)), np.abs(_f64(b))
    e = av * b.e + bv * a.e + a.e * b.e + SLACK * _eps(r) * av * bv
    return finish(r, e, a.u | b.u)


def div(a: Shadowed, b: Shadowed, r: np.ndarray) -> Shadowed:
    bv = np.abs(_f64(b))
    with np.errstate(all="ignore"):
        room = bv - b.e
        # WGSL's 2.5 ULP holds for |b| in [2^-126, 2^126]; a divisor that may be 0 is unspecified
        u = a.u | b.u | (room <= _tiny(r)) | (bv > 2.0**126)
        e = (a.e + np.abs(r.astype(np.float64)) * b.e) / np.where(u, 1.0, room)
        e = e + SLACK * _eps(r) * np.abs(r.astype(np.float64))
    return finish(r, e, u)


def rem(a: Shadowed, b: Shadowed, r: np.ndarray) -> Shadowed:
    """``a % b``, C's exact ``fmod`` (lowered exactly too): ``a - b * t`` with ``t`` the truncated
    exact quotient. Unspecified where the bounds let the quotient reach an integer (the result
    jumps by ``b`` there) or the divisor may be 0."""
    av, bv = _f64(a), _f64(b)
    with np.errstate(all="ignore"):
        q = av / bv
        room = np.abs(bv) - b.e
        u = a.u | b.u | (room <= _tiny(r))
        eq = (a.e + np.abs(q) * b.e) / np.where(u, 1.0, room)
        t = np.trunc(q)
        u = u | (np.trunc(q - eq) != t) | (np.trunc(q + eq) != t)
        e = a.e + np.abs(t) * b.e
    return finish(r, np.where(u, 0.0, e), u)


def fma(a: Shadowed, b: Shadowed, c: Shadowed, r: np.ndarray) -> Shadowed:
    av, bv = np.abs(_f64(a)), np.abs(_f64(b))
    e = av * b.e + bv * a.e + a.e * b.e + c.e + SLACK * _eps(r) * (av * bv + np.abs(_f64(c)))
    return finish(r, e, a.u | b.u | c.u)


def lipschitz(a: Shadowed, b: Shadowed, r: np.ndarray) -> Shadowed:
    """min / max: 1-Lipschitz in each operand."""
    return finish(r, _zero_sign(r, np.maximum(a.e, b.e)), a.u | b.u, extra_tiny=False)


def pow_(a: Shadowed, b: Shadowed, r: np.ndarray) -> Shadowed:
    """``pow(a, b)``, WGSL: inherited from ``exp2(b * log2(a))``; unspecified unless a > 0 surely."""
    av, bv = _f64(a), _f64(b)
    rv = np.abs(r.astype(np.float64))
    with np.errstate(all="ignore"):
        u = a.u | b.u | (av - a.e <= _tiny(r))
        la = np.log2(np.where(u, 1.0, av))
        # error of the exponent y = b*log2(a): from the operands' bounds, log2's own 2^-21, one rounding
        ey = (np.abs(bv) * a.e / np.where(u, 1.0, av - a.e) / math.log(2) + np.abs(la) * b.e
              + np.abs(bv) * (2.0**-21 + 3 * 2 * _eps(r) * np.abs(la)) + SLACK * _eps(r) * np.abs(bv * la))
        rel = np.expm1(ey * math.log(2)) + 2 * _eps(r) * (3 + 2 * np.abs(bv * la))
        e = rv * rel
    return finish(r, np.where(u, 0.0, e), u)


# --------------------------------------------------------------------------- unary functions
def neg_abs(a: Shadowed, r: np.ndarray) -> Shadowed:
    return finish(r, a.e, a.u, extra_tiny=False)


def monotone(fn: Callable[[np.ndarray], np.ndarray], a: Shadowed, r: np.ndarray, ulps: float | np.ndarray = 0.0,
             absolute: float | np.ndarray = 0.0, domain: tuple[float, float] = (-math.inf, math.inf)) -> Shadowed:
    """A monotone function on the interval [v - e, v + e] (which must lie in ``domain``): the bound is
    the larger deviation of ``fn`` (float64) at the interval's ends, plus the GPU's own accuracy
    (``ulps`` of the result and ``absolute``)."""
    av = _f64(a)
    rv = r.astype(np.float64)
    lo, hi = av - a.e, av + a.e
    u = a.u | (lo <= domain[0]) | (hi >= domain[1])
    with np.errstate(all="ignore"):
        flo = fn(np.where(u, 1.0, lo))
        fhi = fn(np.where(u, 1.0, hi))
        e = np.maximum(np.abs(flo - rv), np.abs(fhi - rv)) + _ulps(r, ulps) + absolute
    return finish(r, np.where(u, 0.0, e), u)


def sqrt(a: Shadowed, r: np.ndarray) -> Shadowed:
    # WGSL: inherited from 1 / inverseSqrt(x): 2 ULP then 2.5 ULP; near 0 the interval end is clamped
    clamped = Shadowed(a.v, a.e, a.u | (_f64(a) < 0))
    av = _f64(a)
    lo = np.maximum(av - a.e, 0.0)
    with np.errstate(all="ignore"):
        e = np.maximum(np.sqrt(av + a.e) - r.astype(np.float64), r.astype(np.float64) - np.sqrt(lo))
    return finish(r, e + _ulps(r, 5.0), clamped.u)


def inverse_sqrt(a: Shadowed, r: np.ndarray) -> Shadowed:
    return monotone(lambda x: 1.0 / np.sqrt(x), a, r, ulps=2.0, domain=(_tiny(r), math.inf))


def exp(a: Shadowed, r: np.ndarray, base2: bool) -> Shadowed:
    fn = np.exp2 if base2 else np.exp
    return monotone(fn, a, r, ulps=3.0 + 2.0 * np.abs(_f64(a)))


def log(a: Shadowed, r: np.ndarray, base2: bool) -> Shadowed:
    fn = np.log2 if base2 else np.log
    av = _f64(a)
    near_one = (av >= 0.5) & (av <= 2.0)
    return monotone(fn, a, r, ulps=np.where(near_one, 0.0, 3.0), absolute=np.where(near_one, 2.0**-21, 0.0),
                    domain=(_tiny(r), math.inf))


def sin_cos(a: Shadowed, r: np.ndarray) -> Shadowed:
    """WGSL promises 2^-11 absolute inside [-pi, pi] and nothing outside."""
    av = _f64(a)
    u = a.u | (np.abs(av) + a.e > math.pi)
    return finish(r, np.where(u, 0.0, np.minimum(a.e, 2.0) + 2.0**-11), u)


def tan(a: Shadowed, r: np.ndarray) -> Shadowed:
    """Inherited from sin / cos: unspecified outside [-pi, pi] or where cos may be ~0."""
    av = _f64(a)
    c = np.abs(np.cos(av))
    u = a.u | (np.abs(av) + a.e > math.pi) | (c <= 4 * 2.0**-11 + 2 * a.e)
    tmp = monotone(np.tan, Shadowed(a.v, a.e, u), r)
    with np.errstate(all="ignore"):
        extra = 2.0**-11 * (1 + np.abs(r.astype(np.float64))) / np.where(u, 1.0, c - 2.0**-11)
    return finish(r, np.where(tmp.u, 0.0, tmp.e + extra), tmp.u)


def tanh(a: Shadowed, r: np.ndarray) -> Shadowed:
    # inherited from (e^x - e^-x) / (e^x + e^-x): relative error of a few exp ULPs, and
    # the cancellation near 0 makes it absolute
    return monotone(np.tanh, a, r, ulps=8.0, absolute=2.0**-21)


def stepwise(fn: Callable[[np.ndarray], np.ndarray], a: Shadowed, r: np.ndarray) -> Shadowed:
    """floor / ceil / trunc / round: exact, unspecified where the interval reaches a step."""
    av = _f64(a)
    with np.errstate(all="ignore"):
        u = a.u | (fn(av - a.e) != fn(av + a.e))
    return finish(r, _zero_sign(r, np.zeros(r.shape)), u, extra_tiny=False)


def fract(a: Shadowed, r: np.ndarray) -> Shadowed:
    av = _f64(a)
    with np.errstate(all="ignore"):
        u = a.u | (np.floor(av - a.e) != np.floor(av + a.e))
    return finish(r, np.where(u, 0.0, a.e + _ulps(r, 1.0)), u)


def sign(a: Shadowed, r: np.ndarray) -> Shadowed:
    av = _f64(a)
    u = a.u | ((np.abs(av) <= a.e) & (a.e > 0))
    return finish(r, _zero_sign(r, np.zeros(r.shape)), u, extra_tiny=False)


# --------------------------------------------------------------------------- comparisons, selection
def compare(a: Shadowed, b: Shadowed) -> np.ndarray:
    """Unspecified mask of a comparison: float operands whose bounds overlap give no answer."""
    if not a.is_float:
        return np.asarray(a.u | b.u)
    d = np.abs(_f64(a) - _f64(b))
    ed = a.e + b.e
    with np.errstate(invalid="ignore"):
        return np.asarray(a.u | b.u | ((d <= ed) & (ed > 0)) | np.isnan(d))


def select(c: Shadowed, t: Shadowed, f: Shadowed, r: np.ndarray) -> Shadowed:
    cu = c.u
    if t.v.ndim == 2:
        cu = cu[:, None] if cu.ndim == 1 else cu
        cond = c.v[:, None]
    else:
        cond = c.v
    e = np.where(cond, t.e, f.e)
    u = np.where(cond, t.u, f.u)
    if cu.any():
        if t.is_float:
            rv = r.astype(np.float64)
            with np.errstate(invalid="ignore"):
                hull = np.maximum(np.abs(_f64(t) - rv) + t.e, np.abs(_f64(f) - rv) + f.e)
            e = np.where(cu, hull, e)
            u = u | (cu & (t.u | f.u))
        else:
            u = u | (cu & ~((t.v == f.v) & ~t.u & ~f.u))
    return Shadowed(r, e, u)


def logical(op_and: bool, a: Shadowed, b: Shadowed) -> np.ndarray:
    """Unspecified mask of ``and``/``or``: a known deciding operand decides."""
    decide = (~a.v if op_and else a.v), (~b.v if op_and else b.v)
    return np.asarray((a.u & b.u) | (a.u & ~(decide[1] & ~b.u)) | (b.u & ~(decide[0] & ~a.u)))


# --------------------------------------------------------------------------- conversions
def to_int(a: Shadowed, r: np.ndarray) -> Shadowed:
    """float -> int truncates and saturates: unspecified where the bound spans two results."""
    info = np.iinfo(r.dtype)
    av = _f64(a)
    with np.errstate(invalid="ignore"):
        lo = np.clip(np.trunc(av - a.e), info.min, info.max)
        hi = np.clip(np.trunc(av + a.e), info.min, info.max)
    return Shadowed(r, 0.0, a.u | (lo != hi) | np.isnan(av))


def to_bool(a: Shadowed, r: np.ndarray) -> Shadowed:
    if not a.is_float:
        return Shadowed(r, 0.0, a.u)
    return Shadowed(r, 0.0, a.u | ((np.abs(_f64(a)) <= a.e) & (a.e > 0)))


def to_float(a: Shadowed, r: np.ndarray) -> Shadowed:
    """int/bool -> float (within one ULP: WGSL lets the conversion round either way) or a float
    conversion (f16 <-> f32: the source bound plus one rounding)."""
    if a.v.dtype == np.bool_:
        return finish(r, np.zeros(r.shape), a.u, extra_tiny=False)
    return finish(r, a.e + _ulps(r, 1.0), a.u)


def bitcast(a: Shadowed, r: np.ndarray, same_lanes: bool) -> Shadowed:
    """Bits are only known for an exact value (a zero whose sign drivers may differ on has a bound,
    see :func:`_zero_sign`; arithmetic always has one)."""
    u = a.u
    if a.is_float:
        u = u | (a.e > 0)
    if not same_lanes:  # components regroup (e.g. vec2<f16> <-> u32): any unknown part spoils all
        flat = np.asarray(np.asarray(np.broadcast_to(u, a.v.shape)).reshape(a.v.shape[0], -1).any(axis=1))
        u = flat[:, None] if r.ndim == 2 else flat
    if r.dtype.kind == "f":
        return finish(r, np.zeros(r.shape), u, extra_tiny=False)
    return Shadowed(r, 0.0, u)


__all__ = [
    "Shadowed", "SLACK", "FLOAT_INFO", "exact", "finish", "add", "mul", "div", "rem", "fma", "lipschitz", "pow_",
    "neg_abs", "monotone", "sqrt", "inverse_sqrt", "exp", "log", "sin_cos", "tan", "tanh", "stepwise", "fract",
    "sign", "compare", "select", "logical", "to_int", "to_bool", "to_float", "bitcast",
]
