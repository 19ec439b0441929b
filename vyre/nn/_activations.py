"""Activations, softmax and the losses of ``vyre.nn.functional``, written with vyre.array functions only:
they fuse into whatever reads them and vyre.autograd differentiates them through its rule table."""

from __future__ import annotations

import math
from typing import Any

import vyre.array as xp
from vyre.array import Array

from ..amp import _policy as _amp
from ..errors import ArgumentTypeError, InvalidArgumentError

_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)
_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)

# vyre.array's float functions (exp, log, sqrt, tanh) come from a tuple in its __all__ that mypy cannot
# follow: reached through an untyped alias of the namespace (autograd's rules do the same)
F: Any = xp


def float_array(x: Any, name: str, fn: str) -> Array:
    """``x`` if it is a floating-point vyre array, else an ArgumentTypeError (before any work)."""
    if not isinstance(x, Array):
        raise ArgumentTypeError(f"{fn}: {name} must be a vyre array, not {type(x).__name__}",
                                fix="convert with vyre.array.asarray")
    if not xp.isdtype(x.dtype, "real floating"):
        raise ArgumentTypeError(f"{fn}: {name} must be floating point, not {x.dtype}",
                                fix="astype(x, vyre.array.float32)")
    return x


def relu(x: Array) -> Array:
    """``max(x, 0)``; its derivative at 0 is 0 (a ``where``, not ``maximum``, whose tie rule splits)."""
    x = float_array(x, "x", "relu")
    return xp.where(x > 0.0, x, 0.0)


def _erf(x: Array) -> Array:
    # The namespace has no erf: Abramowitz & Stegun 7.1.26 (|error| <= 1.5e-7) for |x| >= 0.5, where its
    # 1 - poly * exp(-x^2) does not cancel; below, the Maclaurin series to x^13 (truncation < 2e-8), which
    # keeps the relative accuracy near 0. Both are odd; exp(-x^2) underflows to 0 where erf is +-1 anyway.
    a = xp.abs(x)
    t = 1.0 / (1.0 + 0.3275911 * a)
    poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))))
    tail = 1.0 - poly * F.exp(-(a * a))
    # the series on 0 where it is not taken: its x^13 overflows float16 from |x| ~ 4.4, and where's gradient
    # (0 for the unused branch) times that inf is NaN (mixed-precision training found it)
    xs = xp.where(a < 0.5, x, 0.0)
    s = xs * xs
    series = xs * (_TWO_OVER_SQRT_PI * (1.0 + s * (-1.0 / 3 + s * (1.0 / 10 + s * (-1.0 / 42 + s * (
        1.0 / 216 + s * (-1.0 / 1320 + s * (1.0 / 9360))))))))
    return xp.where(a < 0.5, series, xp.where(x < 0.0, -tail, tail))


def erf(x: Array) -> Array:
    """The error function to 3e-7 absolute (array ops: vyre.array has no ``erf``; see ``_erf``)."""
    return _erf(float_array(x, "x", "erf"))


def gelu(x: Array, approximate: str = "none") -> Array:
    """GELU, ``x * Phi(x)``: ``approximate="none"`` through :func:`erf` (3e-7), ``"tanh"`` the tanh form
    ``0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))`` (PyTorch's two modes)."""
    x = float_array(x, "x", "gelu")
    if approximate == "none":
        return 0.5 * x * (1.0 + _erf(x * (1.0 / math.sqrt(2.0))))
    if approximate == "tanh":
        t: Array = F.tanh(_SQRT_2_OVER_PI * (x + 0.044715 * (x * x * x)))
        return 0.5 * x * (1.0 + t)
    raise InvalidArgumentError(f"gelu: approximate must be 'none' or 'tanh', not {approximate!r}",
                               fix="approximate='tanh'")


def sigmoid(x: Array) -> Array:
    """``1 / (1 + exp(-x))`` from ``z = exp(-|x|)`` in (0, 1]: no overflow, and no inf times 0 in the
    gradient (which ``1 / (1 + exp(-x))`` has at x = -100)."""
    x = float_array(x, "x", "sigmoid")
    z = F.exp(-xp.abs(x))
    return xp.where(x >= 0.0, 1.0 / (1.0 + z), z / (1.0 + z))


def silu(x: Array) -> Array:
    """``x * sigmoid(x)`` (swish)."""
    return float_array(x, "x", "silu") * sigmoid(x)


def tanh(x: Array) -> Array:
    out: Array = F.tanh(float_array(x, "x", "tanh"))
    return out


def _axis(x: Array, axis: int, fn: str) -> int:
    if isinstance(axis, bool) or not isinstance(axis, int):
        raise ArgumentTypeError(f"{fn}: axis must be an int, not {type(axis).__name__}", fix="axis=-1")
    if not -x.ndim <= axis < x.ndim or x.ndim == 0:
        raise InvalidArgumentError(f"{fn}: axis {axis} out of range for {x.ndim}-d input", fix="axis=-1")
    return axis % x.ndim


def softmax(x: Array, axis: int = -1) -> Array:
    """``exp(x - max) / sum(exp(x - max))`` along ``axis`` (shifted by the max: no overflow)."""
    (x,) = _amp.cast("softmax", float_array(x, "x", "softmax"))  # float32 under vyre.amp.autocast
    ax = _axis(x, axis, "softmax")
    e: Array = F.exp(x - xp.max(x, axis=ax, keepdims=True))
    return e / xp.sum(e, axis=ax, keepdims=True)


def log_softmax(x: Array, axis: int = -1) -> Array:
    """``s - log(sum(exp(s)))`` for ``s = x - max(x)`` along ``axis``: finite for any finite input (the
    max's gradient cancels: d/dm of the result is -1 + sum(softmax) = 0)."""
    (x,) = _amp.cast("log_softmax", float_array(x, "x", "log_softmax"))  # float32 under vyre.amp.autocast
    ax = _axis(x, axis, "log_softmax")
    s = x - xp.max(x, axis=ax, keepdims=True)
    lse: Array = F.log(xp.sum(F.exp(s), axis=ax, keepdims=True))
    return s - lse


def _reduce(loss: Array, reduction: str, fn: str) -> Array:
    if reduction == "mean":
        return xp.mean(loss)
    if reduction == "sum":
        return xp.sum(loss)
    if reduction == "none":
        return loss
    raise InvalidArgumentError(f"{fn}: reduction must be 'mean', 'sum' or 'none', not {reduction!r}",
                               fix="reduction='mean'")


def _labels(logits: Array, labels: Any, fn: str) -> tuple[Array, int]:
    logits = float_array(logits, "input", fn)
    if logits.ndim != 2:
        raise InvalidArgumentError(f"{fn}: input must be (batch, classes), not shape {logits.shape}",
                                   fix="reshape to (N, C)")
    if not isinstance(labels, Array) or not xp.isdtype(labels.dtype, "integral"):
        raise ArgumentTypeError(f"{fn}: target must be an integer vyre array of class indices, not "
                                f"{getattr(labels, 'dtype', type(labels).__name__)}",
                                fix="vyre.array.asarray(labels, dtype=vyre.array.int32)")
    if labels.shape != (logits.shape[0],):
        raise InvalidArgumentError(f"{fn}: target shape {labels.shape} does not match input {logits.shape}",
                                   fix="one class index per row")
    return logits, logits.shape[1]


def _target(labels: Array, c: int, on: float, off: float) -> Array:
    # the (smoothed) one-hot target as one fused select: no gather kernel, nothing to scatter back
    classes = xp.arange(c, dtype=labels.dtype, device=labels.device)
    return xp.where(xp.expand_dims(labels, axis=1) == classes, on, off)


def nll_loss(log_probs: Array, target: Array, reduction: str = "mean") -> Array:
    """``-log_probs[i, target[i]]``, averaged (``"mean"``), summed or per row (``"none"``). Targets are
    not range-checked (that would download them): a label outside [0, C) selects nothing and gives 0."""
    lp, c = _labels(log_probs, target, "nll_loss")
    (lp,) = _amp.cast("nll_loss", lp)  # float32 under vyre.amp.autocast
    _reduce_check(reduction, "nll_loss")
    return _reduce(-xp.sum(_target(target, c, 1.0, 0.0) * lp, axis=1), reduction, "nll_loss")


def cross_entropy(input: Array, target: Array, label_smoothing: float = 0.0,  # noqa: A002 - PyTorch's name
                  reduction: str = "mean") -> Array:
    """``nll_loss(log_softmax(input), target)`` with PyTorch's label smoothing ``eps``: the target is
    ``(1 - eps)`` on the label plus ``eps / C`` on every class."""
    logits, c = _labels(input, target, "cross_entropy")
    (logits,) = _amp.cast("cross_entropy", logits)  # float32 under vyre.amp.autocast
    if isinstance(label_smoothing, bool) or not isinstance(label_smoothing, int | float) \
            or not 0.0 <= label_smoothing <= 1.0:
        raise InvalidArgumentError(f"cross_entropy: label_smoothing must be in [0, 1], not {label_smoothing!r}",
                                   fix="label_smoothing=0.1")
    _reduce_check(reduction, "cross_entropy")
    eps = float(label_smoothing)
    t = _target(target, c, 1.0 - eps + eps / c, eps / c)
    return _reduce(-xp.sum(t * log_softmax(logits, axis=1), axis=1), reduction, "cross_entropy")


def mse_loss(input: Array, target: Array, reduction: str = "mean") -> Array:  # noqa: A002
    """``(input - target) ** 2`` averaged, summed or elementwise (shapes must be equal)."""
    a, b = float_array(input, "input", "mse_loss"), float_array(target, "target", "mse_loss")
    if a.shape != b.shape:
        raise InvalidArgumentError(f"mse_loss: input {a.shape} and target {b.shape} differ",
                                   fix="pass arrays of one shape")
    _reduce_check(reduction, "mse_loss")
    a, b = _amp.cast("mse_loss", a, b)  # float32 under vyre.amp.autocast
    d = a - b
    return _reduce(d * d, reduction, "mse_loss")


def _reduce_check(reduction: str, fn: str) -> None:
    if reduction not in ("mean", "sum", "none"):
        raise InvalidArgumentError(f"{fn}: reduction must be 'mean', 'sum' or 'none', not {reduction!r}",
                                   fix="reduction='mean'")


__all__ = ["relu", "gelu", "erf", "silu", "sigmoid", "tanh", "softmax", "log_softmax", "cross_entropy",
           "mse_loss", "nll_loss", "float_array"]
