"""``vyre.nn.init``: initialisers, each returning a new vyre array drawn from a ``vyre.random`` key (the
same key gives the same values on every backend). Fans follow PyTorch: for a shape ``(out, in, *k)``,
``fan_in = in * prod(k)`` and ``fan_out = out * prod(k)``; a 1-d shape has ``fan_in = fan_out = n``."""

from __future__ import annotations

import math
from typing import Any

import vyre.array as xp
import vyre.random as vr
from vyre.array import Array

from ..errors import InvalidArgumentError


def _shape(shape: Any) -> tuple[int, ...]:
    dims = (shape,) if isinstance(shape, int) and not isinstance(shape, bool) else tuple(shape)
    if any(isinstance(d, bool) or not isinstance(d, int) or d < 0 for d in dims):
        raise InvalidArgumentError(f"init: shape must be non-negative ints, not {shape!r}", fix="shape=(out, in)")
    return dims


def fans(shape: Any) -> tuple[int, int]:
    """``(fan_in, fan_out)`` of a weight shape."""
    dims = _shape(shape)
    if not dims:
        raise InvalidArgumentError("init: fans of a 0-d shape are undefined", fix="a 1-d or larger shape")
    if len(dims) == 1:
        return dims[0], dims[0]
    field = math.prod(dims[2:])
    return dims[1] * field, dims[0] * field


_GAINS = {"linear": 1.0, "sigmoid": 1.0, "tanh": 5.0 / 3.0, "relu": math.sqrt(2.0), "selu": 0.75}


def calculate_gain(nonlinearity: str, param: float | None = None) -> float:
    """PyTorch's recommended gains (``leaky_relu``: ``sqrt(2 / (1 + a^2))``, ``a`` default 0.01)."""
    if nonlinearity == "leaky_relu":
        a = 0.01 if param is None else float(param)
        return math.sqrt(2.0 / (1.0 + a * a))
    if nonlinearity in _GAINS:
        return _GAINS[nonlinearity]
    raise InvalidArgumentError(f"calculate_gain: unknown nonlinearity {nonlinearity!r}",
                               fix=f"one of {sorted([*_GAINS, 'leaky_relu'])}")


def _fan(shape: Any, mode: str) -> int:
    if mode not in ("fan_in", "fan_out"):
        raise InvalidArgumentError(f"init: mode must be 'fan_in' or 'fan_out', not {mode!r}", fix="mode='fan_in'")
    fi, fo = fans(shape)
    return fi if mode == "fan_in" else fo


def uniform(key: Array, shape: Any, low: float, high: float, dtype: Any = None) -> Array:
    """Uniform in [low, high)."""
    if not high > low:
        raise InvalidArgumentError(f"init.uniform: need low < high, got {low}, {high}", fix="low < high")
    return vr.uniform(key, _shape(shape), dtype, minval=float(low), maxval=float(high))


def normal(key: Array, shape: Any, std: float, mean: float = 0.0, dtype: Any = None) -> Array:
    return vr.normal(key, _shape(shape), dtype, mean=float(mean), stddev=float(std))


def xavier_uniform(key: Array, shape: Any, gain: float = 1.0, dtype: Any = None) -> Array:
    """U(-a, a) with ``a = gain * sqrt(6 / (fan_in + fan_out))`` (Glorot & Bengio, 2010)."""
    fi, fo = fans(shape)
    a = gain * math.sqrt(6.0 / max(1, fi + fo))
    return uniform(key, shape, -a, a, dtype) if a > 0 else zeros(shape, dtype, device=key.device)


def xavier_normal(key: Array, shape: Any, gain: float = 1.0, dtype: Any = None) -> Array:
    """N(0, std^2) with ``std = gain * sqrt(2 / (fan_in + fan_out))``."""
    fi, fo = fans(shape)
    return normal(key, shape, gain * math.sqrt(2.0 / max(1, fi + fo)), dtype=dtype)


def kaiming_uniform(key: Array, shape: Any, a: float = 0.0, mode: str = "fan_in",
                    nonlinearity: str = "leaky_relu", dtype: Any = None) -> Array:
    """U(-b, b) with ``b = gain * sqrt(3 / fan)`` (He et al., 2015), ``gain = calculate_gain(nonlinearity,
    a)``. ``a = sqrt(5)`` gives PyTorch's default Linear/Conv2d weight, U(-1/sqrt(fan_in), 1/sqrt(fan_in))."""
    b = calculate_gain(nonlinearity, a) * math.sqrt(3.0 / max(1, _fan(shape, mode)))
    return uniform(key, shape, -b, b, dtype)


def kaiming_normal(key: Array, shape: Any, a: float = 0.0, mode: str = "fan_in",
                   nonlinearity: str = "leaky_relu", dtype: Any = None) -> Array:
    """N(0, std^2) with ``std = gain / sqrt(fan)``."""
    return normal(key, shape, calculate_gain(nonlinearity, a) / math.sqrt(max(1, _fan(shape, mode))), dtype=dtype)


def zeros(shape: Any, dtype: Any = None, *, device: Any = None) -> Array:
    return xp.zeros(_shape(shape), dtype=dtype or xp.float32, device=device)


def ones(shape: Any, dtype: Any = None, *, device: Any = None) -> Array:
    return xp.ones(_shape(shape), dtype=dtype or xp.float32, device=device)


__all__ = ["fans", "calculate_gain", "uniform", "normal", "xavier_uniform", "xavier_normal", "kaiming_uniform",
           "kaiming_normal", "zeros", "ones"]
