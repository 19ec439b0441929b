"""Searching functions of the standard (argmax, argmin, nonzero, count_nonzero, searchsorted, where).
Indices are int32, the default integer dtype here (no 64-bit types in WebGPU). The helpers the sorting
functions share (argument checks, order keys as lazy arrays) are here too.

Strategies (kernels in vyre/array/_kernels/search.py, the order keys in _kernels/sort.py; every input's
pending elementwise expression fuses into the first kernel that reads it, so it is never materialised on
its own):

* argmax/argmin: an order key per element (NaN above everything: the first NaN wins, as in numpy; -0.0
  equals +0.0), then reduce.argmax's multi-pass (key, first index) reduction, one submission;
* nonzero: flags, scan.inclusive, a download of the last prefix (the count: the result's size depends on
  the data), then a scatter of coordinates (two submissions, one 4-byte readback);
* count_nonzero: flags summed with reduce.sum's kernel over the reduced axes (moved last when they are
  not contiguous);
* searchsorted: one invocation per search value, a binary search over x1's order keys;
* where: an elementwise select, recorded lazily (it fuses) with the elementwise functions in
  vyre/array/_elementwise.py, listed here as the standard does.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..errors import ArgumentTypeError, AxisError, InvalidArgumentError, UnsupportedDTypeError
from ..ops.scan import _tiles
from . import _dtypes as D
from ._array import Array, check_array
from ._creation import asarray, zeros
from ._device import same_device
from ._elementwise import where
from ._kernels import search as K
from ._kernels.fused import cut, plan
from ._kernels.nodes import Leaf, Map, Node, collect
from ._kernels.pipeline import run_pipeline_on
from ._kernels.sort import WG
from ._views import permute_dims

MAX_FUSED = 5  # leaves + parameter buffer of a fused input in a kernel with three more buffers


def axis_of(axis: Any, ndim: int, what: str) -> int:
    if isinstance(axis, bool) or not isinstance(axis, (int, np.integer)):
        raise ArgumentTypeError(f"{what}: axis must be an int, got {axis!r}", fix="pass one integer axis")
    if not -ndim <= int(axis) < ndim:
        raise AxisError(f"{what}: axis {axis} is out of range for {ndim} dimension(s)",
                        fix=f"pass an axis in [-{ndim}, {ndim})")
    return int(axis) % ndim


def u32_of(x: Array, op: str) -> Array:
    """A lazy u32 array: elementwise ``op`` (an OPS key) of x (fused with x's expression)."""
    node = cut([x._node()], [x])[0]
    return Array(x.shape, D.uint32, x.device, Map(op, (node,), D.uint32, x.shape))


def _u64_keys(x: Array) -> Array:
    """A lazy uint64 array of x's 64-bit order keys (numpy's order, see sort64.order_key64)."""
    from ._kernels import sort64  # noqa: F401 - registers search_key64

    node = cut([x._node()], [x])[0]
    return Array(x.shape, D.uint64, x.device, Map("search_key64", (node,), D.uint64, x.shape))


def as_int32(a: Array, shape: tuple[int, ...]) -> Array:
    """The same buffer read as int32 in ``shape`` (the values are below 2^31: the bits are the same)."""
    r = Array(shape, D.int32, a.device)
    r._buf = a._buf
    return r


def fused_node(x: Array) -> Node:
    """x's expression, or a leaf of it when its buffers leave no room for three more in one kernel."""
    node = x._node()
    c = collect(node)
    if len(c.leaves) + bool(c.scalars) > MAX_FUSED:
        return Leaf(Array(x.shape, x.dtype, x.device, node))  # materialised first, same submission
    return node


def _wide_rank(x: Array, axis: int | None, is_max: bool) -> Array:
    """For argmax/argmin of a 64-bit array: 2 at a NaN, 1 where the value equals the maximum (minimum) of its
    row, else 0 (int32): the first largest rank is numpy's answer (the first NaN, else the first extreme)."""
    from ._elementwise import equal, isnan
    from ._statistical import max as amax
    from ._statistical import min as amin

    extreme = (amax if is_max else amin)(x, axis=axis, keepdims=True)
    hit = where(equal(x, extreme), asarray(1, device=x.device), asarray(0, device=x.device))
    if x.dtype.kind != "f":
        return hit
    return where(isnan(x), asarray(2, device=x.device), hit)


def _arg(x: Any, axis: Any, keepdims: bool, key_op: str, what: str) -> Array:
    x = check_array(x, what)
    if x.dtype.kind not in "biuf":
        raise UnsupportedDTypeError(f"{what} needs a real-valued array, got {x.dtype}", fix="astype first")
    nd = max(1, x.ndim)
    ax = None if axis is None else axis_of(axis, nd, what)
    shape = x.shape if x.ndim else (1,)
    if ax is None:
        outer, length, inner = 1, x.size, 1
        out_shape: tuple[int, ...] = (1,) * x.ndim if keepdims else ()
    else:
        outer, length, inner = math.prod(shape[:ax]), shape[ax], math.prod(shape[ax + 1:])
        out_shape = tuple(1 if d == ax else s for d, s in enumerate(shape) if keepdims or d != ax)
        out_shape = out_shape if x.ndim else ()
    if length == 0:
        raise InvalidArgumentError(f"{what} of an empty {'array' if ax is None else 'axis'} (shape {list(x.shape)})",
                                   fix="reduce along a non-empty axis")
    if outer * inner == 0:
        return zeros(out_shape, dtype=D.int32, device=x.device)
    if x.dtype.itemsize == 8:  # no 64-bit order key: rank each element against the extreme (lazy, fused)
        x = _wide_rank(x, ax, key_op == "search_key")
        key_op = "search_key"
    keys = u32_of(x, key_op)
    out = run_pipeline_on(K.reduce_pipeline("argmax", outer, length, inner), [keys])[0]
    return as_int32(out, out_shape)


def argmax(x: Array, /, *, axis: int | None = None, keepdims: bool = False) -> Array:
    """Index (int32) of the first maximum, over the flattened array or along ``axis``; NaN counts as the
    maximum (the first NaN wins, as in numpy)."""
    return _arg(x, axis, keepdims, "search_key", "argmax")


def argmin(x: Array, /, *, axis: int | None = None, keepdims: bool = False) -> Array:
    """Index (int32) of the first minimum, over the flattened array or along ``axis``; the first NaN
    wins when there is one (as in numpy)."""
    return _arg(x, axis, keepdims, "search_argmin_key", "argmin")


def nonzero(x: Array, /) -> tuple[Array, ...]:
    """The int32 coordinates of the non-zero elements (NaN counts as non-zero), row-major order, one array
    per dimension. The result's size depends on the data: the count is downloaded (4 bytes)."""
    x = check_array(x, "nonzero")
    if x.ndim == 0:
        raise InvalidArgumentError("nonzero of a 0-d array (the standard leaves it an error)",
                                   fix="use expand_dims(x, axis=0) or nonzero(reshape(x, (1,)))")
    if x.size == 0:
        return tuple(zeros((0,), dtype=D.int32, device=x.device) for _ in x.shape)
    flags = u32_of(x, "search_flag")
    incl = run_pipeline_on(_tiles.build_scan(x.size, "u32", False), [flags])[0]
    dev = x.device
    last = dev.download_resident_ranges([(incl.handle, (x.size - 1) * 4, 4)])[0]
    count = int(last.view(np.uint32)[0])
    outs = [Array((count,), D.int32, dev) for _ in x.shape]
    if count == 0:
        return tuple(zeros((0,), dtype=D.int32, device=dev) for _ in x.shape)
    p = plan([], dev)
    grid = (-(-x.size // WG), 1, 1)
    for first in range(0, x.ndim, 6):  # 6 outputs + the scan: within 8 buffers per stage
        dims = tuple(range(first, min(first + 6, x.ndim)))
        prog = K.scatter_program(x.shape, dims)
        p.steps.append((prog, [incl.handle, *[outs[d]._allocate() for d in dims]], grid))
    p.run()
    return tuple(outs)


def count_nonzero(x: Array, /, *, axis: int | tuple[int, ...] | None = None, keepdims: bool = False) -> Array:
    """The number (int32) of non-zero elements (NaN counts), over everything or along ``axis``."""
    x = check_array(x, "count_nonzero")
    nd = x.ndim
    if axis is None:
        axes = tuple(range(nd))
    else:
        raw = axis if isinstance(axis, tuple) else (axis,)
        axes = tuple(sorted(axis_of(a, nd, "count_nonzero") if nd else axis_of(a, 1, "count_nonzero") for a in raw))
        if len(set(axes)) != len(axes):
            raise AxisError(f"count_nonzero: repeated axis in {axis}", fix="name each axis once")
        axes = tuple(a for a in axes if a < nd)
    keep = [d for d in range(nd) if d not in axes]
    out_shape = tuple(1 if d in axes else x.shape[d] for d in range(nd) if keepdims or d not in axes)
    rows, length = math.prod(x.shape[d] for d in keep), math.prod(x.shape[d] for d in axes)
    if not axes:
        return D.astype(u32_of(x, "search_flag"), D.int32)
    if rows == 0 or length == 0:
        return zeros(out_shape, dtype=D.int32, device=x.device)
    contiguous = axes == tuple(range(axes[0], axes[-1] + 1))
    if contiguous:
        outer, inner = math.prod(x.shape[:axes[0]]), math.prod(x.shape[axes[-1] + 1:])
        flags = u32_of(x, "search_flag")
    else:
        outer, inner = rows, 1
        flags = u32_of(permute_dims(x, keep + list(axes)), "search_flag")
    out = run_pipeline_on(K.reduce_pipeline("sum", outer, length, inner), [flags])[0]
    return as_int32(out, out_shape)


def searchsorted(x1: Array, x2: Array, /, *, side: str = "left", sorter: Array | None = None) -> Array:
    """Insertion points (int32) of ``x2``'s values in the ascending 1-D ``x1`` (or ``x1[sorter]``):
    ``side='left'``: the first position with x1 >= v, ``'right'``: x1 > v; numpy's order (NaN last,
    -0.0 == +0.0). The values of ``sorter`` must be a permutation of x1's indices (not checked)."""
    x1 = check_array(x1, "searchsorted")
    if not isinstance(x2, Array):
        x2 = asarray(x2, device=x1.device) if isinstance(x2, (bool, int, float)) else check_array(x2, "searchsorted")
    dev = same_device([x1, x2] + ([sorter] if isinstance(sorter, Array) else []), "searchsorted")
    if x1.ndim != 1:
        raise InvalidArgumentError(f"searchsorted: x1 must be 1-D, got shape {list(x1.shape)}", fix="pass a 1-D array")
    if side not in ("left", "right"):
        raise InvalidArgumentError(f"searchsorted: side must be 'left' or 'right', got {side!r}", fix="side='left'")
    dt = D.result_type(x1.dtype, x2.dtype)
    if dt.kind not in "biuf":
        raise UnsupportedDTypeError(f"searchsorted needs real-valued arrays, got {dt}", fix="astype first")
    srt = None
    if sorter is not None:
        sorter = check_array(sorter, "searchsorted")
        if sorter.dtype not in (D.int32, D.uint32) or sorter.shape != x1.shape:
            raise InvalidArgumentError(f"searchsorted: sorter must be an int32/uint32 array of shape {list(x1.shape)}, "
                                       f"got {sorter.dtype}{list(sorter.shape)}", fix="pass argsort(x1)")
        srt = D.ir_type(sorter.dtype).value
    if x2.size == 0:
        return zeros(x2.shape, dtype=D.int32, device=dev)
    a1, a2 = (D.astype(x1, dt) if x1.dtype != dt else x1), (D.astype(x2, dt) if x2.dtype != dt else x2)
    wide = dt.itemsize == 8  # u64 order keys (vyre/array/_kernels/sort64.py)
    keys1 = _u64_keys(a1) if wide else u32_of(a1, "search_key")
    keys2 = _u64_keys(a2) if wide else u32_of(a2, "search_key")
    node = fused_node(keys2)
    n1 = x1.size
    prog = K.searchsorted_program(node, collect(node).key, n1, side == "right", srt, "u64" if wide else "u32")
    if n1 == 0:
        keys1 = zeros((1,), dtype=D.uint64 if wide else D.uint32, device=dev)
    p = plan([keys1], dev, [node])
    out = Array(x2.shape, D.int32, dev)
    handles = [*p.bind(node), keys1._allocate()]
    if sorter is not None:
        handles.append(sorter.handle if n1 else keys1._allocate())
    p.steps.append((prog, [*handles, out._allocate()]))
    p.run()
    return out


__all__ = ["argmax", "argmin", "nonzero", "count_nonzero", "searchsorted", "where"]
