"""Boolean-mask assignment: ``x[mask] = value`` (also ``x[mask, ...]``, ``x[:, mask]``, ``x[..., mask]``),
numpy's rules.

``mask`` (a bool vyre array or a host bool array) covers ``k`` axes of x (its shape is theirs); for a mask
over the leading axes the indexed result has shape ``(count, *x.shape[k:])``, ``count`` the number of True
entries, and ``value`` broadcasts to it: a scalar, a 0-d array, an array of shape ``rest`` (broadcast over
the rows), or one of ``(count, *rest)`` / ``(1, *rest)`` (vyre arrays; array-likes are uploaded once, cast
to x's dtype where numpy's same-kind rule allows). A mask after full slices (``x[:, mask]``) is the same
assignment on the view with the mask's axes first (the value's count axis moved likewise).

No write races and no host round trip of the values: element ``(m, r)`` of the new x is
``value[c[m] - 1, r]`` where ``mask[m]`` (``c``: the inclusive prefix sum of the mask, computed on the
device) and ``x[m, r]`` elsewhere -- a gather driven by the prefix sum, then a ``where``, committed into
x as the in-place operators are (pending readers keep the old values). A value with ``count`` rows needs
the count checked (numpy raises on a mismatch): one download of the prefix sum's last element, unless the
mask is host data. That download cannot be traced, so inside ``vyre.compile`` such an assignment is a
TraceError (a scalar, a broadcast row or a host mask need no download and are traced as usual).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..backends import recording
from ..errors import (
    ArgumentTypeError,
    DeviceMismatchError,
    IndexOutOfRangeError,
    InvalidArgumentError,
    TraceError,
    UnsupportedDTypeError,
)
from . import _dtypes as D
from ._array import Array
from ._creation import asarray
from ._elementwise import broadcast_together, is_scalar, where
from ._kernels.gather import gather
from ._statistical import cumulative_sum
from ._views import broadcast_to, permute_dims, reshape

_MAX_MASK = np.iinfo(np.int32).max  # the prefix sum is int32


def _is_mask(k: Any) -> bool:
    return (isinstance(k, Array) or isinstance(k, np.ndarray)) and k.dtype == np.bool_


def _full(k: Any) -> bool:
    return isinstance(k, slice) and k == slice(None)


def is_mask_key(key: Any) -> bool:
    """Whether ``key`` is one boolean mask (a bool vyre array or host bool array) among full slices ``:``
    and at most one ``...``: ``x[m]``, ``x[m, ...]``, ``x[:, m]``, ``x[..., m]``."""
    items = key if isinstance(key, tuple) else (key,)
    masks = [j for j, k in enumerate(items) if _is_mask(k)]
    if len(masks) != 1:
        return False
    others = [k for j, k in enumerate(items) if j != masks[0]]
    if items[masks[0]].ndim == 0 and others:
        return False  # a 0-d mask among other entries: the indexing path's new axis
    return all(k is Ellipsis or _full(k) for k in others) and sum(k is Ellipsis for k in others) <= 1


def _mask_of(x: Array, key: Any) -> tuple[Array, int, int | None]:
    """The mask as a device array, the first axis it covers, and for a host mask its count (known without a
    download)."""
    items = key if isinstance(key, tuple) else (key,)
    j = next(j for j, k in enumerate(items) if _is_mask(k))
    m = items[j]
    shape = tuple(m.shape)
    before, after = items[:j], items[j + 1:]
    a = x.ndim - len(shape) - len([k for k in after if k is not Ellipsis]) if any(
        k is Ellipsis for k in before) else len(before)
    if a < 0 or a + len(shape) + len([k for k in after if k is not Ellipsis]) > x.ndim:
        raise IndexOutOfRangeError(f"setitem: too many indices for an array of {x.ndim} dimension(s)",
                                   fix="index at most x.ndim axes")
    if shape != x.shape[a:a + len(shape)]:
        raise IndexOutOfRangeError(f"setitem: boolean index of shape {list(shape)} does not match the indexed "
                                   f"dimensions {list(x.shape[a:a + len(shape)])}",
                                   fix="use a mask of exactly the shape of the axes it indexes")
    if math.prod(shape) > _MAX_MASK:
        raise InvalidArgumentError(f"setitem: a boolean mask of {math.prod(shape)} elements is over the int32 "
                                   "index range", fix="assign through fewer elements at a time")
    if isinstance(m, Array):
        if m.device is not x.device:
            raise DeviceMismatchError("setitem: mask on another backend", fix="move it with mask.to_device(x.device)")
        return m, a, None
    return asarray(m, device=x.device), a, int(np.count_nonzero(m))


def _value_array(x: Array, value: Any) -> Array | int | float | bool:
    """``value`` as a Python scalar or a vyre array of x's dtype (checked: dtype, device)."""
    if isinstance(value, np.generic):
        value = value.item()
    if is_scalar(value):
        D.check_scalar(value, x.dtype, "setitem")
        return value  # type: ignore[no-any-return]
    if not isinstance(value, Array):
        try:
            host = np.asarray(value)
        except (ValueError, TypeError) as exc:
            raise ArgumentTypeError(f"setitem: cannot assign a {type(value).__name__}: {exc}",
                                    fix="assign a vyre array, a Python scalar or a rectangular array-like") from None
        if host.dtype.kind not in "biuf" or not np.can_cast(host.dtype, x.dtype, "same_kind"):
            raise UnsupportedDTypeError(f"setitem: cannot store {host.dtype} values in a {x.dtype} array",
                                        fix=f"convert the values first (to {x.dtype})")
        return asarray(host.astype(x.dtype), device=x.device)
    if value.device is not x.device:
        raise DeviceMismatchError("setitem: value on another backend", fix="move it with value.to_device(x.device)")
    if value.dtype != x.dtype and not D.can_cast(value.dtype, x.dtype):
        raise UnsupportedDTypeError(f"setitem: cannot store {value.dtype} values in a {x.dtype} array",
                                    fix=f"convert the value first (value.astype({x.dtype}))")
    return value if value.dtype == x.dtype else value.astype(x.dtype)


def _count(cs: Array) -> int:
    """The mask's number of True entries: the prefix sum's last element (the one download)."""
    rec = recording.active()
    if rec is not None:
        raise TraceError("vyre.compile: x[mask] = values (one value per True entry) inside a traced function "
                         "needs the mask's count on the host to check the values' length (a download, which "
                         "a replay cannot repeat)",
                         fix="compute the values at the mask's full shape and use xp.where(mask, values, x), "
                             "or do this assignment outside the compiled function")
    return int(np.asarray(cs[-1])) if cs.size else 0


def mask_assign(x: Array, key: Any, value: Any) -> None:
    """``x[mask] = value`` with the mask among full slices (see the module docstring)."""
    mask, a, known = _mask_of(x, key)
    v = _value_array(x, value)
    k = mask.ndim
    if a == 0:
        x._inplace(_assigned(x, mask, known, v))
        return
    # the mask's axes first (a view), the leading-axes assignment there, and back: numpy puts the count
    # axis where the mask's axes were, so the value's count axis moves to the front the same way
    lead, rest = x.shape[:a], x.shape[a + k:]
    perm = (*range(a, a + k), *range(a), *range(a + k, x.ndim))
    if isinstance(v, Array) and v.ndim > len(rest):
        if v.ndim > len(lead) + 1 + len(rest):
            raise InvalidArgumentError(f"setitem: a value of {v.ndim} dimension(s) for an indexed shape of "
                                       f"{len(lead) + 1 + len(rest)}", fix="give a value of x[key]'s shape")
        c = v.shape[v.ndim - len(rest) - 1]
        target = (*lead, c, *rest)
        if broadcast_together(v.shape, target) != target:
            raise InvalidArgumentError(f"setitem: a value of shape {list(v.shape)} does not broadcast to the "
                                       f"indexed shape {list(lead)} + [count] + {list(rest)}",
                                       fix="give a value of x[key]'s shape")
        v = permute_dims(broadcast_to(v, target), (a, *range(a), *range(a + 1, len(target))))
    new = _assigned(permute_dims(x, perm), mask, known, v)
    x._inplace(permute_dims(new, tuple(perm.index(d) for d in range(x.ndim))))


def _assigned(x: Array, mask: Array, known: int | None, v: Array | int | float | bool) -> Array:
    """x with ``x[mask] = v`` for a mask over x's leading axes, as a new (pending) array."""
    k = mask.ndim
    rest = x.shape[k:]
    m = reshape(mask, mask.shape + (1,) * len(rest))  # broadcasts over the trailing axes
    if not isinstance(v, Array) or v.ndim <= len(rest):
        # one value (or one row) for every True entry: no count needed
        if isinstance(v, Array) and broadcast_together(v.shape, rest) != rest:
            raise InvalidArgumentError(f"setitem: a value of shape {list(v.shape)} does not broadcast to the "
                                       f"indexed rows of shape {list(rest)}",
                                       fix="give one value per True entry, one row, or a scalar")
        return where(m, v, x)
    if v.ndim > len(rest) + 1:
        raise InvalidArgumentError(f"setitem: boolean-mask assignment takes a value of at most {len(rest) + 1} "
                                   f"dimension(s), not {v.ndim} (shape {list(v.shape)})",
                                   fix="reshape the value to (count, *x.shape[mask.ndim:])")
    if broadcast_together(v.shape[1:], rest) != rest:
        raise InvalidArgumentError(f"setitem: value rows of shape {list(v.shape[1:])} do not broadcast to "
                                   f"{list(rest)}", fix="give rows of x.shape[mask.ndim:]")
    if v.shape[0] == 1:  # one row broadcast over the True entries
        return where(m, reshape(v, v.shape[1:]), x)
    flat = reshape(mask, (mask.size,))
    cs = cumulative_sum(flat, dtype=D.int32)
    count = known if known is not None else _count(cs)
    if v.shape[0] != count:
        raise InvalidArgumentError(f"setitem: {v.shape[0]} value row(s) for a mask with {count} True "
                                   "entr" + ("y" if count == 1 else "ies"),
                                   fix="give one value (row) per True entry of the mask, or a single one")
    if count == 0:
        return x
    inner = math.prod(rest)
    src = reshape(broadcast_to(v, (count, *rest)), (count, inner))
    idx = reshape(cs - 1, (mask.size, 1))  # row of each True entry (-1 before the first: unused, wraps)
    rows = gather(src, (mask.size, inner), [("idx", 0), ("out", 1)], [broadcast_to(idx, (mask.size, inner))])
    return where(m, reshape(rows, x.shape), x)


__all__: list[str] = []
