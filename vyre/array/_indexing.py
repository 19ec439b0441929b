"""Indexing: ``x[key]``, ``x[key] = value``, ``take`` and ``take_along_axis``.

* Basic indexing (ints, slices of any step, ``...``, ``None``) is a lazy strided view: it fuses into its
  consumer and composes with other views (vyre/array/_manip_views.py).
* Integer arrays (vyre arrays, lists; with ints and slices, numpy's placement rules) and ``take`` /
  ``take_along_axis`` gather in one kernel (pending inputs fused in); the result is materialised. Index
  values count back from the end when negative and are clamped into the axis when out of range (checking
  would need a download); Python ints and host lists out of range raise DispatchError.
* A boolean mask downloads the mask (the result's shape depends on it), then gathers.
* ``x[basic key] = value`` writes into x's own buffer (one kernel over the region only); when a pending
  expression (or a view) still reads the old values, x gets a new buffer instead (copy + write, one
  submission), the same rule as the in-place operators: pending work always sees the values it was
  recorded against. ``x[mask] = scalar`` is an elementwise ``where`` committed the same way. Assignment
  through integer arrays is not supported (duplicate indices would race on a GPU).
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np

from ..errors import DispatchError, UnsupportedDTypeError
from . import _dtypes as D
from ._array import Array
from ._elementwise import _is_scalar, broadcast_shapes
from ._expr import Leaf, Map, Node, Scalar, broadcast_view, strides_of
from ._indexing_kernels import MAX_STORAGE, copy_step, gather, materialised, n_buffers, plan_nodes, scatter_step
from ._indexing_key import parse
from ._manip_views import axis_view, normalize_axis


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
    if p.base != x.shape:  # a boolean mask's axes read as one (see _indexing_key.parse)
        from ._views import reshape
        x = reshape(x, p.base)
    view = axis_view(x, p.shape, p.start, p.dims)
    if not p.adv:
        return view
    bshape = broadcast_shapes(*[a.shape for _, a in p.adv])
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
            raise DispatchError(f"take: axis is required for a {x.ndim}-D array", fix="pass axis=...")
        axis = 0
    ax = normalize_axis(axis, x.ndim, "take")
    if x.shape[ax] == 0 and indices.size:
        raise DispatchError(f"take: axis {ax} has size 0", fix="take from a non-empty axis")
    out = x.shape[:ax] + indices.shape + x.shape[ax + 1:]
    spec = [("out", k) for k in range(ax)] + [("idx", 0)] + \
           [("out", k + indices.ndim - 1) for k in range(ax + 1, x.ndim)]
    return gather(x, out, spec, [_embed(indices, out, ax, indices.shape)])


def take_along_axis(x: Array, indices: Array, /, *, axis: int = -1) -> Array:
    """``x`` picked along ``axis`` by ``indices`` (same number of dimensions; the other axes broadcast):
    one kernel, materialised. Negative indices count from the end; out-of-range ones are clamped."""
    _check_index_array(x, indices, "take_along_axis")
    if indices.ndim != x.ndim:
        raise DispatchError(f"take_along_axis: indices have {indices.ndim} dimension(s), x has {x.ndim}",
                            fix="give indices as many dimensions as x (size 1 broadcasts)")
    ax = normalize_axis(axis, x.ndim, "take_along_axis")
    other = broadcast_shapes(x.shape[:ax] + x.shape[ax + 1:], indices.shape[:ax] + indices.shape[ax + 1:])
    out = other[:ax] + (indices.shape[ax],) + other[ax:]
    if x.shape[ax] == 0 and 0 not in out:
        raise DispatchError(f"take_along_axis: axis {ax} has size 0", fix="take from a non-empty axis")
    from ._views import broadcast_to
    spec = [("idx", 0) if k == ax else ("out", k) for k in range(x.ndim)]
    return gather(x, out, spec, [broadcast_to(indices, out)])


def _check_index_array(x: Any, indices: Any, what: str) -> None:
    if not isinstance(x, Array) or not isinstance(indices, Array):
        raise DispatchError(f"{what}: x and indices must be vyre arrays", fix="convert with asarray first")
    if indices.dtype.kind not in "iu":
        raise UnsupportedDTypeError(f"{what}: indices must be integers, not {indices.dtype}", fix="astype(int32)")
    if indices.device is not x.device:
        from ..errors import DeviceMismatchError
        raise DeviceMismatchError(f"{what}: x and indices on two backends", fix="move one with to_device")


# ---- assignment -----------------------------------------------------------------------------------

def _value_node(x: Array, value: Any, shape: tuple[int, ...]) -> Node:
    """``value`` (an array or a Python scalar) as a node of ``shape`` and x's dtype."""
    if isinstance(value, np.generic):
        value = value.item()
    if _is_scalar(value):
        D.check_scalar(value, x.dtype, "setitem")
        return Scalar(value, x.dtype)
    if not isinstance(value, Array):
        raise DispatchError(f"setitem: cannot assign a {type(value).__name__}",
                            fix="assign a vyre array or a Python scalar (asarray converts)")
    if value.device is not x.device:
        from ..errors import DeviceMismatchError
        raise DeviceMismatchError("setitem: value on another backend", fix="move it with value.to_device(x.device)")
    if value.dtype != x.dtype and not D.can_cast(value.dtype, x.dtype):
        raise UnsupportedDTypeError(f"setitem: cannot store {value.dtype} values in a {x.dtype} array",
                                    fix=f"convert the value first (value.astype({x.dtype}))")
    if broadcast_shapes(value.shape, shape) != shape:
        raise DispatchError(f"setitem: a value of shape {list(value.shape)} does not broadcast to the indexed "
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
    if _mask_only(key):
        return _mask_assign(x, key, value)
    p = parse(x, key)
    if p.adv:
        raise DispatchError("assignment through integer arrays is not supported (duplicate indices would race)",
                            fix="build the result with where(...), or assign basic slices")
    shape = tuple(p.shape)
    node = _value_node(x, value, shape)  # checked before any GPU work
    x.evaluate()
    st = strides_of(x.shape)
    offset = sum(s * t for s, t in zip(p.start, st))
    strides = tuple(0 if a is None else step * st[a] for a, step in p.dims)
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
    dst = target._allocate() if target is not None else buf.handle
    scatter_step(plan, dst, x.size, x.dtype, (shape, offset, strides), node)
    plan.run()
    if target is not None:
        x._buf = target._buf  # pending readers of the old values keep the old buffer


def _mask_only(key: Any) -> bool:
    items = key if isinstance(key, tuple) else (key,)
    masks = [k for k in items if k is not Ellipsis]
    return len(masks) == 1 and (len(items) == 1 or items[-1] is Ellipsis) and (
        (isinstance(masks[0], Array) and masks[0].dtype == np.bool_)
        or (isinstance(masks[0], np.ndarray) and masks[0].dtype == np.bool_))


def _mask_assign(x: Array, key: Any, value: Any) -> None:
    """``x[mask] = value`` for a scalar (or 0-d array) value: ``where(mask, value, x)``, committed in place."""
    from ._creation import asarray
    from ._functions import where
    from ._views import reshape
    items = key if isinstance(key, tuple) else (key,)
    mask = items[0] if isinstance(items[0], Array) else asarray(items[0], device=x.device)
    if mask.shape != x.shape[:mask.ndim]:
        raise DispatchError(f"setitem: boolean index of shape {list(mask.shape)} does not match the indexed "
                            f"dimensions {list(x.shape[:mask.ndim])}", fix="use a mask of the leading axes' shape")
    if isinstance(value, Array) and value.ndim != 0:
        raise DispatchError("setitem: a boolean mask takes a scalar or 0-d array value",
                            fix="use where(mask, values, x) for array values")
    _value_node(x, value, ())  # the dtype checks
    if isinstance(value, Array) and value.dtype != x.dtype:
        value = value.astype(x.dtype)
    m = reshape(mask, mask.shape + (1,) * (x.ndim - mask.ndim))
    x._inplace(where(m, value, x))


__all__ = ["take", "take_along_axis"]
