"""Utility functions of the standard (2024.12): ``all``, ``any``, ``diff``; and ``broadcast_shapes``.

* ``all``/``any``: the truth of each element (NaN is true, as in numpy) as a u32 0/1, reduced with the
  statistical functions' ``min``/``max`` kernel (vyre/array/_statistical.py), so a pending input such as
  ``all(a < b)`` fuses into the reduction (one kernel); the result is bool. Reducing zero elements gives
  True (all) and False (any), the identities.
* ``diff``: lazy slices of the axis, ``x[1:] - x[:-1]`` n times (bool: ``!=``, as numpy does); they fuse
  into one kernel with whatever consumes them. ``prepend``/``append`` are joined with ``concat`` first
  (one copy kernel).
* ``broadcast_shapes``: shape arithmetic only (no device).
"""

from __future__ import annotations

import builtins
import math
import operator
from collections.abc import Sequence
from typing import Any

from ..errors import ArgumentTypeError, InvalidArgumentError
from . import _dtypes as D
from ._array import Array
from ._array import check_array as _check
from ._creation import full
from ._elementwise import not_equal
from ._manipulation import concat
from ._statistical import max as _max
from ._statistical import min as _min
from ._statistical import normalize_axes
from ._views import normalize_axis


def _truth(x: Array, axis: Any, keepdims: bool, everything: bool, what: str) -> Array:
    x = _check(x, what)
    axes = normalize_axes(axis, x.ndim, what)
    shape = tuple(1 if d in axes else n for d, n in enumerate(x.shape) if keepdims or d not in axes)
    if math.prod(x.shape[d] for d in axes) == 0:
        return full(shape, everything, dtype=D.bool, device=x.device)
    flags = D.astype(D.astype(x, D.bool, copy=False), D.uint32)  # lazy: fused into the reduction's load
    reduce = _min if everything else _max
    return D.astype(reduce(flags, axis=axes, keepdims=keepdims), D.bool)


def all(x: Array, /, *, axis: int | tuple[int, ...] | None = None, keepdims: bool = False) -> Array:  # noqa: A001
    """True where every element along ``axis`` (None: all axes) is non-zero (NaN counts as non-zero)."""
    return _truth(x, axis, keepdims, True, "all")


def any(x: Array, /, *, axis: int | tuple[int, ...] | None = None, keepdims: bool = False) -> Array:  # noqa: A001
    """True where some element along ``axis`` (None: all axes) is non-zero (NaN counts as non-zero)."""
    return _truth(x, axis, keepdims, False, "any")


def _edge(v: Any, x: Array, ax: int, what: str) -> Array:
    """``prepend``/``append`` as an array joinable to ``x`` along ``ax`` (a Python scalar becomes one slice)."""
    if isinstance(v, (builtins.bool, int, float)):
        shape = tuple(1 if d == ax else n for d, n in enumerate(x.shape))
        dt = x.dtype if not (isinstance(v, float) and x.dtype.kind != "f") else D.float32
        return full(shape, v, dtype=dt, device=x.device)
    a = _check(v, what)
    if a.ndim != x.ndim or _differs(a.shape, x.shape, ax):
        raise InvalidArgumentError(f"{what} of shape {list(a.shape)} does not match x's {list(x.shape)} off axis {ax}",
                                   fix="give it x's shape except along the axis")
    return a


def _differs(a: Sequence[int], b: Sequence[int], skip: int) -> builtins.bool:
    return builtins.any(p != q for d, (p, q) in enumerate(zip(a, b)) if d != skip)


def diff(x: Array, /, *, axis: int = -1, n: int = 1, prepend: Array | None = None,
         append: Array | None = None) -> Array:
    """The n-th forward difference along ``axis``: ``out[i] = x[i + 1] - x[i]`` applied ``n`` times (the
    axis shrinks by n, down to 0); ``prepend``/``append`` are joined to ``x`` first. Integers wrap; bool
    arrays give ``x[i + 1] != x[i]``."""
    x = _check(x, "diff")
    if x.ndim == 0:
        raise InvalidArgumentError("diff: needs an array of at least one dimension", fix="use expand_dims first")
    ax = normalize_axis(axis, x.ndim, "diff")
    if isinstance(n, builtins.bool):
        raise ArgumentTypeError(f"diff: n must be a non-negative int, got {n!r}", fix="e.g. n=1")
    try:
        steps = operator.index(n)
    except TypeError:
        raise ArgumentTypeError(f"diff: n must be a non-negative int, got {n!r}", fix="e.g. n=1") from None
    if steps < 0:
        raise InvalidArgumentError(f"diff: n must be non-negative, got {steps}", fix="e.g. n=1")
    parts = [x]
    if prepend is not None:
        parts.insert(0, _edge(prepend, x, ax, "diff: prepend"))
    if append is not None:
        parts.append(_edge(append, x, ax, "diff: append"))
    y = x
    if len(parts) > 1:
        y = concat(parts, axis=ax)
    head = (slice(None),) * ax
    for _ in range(steps):
        if y.shape[ax] == 0:
            break
        hi, lo = y[(*head, slice(1, None))], y[(*head, slice(None, -1))]
        y = not_equal(hi, lo) if y.dtype == D.bool else hi - lo
    return y


def broadcast_shapes(*shapes: tuple[int, ...]) -> tuple[int, ...]:
    """The shape that arrays of ``shapes`` broadcast to (the standard's rules: aligned from the last
    dimension, each pair equal or one of them 1); ``()`` for no shapes. Shape arithmetic only."""
    dims: list[tuple[int, ...]] = []
    for s in shapes:
        if not isinstance(s, (tuple, list)):
            raise ArgumentTypeError(f"broadcast_shapes: a shape must be a tuple of ints, got {s!r}",
                                    fix="e.g. broadcast_shapes((2, 1), (3,))")
        try:
            t = tuple(operator.index(d) for d in s if not isinstance(d, builtins.bool))
        except TypeError:
            raise ArgumentTypeError(f"broadcast_shapes: {s!r} holds a non-integer dimension (vyre shapes are "
                                    "always known, so None is not accepted)", fix="pass tuples of ints") from None
        if len(t) != len(s) or builtins.any(d < 0 for d in t):
            raise InvalidArgumentError(f"broadcast_shapes: {s!r} has a negative or bool dimension",
                                       fix="dimensions are non-negative ints")
        dims.append(t)
    nd = builtins.max((len(t) for t in dims), default=0)
    out = []
    for k in range(-nd, 0):
        size = 1
        for t in dims:
            if len(t) < -k:
                continue
            d = t[k]
            if d != 1:
                if size not in (1, d):
                    raise InvalidArgumentError(f"broadcast_shapes: shapes {', '.join(str(list(s)) for s in dims)} do "
                                               f"not broadcast ({size} vs {d} at dimension {k})",
                                               fix="make the trailing dimensions equal or 1")
                size = d
        out.append(size)
    return tuple(out)


__all__ = ["all", "any", "diff", "broadcast_shapes"]
