"""Derivative rules of the elementwise functions: ``rule(g, out, *params) -> (gradient per parameter)``,
``g`` the gradient of the output, ``out`` the output, ``params`` the call's arguments in the function's
parameter order. Gradients may have the broadcast output's shape (the tape sums them back); a parameter
that is a Python scalar or a non-float array gets None. Every rule is vyre.array expressions, so the
backward pass is lazy graph that fuses (and is itself recorded by an enclosing tape: higher derivatives).
"""

from __future__ import annotations

import math
from typing import Any

import vyre.array as xp
from vyre.array._array import Array

Grads = tuple[Any, ...]
# vyre.array's float functions (sqrt, exp, log, sin, ...) are listed in its __all__ by a tuple mypy cannot
# follow: reached through an untyped alias of the same namespace (the recorded, public functions)
F: Any = xp


def _arr(v: Any) -> bool:
    return isinstance(v, Array)


def _unary(d: Any) -> Any:
    """A rule of a one-argument function from ``d(x, out)``, its derivative."""
    return lambda g, out, x: (g * d(x, out),)


def _log(v: Any) -> Any:
    return F.log(v) if _arr(v) else math.log(v) if v > 0 else float("nan")


def _pow(g: Array, out: Array, x1: Any, x2: Any) -> Grads:
    # exponent 0: d/dx1 is 0 (not 0 * x1**-1, NaN at 0); d/dx2 at x1 == 0 is 0 (out is 0 or 1 there), as torch
    g1 = g2 = None
    if _arr(x1):
        g1 = g * xp.where(x2 == 0, 0.0, x2 * x1 ** (x2 - 1)) if _arr(x2) else \
            (g * 0.0 if x2 == 0 else g * (x2 * x1 ** (x2 - 1)))
    if _arr(x2):
        g2 = g * xp.where(x1 == 0, 0.0, out * F.log(x1)) if _arr(x1) else \
            (g * 0.0 if x1 == 0 else g * out * _log(x1))
    return g1, g2


def _divide(g: Array, out: Array, x1: Any, x2: Any) -> Grads:
    return g / x2, -g * out / x2


def _maximum(g: Array, out: Array, x1: Any, x2: Any) -> Grads:
    # ties: the gradient is split equally between the two (torch's rule); NaN propagation not differentiated
    w = xp.where(x1 > x2, 1.0, xp.where(x1 == x2, 0.5, 0.0))
    return g * w, g * (1.0 - w)


def _minimum(g: Array, out: Array, x1: Any, x2: Any) -> Grads:
    w = xp.where(x1 < x2, 1.0, xp.where(x1 == x2, 0.5, 0.0))
    return g * w, g * (1.0 - w)


def _hypot(g: Array, out: Array, x1: Any, x2: Any) -> Grads:
    safe = xp.where(out == 0, 1.0, out)  # at (0, 0): 0 (a subgradient), not 0/0
    return g * x1 / safe, g * x2 / safe


def _atan2(g: Array, out: Array, x1: Any, x2: Any) -> Grads:
    r2 = x1 * x1 + x2 * x2
    r2 = xp.where(r2 == 0, 1.0, r2)
    return g * x2 / r2, -g * x1 / r2


def _logaddexp(g: Array, out: Array, x1: Any, x2: Any) -> Grads:
    return g * F.exp(x1 - out), g * F.exp(x2 - out)


def _copysign(g: Array, out: Array, x1: Any, x2: Any) -> Grads:
    # |x1| with x2's sign: d/dx1 = +-1 (whether the sign changed), d/dx2 = 0 (a step)
    flip = xp.signbit(x1) != xp.signbit(out) if _arr(x1) else None
    return (xp.where(flip, -g, g) if flip is not None else None), None


def _remainder(g: Array, out: Array, x1: Any, x2: Any) -> Grads:
    return g, -g * xp.floor_divide(x1, x2)


def _clip(g: Array, out: Array, x: Array, lo: Any, hi: Any) -> Grads:
    # x gets the gradient where min <= x <= max (at a bound too), min where x < min, max where x > max
    below = (x < lo) if lo is not None else None
    above = (x > hi) if hi is not None else None
    inside = below if above is None else above if below is None else xp.logical_or(below, above)
    gx = g if inside is None else xp.where(inside, 0.0, g)
    glo = xp.where(below, g, 0.0) if _arr(lo) and below is not None else None
    ghi = xp.where(above if below is None else xp.logical_and(above, xp.logical_not(below)), g, 0.0) \
        if _arr(hi) and above is not None else None
    return gx, glo, ghi


def _where(g: Array, out: Array, cond: Array, x1: Any, x2: Any) -> Grads:
    return None, xp.where(cond, g, 0.0), xp.where(cond, 0.0, g)


def _astype(g: Array, out: Array, x: Array, dtype: Any, copy: Any = None, device: Any = None) -> Grads:
    return (xp.astype(g, x.dtype),)  # float -> float: the gradient converted back; to int/bool: never recorded


def _asarray(g: Array, out: Array, obj: Any, *rest: Any) -> Grads:
    return (g,)


_LN2, _LN10 = math.log(2.0), math.log(10.0)

RULES: dict[str, Any] = {
    "add": lambda g, out, x1, x2: (g, g),
    "subtract": lambda g, out, x1, x2: (g, -g),
    "multiply": lambda g, out, x1, x2: (g * x2, g * x1),
    "divide": _divide,
    "negative": lambda g, out, x: (-g,),
    "positive": lambda g, out, x: (g,),
    "pow": _pow,
    "square": _unary(lambda x, out: 2.0 * x),
    "reciprocal": _unary(lambda x, out: -(out * out)),
    "sqrt": _unary(lambda x, out: 0.5 / out),
    "exp": _unary(lambda x, out: out),
    "expm1": _unary(lambda x, out: out + 1.0),
    "log": _unary(lambda x, out: 1.0 / x),
    "log1p": _unary(lambda x, out: 1.0 / (x + 1.0)),
    "log2": _unary(lambda x, out: 1.0 / (x * _LN2)),
    "log10": _unary(lambda x, out: 1.0 / (x * _LN10)),
    "sin": _unary(lambda x, out: F.cos(x)),
    "cos": _unary(lambda x, out: -F.sin(x)),
    "tan": _unary(lambda x, out: out * out + 1.0),
    "tanh": _unary(lambda x, out: 1.0 - out * out),
    "sinh": _unary(lambda x, out: F.cosh(x)),
    "cosh": _unary(lambda x, out: F.sinh(x)),
    "asin": _unary(lambda x, out: 1.0 / F.sqrt(1.0 - x * x)),
    "acos": _unary(lambda x, out: -1.0 / F.sqrt(1.0 - x * x)),
    "atan": _unary(lambda x, out: 1.0 / (x * x + 1.0)),
    "asinh": _unary(lambda x, out: 1.0 / F.sqrt(x * x + 1.0)),
    "acosh": _unary(lambda x, out: 1.0 / F.sqrt(x * x - 1.0)),
    "atanh": _unary(lambda x, out: 1.0 / (1.0 - x * x)),
    "abs": _unary(lambda x, out: xp.sign(x)),  # 0 at 0 (a subgradient)
    "atan2": _atan2,
    "maximum": _maximum,
    "minimum": _minimum,
    "hypot": _hypot,
    "logaddexp": _logaddexp,
    "copysign": _copysign,
    "remainder": _remainder,
    "nextafter": lambda g, out, x1, x2: (g, None),  # one ulp from x1: the identity almost everywhere
    "clip": _clip,
    "where": _where,
    "astype": _astype,
    "asarray": _asarray,
    "__copy__": lambda g, out, x: (g,),
    "__deepcopy__": lambda g, out, x, memo: (g, None),
}

# piecewise constant in their float inputs: zero gradient (not recorded)
ZERO = frozenset({"sign", "floor", "ceil", "trunc", "round", "floor_divide", "zeros_like", "ones_like",
                  "full_like", "empty_like", "stop_gradient"})

__all__ = ["RULES", "ZERO"]
