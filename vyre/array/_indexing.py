"""Indexing: ``x[key]``, ``x[key] = value``, ``take`` and ``take_along_axis``.

* :func:`parse` reads a key against a shape: integers, slices (any step), ``...``, ``None`` and Python bools
  (new axes of size 1 / 0), integer arrays (vyre arrays, lists, numpy arrays) and boolean masks, into the
  basic view plus the advanced entries. Out-of-range Python integers and host index lists are typed
  errors there, before any GPU work. The broadcast index dimensions go where numpy puts them: where the
  advanced entries (integers count as advanced once an array is present) sit together, else first.
* Basic indexing (ints, slices of any step, ``...``, ``None``) is a lazy strided view: it fuses into its
  consumer and composes with other views (vyre/array/_views.py).
* Integer arrays (vyre arrays, lists; with ints and slices, numpy's placement rules) and ``take`` /
  ``take_along_axis`` gather in one kernel (vyre/array/_kernels/gather.py; pending inputs fused in); the
  result is materialised. Index
  values count back from the end when negative and are clamped into the axis when out of range (checking
  would need a download); Python ints and host lists out of range raise DispatchError.
* A boolean mask downloads the mask (the result's shape depends on it), then gathers.
* ``x[basic key] = value`` writes into x's own buffer (one kernel over the region only); when a pending
  expression (or a view) still reads the old values, x gets a new buffer instead (copy + write, one
  submission), the same rule as the in-place operators: pending work always sees the values it was
  recorded against. ``x[mask] = value`` (also ``x[mask, ...]``, ``x[:, mask]``, ``x[..., mask]``; a scalar,
  a row, or one value per True entry) is vyre/array/_mask_assign.py: a gather driven by the mask's prefix
  sum, then a ``where``, committed the same way. ``x[integer arrays] = value`` scatters with one writer per
  destination element (vyre/array/_kernels/index_assign.py): where an index repeats, the last entry's
  value stays, as numpy's.
"""

from __future__ import annotations

import operator
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from ..backends import recording
from ..errors import (
    ArgumentTypeError,
    DeviceMismatchError,
    IndexOutOfRangeError,
    InvalidArgumentError,
    UnsupportedDTypeError,
)
from . import _dtypes as D
from ._array import Array
from ._creation import arange, asarray
from ._elementwise import broadcast_together, is_scalar
from ._kernels.fused import Plan
from ._kernels.gather import MAX_STORAGE, copy_step, gather, materialised, n_buffers, plan_nodes, scatter_step
from ._kernels.index_assign import index_scatter_steps
from ._kernels.index_maps import broadcast_view, strides_of
from ._kernels.nodes import Leaf, Map, Node, Scalar
from ._mask_assign import is_mask_key, mask_assign
from ._views import axis_view, broadcast_to, normalize_axis, reshape

if TYPE_CHECKING:
    from ..backends.base import Backend

# ---- parsing a key -------------------------------------------------------------------------------

@dataclass
class Parsed:
    """``shape``/``start``/``dims``: the basic view (see _views.axis_view); ``adv``: (view dimension,
    integer array) per integer-array entry; ``front``: whether the broadcast index dimensions go first (the
    advanced entries are not adjacent), else at ``at`` (the view's dimensions before them)."""

    shape: list[int] = field(default_factory=list)
    start: list[int] = field(default_factory=list)
    dims: list[tuple[int | None, int]] = field(default_factory=list)
    adv: list[tuple[int, Array]] = field(default_factory=list)
    at: int = 0
    front: bool = False
    base: tuple[int, ...] = ()  # the shape x is read as: x's, with the axes each boolean mask covers merged


_BAD = "index with ints, slices, ..., None, integer arrays (vyre arrays or lists) or a boolean mask"


def _host_index(k: Any) -> tuple[str, Any]:
    host = np.asarray(k)
    if host.dtype == np.bool_:
        return "mask", host
    if host.size == 0:
        host = host.astype(np.int32)
    if host.dtype.kind not in "iu":
        raise ArgumentTypeError(f"cannot index with a list/array of {host.dtype}", fix=_BAD)
    return "host", host


def _entry(k: Any, device: Backend) -> tuple[str, Any]:
    if k is Ellipsis:
        return "ell", None
    if k is None:
        return "new", 1
    if isinstance(k, (bool, np.bool_)):
        return "new", int(bool(k))
    if isinstance(k, slice):
        return "slice", k
    if isinstance(k, Array):
        if k.dtype == np.bool_:
            return ("new", int(bool(k))) if k.ndim == 0 else ("mask", k)
        if k.dtype.kind not in "iu":
            raise UnsupportedDTypeError(f"cannot index with a {k.dtype} array", fix="astype(int32) the index array")
        if k.device is not device:
            raise DeviceMismatchError("index array on another backend", fix="move it with idx.to_device(x.device)")
        return "arr", k
    if isinstance(k, (list, np.ndarray)):
        return _host_index(k)
    try:
        return "int", operator.index(k)
    except TypeError:
        raise ArgumentTypeError(f"cannot index with {type(k).__name__}", fix=_BAD) from None


def parse(x: Array, key: Any) -> Parsed:
    """The basic view and advanced entries of ``x[key]`` (see :class:`Parsed`)."""
    items = key if isinstance(key, tuple) else (key,)
    entries = [_entry(k, x.device) for k in items]
    if sum(1 for kind, _ in entries if kind == "ell") > 1:
        raise InvalidArgumentError("an index can only have a single ellipsis ('...')", fix="keep one '...'")
    used = sum(v.ndim if kind == "mask" else (0 if kind in ("new", "ell") else 1) for kind, v in entries)
    if used > x.ndim:
        raise IndexOutOfRangeError(f"too many indices: {used} for an array of {x.ndim} dimension(s)",
                                   fix="index at most x.ndim axes")
    fill = [("slice", slice(None))] * (x.ndim - used)
    k_ell = next((j for j, (kind, _) in enumerate(entries) if kind == "ell"), len(entries))
    entries = entries[:k_ell] + fill + entries[k_ell + 1:]
    # a boolean mask becomes one integer array of its flat nonzero positions (a download: the shape depends
    # on it) over the axes it covers, merged into one (x is read as shape ``base``): one index buffer per
    # mask, whatever its number of dimensions
    expanded: list[tuple[str, Any]] = []
    base: list[int] = []
    ax = 0
    for kind, v in entries:
        if kind == "mask":
            host = np.asarray(v) if isinstance(v, Array) else v
            if tuple(host.shape) != x.shape[ax: ax + host.ndim]:
                raise IndexOutOfRangeError(f"boolean index of shape {list(host.shape)} does not match the indexed "
                                           f"dimensions {list(x.shape[ax: ax + host.ndim])}",
                                           fix="use a mask of exactly the shape of the axes it indexes")
            if host.size > np.iinfo(np.int32).max:
                raise InvalidArgumentError(f"a boolean mask of {host.size} elements is over the int32 index range",
                                           fix="index fewer elements at a time")
            expanded.append(("arr", asarray(np.flatnonzero(host).astype(np.int32), device=x.device)))
            base.append(int(host.size))
            ax += host.ndim
            continue
        if kind == "host":
            n = x.shape[ax]
            if v.size and (v.min() < -n or v.max() >= n):
                raise IndexOutOfRangeError(f"index {int(v.max()) if v.max() >= n else int(v.min())} is out of bounds "
                                           f"for axis {ax} of size {n}", fix=f"use indices in [{-n}, {n - 1}]")
            kind, v = "arr", asarray(v.astype(np.int32), device=x.device)
        expanded.append((kind, v))
        if kind != "new":
            base.append(x.shape[ax])
            ax += 1
    p = Parsed(start=[0] * len(base), base=tuple(base))
    has_arrays = any(kind == "arr" for kind, _ in expanded)
    ax = 0
    adv_pos: list[int] = []
    for pos, (kind, v) in enumerate(expanded):
        if kind == "new":
            p.dims.append((None, 1))
            p.shape.append(v)
            continue
        n = base[ax]
        if kind == "int":
            if not -n <= v < n:
                raise IndexOutOfRangeError(f"index {v} is out of bounds for axis {ax} of size {n}",
                                           fix=f"use an index in [{-n}, {n - 1}]")
            p.start[ax] = v % n
            if has_arrays:
                adv_pos.append(pos)
                if not adv_pos[:-1]:
                    p.at = len(p.dims)
        elif kind == "slice":
            try:
                lo, hi, step = v.indices(n)
            except (ValueError, TypeError) as exc:
                bad = ArgumentTypeError if isinstance(exc, TypeError) else InvalidArgumentError
                raise bad(f"bad slice {v!r}: {exc}", fix="use int bounds and a non-zero step") from None
            length = len(range(lo, hi, step))
            p.start[ax] = lo if length else 0
            p.dims.append((ax, step))
            p.shape.append(length)
        else:  # an integer array: the view keeps the whole axis, the gather picks from it
            if n == 0 and v.size:
                raise IndexOutOfRangeError(f"cannot take elements of axis {ax}: it has size 0",
                                           fix="index a non-empty axis")
            if not adv_pos:
                p.at = len(p.dims)
            adv_pos.append(pos)
            p.adv.append((len(p.dims), v))
            p.dims.append((ax, 1))
            p.shape.append(n)
        ax += 1
    p.front = bool(adv_pos) and adv_pos != list(range(adv_pos[0], adv_pos[0] + len(adv_pos)))
    return p


# ---- reading -------------------------------------------------------------------------------------

def _embed(idx: Array, out: tuple[int, ...], at: int, bshape: tuple[int, ...]) -> Array:
    """``idx`` (broadcastable to ``bshape``) as a lazy view of shape ``out`` whose dimensions
    ``at .. at + len(bshape)`` are the broadcast index dimensions (the others broadcast)."""
    dims: list[tuple[int | None, int]] = []
    lead = len(bshape) - idx.ndim
    for d in range(len(out)):
        t = d - at
        a = t - lead
        dims.append((a, 1) if 0 <= t < len(bshape) and a >= 0 and idx.shape[a] != 1 else (None, 1))
    return axis_view(idx, out, (0,) * idx.ndim, dims)


def getitem(x: Array, key: Any) -> Array:
    """``x[key]`` (see the module docstring)."""
    p = parse(x, key)
    if p.base != x.shape:  # a boolean mask's axes read as one (see parse)
        x = reshape(x, p.base)
    view = axis_view(x, p.shape, p.start, p.dims)
    if not p.adv:
        return view
    bshape = broadcast_together(*[a.shape for _, a in p.adv])
    adv_dims = {d for d, _ in p.adv}
    rest = [d for d in range(len(p.shape)) if d not in adv_dims]
    at = 0 if p.front else p.at
    out = tuple(p.shape[d] for d in rest[:at]) + bshape + tuple(p.shape[d] for d in rest[at:])
    spec: list[tuple[str, int]] = []
    j = 0
    for d in range(len(p.shape)):
        if d in adv_dims:
            spec.append(("idx", j))
            j += 1
        else:
            k = rest.index(d)
            spec.append(("out", k if k < at else k + len(bshape)))
    return gather(view, out, spec, [_embed(a, out, at, bshape) for _, a in p.adv])


def take(x: Array, indices: Array, /, *, axis: int | None = None) -> Array:
    """Elements of ``x`` at ``indices`` (an integer array) along ``axis`` (optional for a 1-D ``x``):
    one kernel, materialised. Negative indices count from the end; out-of-range ones are clamped."""
    _check_index_array(x, indices, "take")
    if axis is None:
        if x.ndim != 1:
            raise InvalidArgumentError(f"take: axis is required for a {x.ndim}-D array", fix="pass axis=...")
        axis = 0
    ax = normalize_axis(axis, x.ndim, "take")
    if x.shape[ax] == 0 and indices.size:
        raise IndexOutOfRangeError(f"take: axis {ax} has size 0", fix="take from a non-empty axis")
    out = x.shape[:ax] + indices.shape + x.shape[ax + 1:]
    spec = [("out", k) for k in range(ax)] + [("idx", 0)] + \
           [("out", k + indices.ndim - 1) for k in range(ax + 1, x.ndim)]
    return gather(x, out, spec, [_embed(indices, out, ax, indices.shape)])


def take_along_axis(x: Array, indices: Array, /, *, axis: int = -1) -> Array:
    """``x`` picked along ``axis`` by ``indices`` (same number of dimensions; the other axes broadcast):
    one kernel, materialised. Negative indices count from the end; out-of-range ones are clamped."""
    _check_index_array(x, indices, "take_along_axis")
    if indices.ndim != x.ndim:
        raise InvalidArgumentError(f"take_along_axis: indices have {indices.ndim} dimension(s), x has {x.ndim}",
                                   fix="give indices as many dimensions as x (size 1 broadcasts)")
    ax = normalize_axis(axis, x.ndim, "take_along_axis")
    other = broadcast_together(x.shape[:ax] + x.shape[ax + 1:], indices.shape[:ax] + indices.shape[ax + 1:])
    out = other[:ax] + (indices.shape[ax],) + other[ax:]
    if x.shape[ax] == 0 and 0 not in out:
        raise IndexOutOfRangeError(f"take_along_axis: axis {ax} has size 0", fix="take from a non-empty axis")
    spec = [("idx", 0) if k == ax else ("out", k) for k in range(x.ndim)]
    return gather(x, out, spec, [broadcast_to(indices, out)])


def _check_index_array(x: Any, indices: Any, what: str) -> None:
    if not isinstance(x, Array) or not isinstance(indices, Array):
        raise ArgumentTypeError(f"{what}: x and indices must be vyre arrays", fix="convert with asarray first")
    if indices.dtype.kind not in "iu":
        raise UnsupportedDTypeError(f"{what}: indices must be integers, not {indices.dtype}", fix="astype(int32)")
    if indices.device is not x.device:
        raise DeviceMismatchError(f"{what}: x and indices on two backends", fix="move one with to_device")


# ---- assignment -----------------------------------------------------------------------------------

def _value_node(x: Array, value: Any, shape: tuple[int, ...]) -> Node:
    """``value`` (an array or a Python scalar) as a node of ``shape`` and x's dtype."""
    if isinstance(value, np.generic):
        value = value.item()
    if is_scalar(value):
        D.check_scalar(value, x.dtype, "setitem")
        return Scalar(value, x.dtype)
    if not isinstance(value, Array):
        raise ArgumentTypeError(f"setitem: cannot assign a {type(value).__name__}",
                                fix="assign a vyre array or a Python scalar (asarray converts)")
    if value.device is not x.device:
        raise DeviceMismatchError("setitem: value on another backend", fix="move it with value.to_device(x.device)")
    if value.dtype != x.dtype and not D.can_cast(value.dtype, x.dtype):
        raise UnsupportedDTypeError(f"setitem: cannot store {value.dtype} values in a {x.dtype} array",
                                    fix=f"convert the value first (value.astype({x.dtype}))")
    if broadcast_together(value.shape, shape) != shape:
        raise InvalidArgumentError(f"setitem: a value of shape {list(value.shape)} does not broadcast to the indexed "
                                   f"shape {list(shape)}", fix="give a value broadcastable to x[key].shape")
    if n_buffers(value._node()) > MAX_STORAGE - 2:  # the scatter also binds its offset and x
        value = materialised(value)
    node = value._node()
    if value.dtype != x.dtype:
        node = Map("astype", (node,), x.dtype, node.shape)
    return broadcast_view(node, shape)


def _reads(node: Node, x: Array) -> bool:
    """Whether ``node`` reads x's buffer (a leaf of it, or a leaf of x itself)."""
    todo = [node]
    while todo:
        n = todo.pop()
        if isinstance(n, Leaf) and n.buf is x._buf:
            return True
        todo.extend(n.children())
    return False


def setitem(x: Array, key: Any, value: Any) -> None:
    """``x[key] = value`` (see the module docstring)."""
    if is_mask_key(key):
        return mask_assign(x, key, value)
    p = parse(x, key)
    if p.adv:
        return _index_assign(x, key, value)
    shape = tuple(p.shape)
    node = _value_node(x, value, shape)  # checked before any GPU work
    st = strides_of(x.shape)
    offset = sum(s * t for s, t in zip(p.start, st))
    strides = tuple(0 if a is None else step * st[a] for a, step in p.dims)
    _commit(x, node, lambda plan, dst: scatter_step(plan, dst, x.size, x.dtype, (shape, offset, strides), node))


def _index_assign(x: Array, key: Any, value: Any) -> None:
    """``x[key] = value`` with integer arrays in ``key``: the flat position in x of every element ``x[key]``
    names is ``arange(x.size).reshape(x.shape)[key]`` (the reading rules: negative values count from the
    end, out-of-range ones are clamped), then one writer per position (vyre/array/_kernels/index_assign.py:
    where an index repeats, the last entry's value stays, as numpy's)."""
    if x.size > np.iinfo(np.int32).max:
        raise InvalidArgumentError(f"setitem: an array of {x.size} elements is over the int32 index range",
                                   fix="assign through basic slices, or split the array")
    flat = reshape(arange(x.size, dtype=D.int32, device=x.device), x.shape)
    targets = getitem(flat, key)
    node = _value_node(x, value, targets.shape)  # checked before any GPU work
    where = targets._node()
    _commit(x, node, lambda plan, dst: index_scatter_steps(plan, dst, x.size, x.dtype, where, node))


def _commit(x: Array, node: Node, write: Callable[[Plan, Any], None]) -> None:
    """Run ``write(plan, dst)`` into x's own buffer, or, when anyone besides x still reads it (a pending
    leaf, a view, another array, or ``node`` itself), into a copy that becomes x's buffer."""
    x.evaluate()
    buf = x._buf
    assert buf is not None
    # does anyone besides x (a pending leaf, a view, another array) hold the buffer? Compared with a probe
    # held the same way (one container slot and one local name), so the count is independent of the
    # interpreter's reference accounting
    probe = object()
    holder = [probe]
    shared = sys.getrefcount(buf) > sys.getrefcount(probe) or _reads(node, x)
    del holder
    plan = plan_nodes([node], x.device)
    target: Array | None = None
    if shared:
        target = Array(x.shape, x.dtype, x.device)
        copy_step(plan, buf.handle, target._allocate(), x.size, x.dtype)
    write(plan, target._allocate() if target is not None else buf.handle)
    plan.run()
    if target is not None:
        recording.rebinding(x, x._buf)
        x._buf = target._buf  # pending readers of the old values keep the old buffer


__all__ = ["take", "take_along_axis"]
