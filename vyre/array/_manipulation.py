"""Manipulation functions of the standard (2024.12): broadcast_to, reshape, permute_dims, expand_dims,
squeeze, flip, moveaxis, unstack, broadcast_arrays, roll, tile, repeat (lazy views that fuse into their
consumers: vyre/array/_views.py), concat and stack (one copy kernel, materialised:
vyre/array/_kernels/concat.py).

``expand_dims`` also takes a tuple of axes (the semantics of the standard's next revision).
``repeat`` with an array of counts has a data-dependent shape: the counts are downloaded (one round trip),
then the result is a gather (one kernel).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..errors import ArgumentTypeError, InvalidArgumentError, UnsupportedDTypeError
from . import _dtypes as D
from ._array import Array
from ._array import check_array as _check
from ._creation import asarray
from ._device import same_device
from ._elementwise import broadcast_together
from ._indexing import take
from ._kernels.concat import concat_into
from ._views import (
    axis_index,
    axis_view,
    broadcast_to,
    normalize_axes,
    normalize_axis,
    permute_dims,
    reshape,
    wrap_view,
)


def expand_dims(x: Array, /, axis: int | tuple[int, ...]) -> Array:
    """``x`` with a size-1 axis inserted at ``axis`` (an int, or a tuple: positions in the result, in
    [-M, M) for M = x.ndim + len(axis)); a lazy view. ``axis`` is positional-or-keyword and required, as
    in the standard (``expand_dims(x, 0)`` and ``expand_dims(x, axis=0)``)."""
    _check(x, "expand_dims")
    items = axis if isinstance(axis, tuple) else (axis,)
    m = x.ndim + len(items)
    new = set(normalize_axes(items, m, "expand_dims"))
    dims: list[tuple[int | None, int]] = []
    shape, k = [], 0
    for d in range(m):
        if d in new:
            dims.append((None, 1))
            shape.append(1)
        else:
            dims.append((k, 1))
            shape.append(x.shape[k])
            k += 1
    return axis_view(x, shape, (0,) * x.ndim, dims)


def squeeze(x: Array, /, axis: int | tuple[int, ...]) -> Array:
    """``x`` without the size-1 axes ``axis`` (an axis of another size raises); a lazy view."""
    _check(x, "squeeze")
    axes = set(normalize_axes(axis, x.ndim, "squeeze"))
    for a in sorted(axes):
        if x.shape[a] != 1:
            raise InvalidArgumentError(f"squeeze: axis {a} has size {x.shape[a]}, not 1",
                                       fix="squeeze only axes of size 1 (see x.shape)")
    keep = [k for k in range(x.ndim) if k not in axes]
    return axis_view(x, [x.shape[k] for k in keep], (0,) * x.ndim, [(k, 1) for k in keep])


def flip(x: Array, /, *, axis: int | tuple[int, ...] | None = None) -> Array:
    """``x`` with the order of elements reversed along ``axis`` (all axes when None); a lazy view."""
    _check(x, "flip")
    axes = set(range(x.ndim) if axis is None else normalize_axes(axis, x.ndim, "flip"))
    start = [x.shape[k] - 1 if k in axes and x.shape[k] > 0 else 0 for k in range(x.ndim)]
    return axis_view(x, x.shape, start, [(k, -1 if k in axes else 1) for k in range(x.ndim)])


def moveaxis(x: Array, source: int | tuple[int, ...], destination: int | tuple[int, ...], /) -> Array:
    """``x`` with axes ``source`` moved to positions ``destination`` (the others keep their order); a
    lazy view."""
    _check(x, "moveaxis")
    src = normalize_axes(source, x.ndim, "moveaxis")
    dst = normalize_axes(destination, x.ndim, "moveaxis")
    if len(src) != len(dst):
        raise InvalidArgumentError(f"moveaxis: {len(src)} source axes but {len(dst)} destinations",
                                   fix="pass as many destinations as sources")
    order = [k for k in range(x.ndim) if k not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return axis_view(x, [x.shape[k] for k in order], (0,) * x.ndim, [(k, 1) for k in order])


def unstack(x: Array, /, *, axis: int = 0) -> tuple[Array, ...]:
    """The slices of ``x`` along ``axis``, as a tuple of lazy views."""
    _check(x, "unstack")
    if x.ndim == 0:
        raise InvalidArgumentError("unstack: a 0-d array has no axis to split",
                                   fix="pass an array of at least 1 dimension")
    a = normalize_axis(axis, x.ndim, "unstack")
    keep = [k for k in range(x.ndim) if k != a]
    shape = [x.shape[k] for k in keep]
    dims: list[tuple[int | None, int]] = [(k, 1) for k in keep]
    return tuple(axis_view(x, shape, tuple(j if k == a else 0 for k in range(x.ndim)), dims)
                 for j in range(x.shape[a]))


def broadcast_arrays(*arrays: Array) -> list[Array]:
    """The arrays broadcast to their common shape (lazy views)."""
    for a in arrays:
        _check(a, "broadcast_arrays")
    if not arrays:
        return []
    shape = broadcast_together(*[a.shape for a in arrays])
    return [broadcast_to(a, shape) for a in arrays]


def roll(x: Array, /, shift: int | tuple[int, ...], *, axis: int | tuple[int, ...] | None = None) -> Array:
    """``x`` with its elements shifted by ``shift`` along ``axis`` (cyclically; the flattened array when
    None; an axis named twice adds its shifts); a lazy view."""
    _check(x, "roll")
    if axis is None:
        if isinstance(shift, tuple):
            raise InvalidArgumentError("roll: a tuple shift needs a tuple axis",
                                       fix="pass axis=(...) of the same length")
        flat = reshape(x, (-1,))
        return reshape(roll(flat, shift, axis=0), x.shape)
    shifts = shift if isinstance(shift, tuple) else (shift,)
    axes = axis if isinstance(axis, tuple) else (axis,)
    if len(shifts) != len(axes):
        raise InvalidArgumentError(f"roll: {len(shifts)} shift(s) for {len(axes)} axis/axes",
                                   fix="pass one shift per axis (an int shift with an int axis)")
    add = [0] * x.ndim
    for s, a in zip(shifts, axes):
        k = normalize_axis(a, x.ndim, "roll")
        add[k] -= axis_index(s, "roll shift")
    add = [(v % x.shape[k]) if x.shape[k] else 0 for k, v in enumerate(add)]
    return wrap_view(x, x.shape, (1,) * x.ndim, add)


def tile(x: Array, repetitions: tuple[int, ...], /) -> Array:
    """``x`` repeated ``repetitions[k]`` times along each axis (missing leading axes of either side count
    as 1); a lazy view."""
    _check(x, "tile")
    if not isinstance(repetitions, (tuple, list)):
        raise ArgumentTypeError("tile: repetitions must be a tuple of ints", fix="e.g. tile(x, (2, 3))")
    reps = [axis_index(r, "tile repetitions") for r in repetitions]
    if any(r < 0 for r in reps):
        raise InvalidArgumentError(f"tile: negative repetitions {reps}", fix="pass repetitions >= 0")
    nd = max(len(reps), x.ndim)
    reps = [1] * (nd - len(reps)) + reps
    if x.ndim < nd:
        x = reshape(x, (1,) * (nd - x.ndim) + x.shape)
    shape = tuple(n * r for n, r in zip(x.shape, reps))
    if 0 in shape:
        return _empty(x, shape)
    return wrap_view(x, shape, (1,) * nd, (0,) * nd)


def repeat(x: Array, repeats: int | Array, /, *, axis: int | None = None) -> Array:
    """Each element of ``x`` repeated ``repeats`` times along ``axis`` (the flattened array when None).
    An int gives a lazy view; an array of counts (length 1 or the axis' length) is downloaded first (the
    result's shape depends on it) and the result is gathered in one kernel."""
    _check(x, "repeat")
    if axis is None:
        x, ax = reshape(x, (-1,)), 0
    else:
        ax = normalize_axis(axis, x.ndim, "repeat")
    n = x.shape[ax]
    if isinstance(repeats, Array):
        if repeats.dtype.kind not in "iu":
            raise UnsupportedDTypeError(f"repeat: repeats must be an integer array, not {repeats.dtype}",
                                        fix="astype(int32)")
        counts = np.asarray(repeats).reshape(-1)
        if repeats.ndim > 1 or counts.size not in (1, n):
            raise InvalidArgumentError(f"repeat: repeats of shape {list(repeats.shape)} for an axis of {n}",
                                       fix=f"pass an int, or a 1-D array of length 1 or {n}")
        if counts.size == 1:
            return repeat(x, int(counts[0]), axis=ax)
        if (counts < 0).any():
            raise InvalidArgumentError("repeat: negative repeats", fix="pass counts >= 0")
        idx = np.repeat(np.arange(n, dtype=np.int32), counts.astype(np.int64))
        return take(x, asarray(idx, device=x.device), axis=ax)
    r = axis_index(repeats, "repeat")
    if r < 0:
        raise InvalidArgumentError(f"repeat: negative repeats {r}", fix="pass repeats >= 0")
    shape = x.shape[:ax] + (n * r,) + x.shape[ax + 1:]
    if 0 in shape:
        return _empty(x, shape)
    return wrap_view(x, shape, tuple(r if k == ax else 1 for k in range(x.ndim)), (0,) * x.ndim)


def _empty(x: Array, shape: tuple[int, ...]) -> Array:
    out = Array(shape, x.dtype, x.device)
    out._allocate()
    return out


def concat(arrays: Sequence[Array], /, *, axis: int | None = 0) -> Array:
    """The arrays joined along ``axis`` (flattened first when None), in the promoted dtype: one kernel
    (pending inputs fused in), a materialised result."""
    if not isinstance(arrays, (tuple, list)):
        raise ArgumentTypeError("concat: arrays must be a tuple or list of arrays", fix="e.g. concat((a, b))")
    return _concat(list(arrays), axis, "concat")


def stack(arrays: Sequence[Array], /, *, axis: int = 0) -> Array:
    """The arrays (all of one shape) joined along a new axis ``axis``: one kernel, materialised."""
    if not isinstance(arrays, (tuple, list)) or not arrays:
        raise ArgumentTypeError("stack: arrays must be a non-empty tuple or list of arrays", fix="e.g. stack((a, b))")
    for a in arrays:
        _check(a, "stack")
    if any(a.shape != arrays[0].shape for a in arrays):
        raise InvalidArgumentError(f"stack: shapes {[list(a.shape) for a in arrays]} differ",
                                   fix="stack arrays of one shape (see broadcast_arrays)")
    ax = normalize_axis(axis, arrays[0].ndim + 1, "stack")
    return _concat([expand_dims(a, axis=ax) for a in arrays], ax, "stack")


def _concat(arrays: Sequence[Array], axis: int | None, what: str) -> Array:
    """``concat`` of validated arrays (same device; shapes checked here)."""
    if not arrays:
        raise InvalidArgumentError(f"{what}: needs at least one array", fix="pass a non-empty tuple of arrays")
    for a in arrays:
        if not isinstance(a, Array):
            raise ArgumentTypeError(f"{what}: expected vyre arrays, got {type(a).__name__}",
                                    fix="convert with asarray first")
    dev = same_device(list(arrays), what)
    dt = D.result_type(*[a.dtype for a in arrays])
    pieces = [D.astype(a, dt, copy=False) for a in arrays]
    if axis is None:
        pieces, ax = [reshape(a, (-1,)) for a in pieces], 0
    else:
        nd = pieces[0].ndim
        if nd == 0:
            raise InvalidArgumentError(f"{what}: cannot join 0-d arrays along an axis", fix="use stack, or axis=None")
        ax = normalize_axis(axis, nd, what)
        for a in pieces:
            if a.ndim != nd or a.shape[:ax] + a.shape[ax + 1:] != pieces[0].shape[:ax] + pieces[0].shape[ax + 1:]:
                raise InvalidArgumentError(f"{what}: shapes {[list(p.shape) for p in pieces]} differ outside axis {ax}",
                                           fix="every array needs the same shape except along the joined axis")
    shape0 = pieces[0].shape
    shape = shape0[:ax] + (sum(a.shape[ax] for a in pieces),) + shape0[ax + 1:]
    out = Array(shape, dt, dev)
    concat_into(out, pieces, ax)
    return out


__all__ = ["broadcast_to", "reshape", "permute_dims", "expand_dims", "squeeze", "flip", "moveaxis", "unstack",
           "broadcast_arrays", "roll", "tile", "repeat", "concat", "stack"]
