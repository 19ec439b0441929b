"""Parsing an indexing key against a shape: integers, slices (any step), ``...``, ``None`` and Python
bools (new axes of size 1 / 0), integer arrays (vyre arrays, lists, numpy arrays) and boolean masks.

The result is the basic view (per output dimension, which input axis it walks and with what step, and
where every input axis starts) plus the advanced entries (integer arrays, each walking a full axis of the
view, to be gathered). Out-of-range Python integers and host index lists are typed errors here, before
any GPU work. Placement of the broadcast index dimensions follows numpy: where the advanced entries
(integers count as advanced once an array is present) sit together, else first.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import DispatchError, UnsupportedDTypeError
from ._array import Array


@dataclass
class Parsed:
    """``shape``/``start``/``dims``: the basic view (see _manip_views.axis_view); ``adv``: (view dimension,
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
        raise DispatchError(f"cannot index with a list/array of {host.dtype}", fix=_BAD)
    return "host", host


def _entry(k: Any, device: Any) -> tuple[str, Any]:
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
            from ..errors import DeviceMismatchError
            raise DeviceMismatchError("index array on another backend", fix="move it with idx.to_device(x.device)")
        return "arr", k
    if isinstance(k, (list, np.ndarray)):
        return _host_index(k)
    try:
        return "int", operator.index(k)
    except TypeError:
        raise DispatchError(f"cannot index with {type(k).__name__}", fix=_BAD) from None


def parse(x: Array, key: Any) -> Parsed:
    """The basic view and advanced entries of ``x[key]`` (see :class:`Parsed`)."""
    from ._creation import asarray
    items = key if isinstance(key, tuple) else (key,)
    entries = [_entry(k, x.device) for k in items]
    if sum(1 for kind, _ in entries if kind == "ell") > 1:
        raise DispatchError("an index can only have a single ellipsis ('...')", fix="keep one '...'")
    used = sum(v.ndim if kind == "mask" else (0 if kind in ("new", "ell") else 1) for kind, v in entries)
    if used > x.ndim:
        raise DispatchError(f"too many indices: {used} for an array of {x.ndim} dimension(s)",
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
                raise DispatchError(f"boolean index of shape {list(host.shape)} does not match the indexed "
                                    f"dimensions {list(x.shape[ax: ax + host.ndim])}",
                                    fix="use a mask of exactly the shape of the axes it indexes")
            if host.size > np.iinfo(np.int32).max:
                raise DispatchError(f"a boolean mask of {host.size} elements is over the int32 index range",
                                    fix="index fewer elements at a time")
            expanded.append(("arr", asarray(np.flatnonzero(host).astype(np.int32), device=x.device)))
            base.append(int(host.size))
            ax += host.ndim
            continue
        if kind == "host":
            n = x.shape[ax]
            if v.size and (v.min() < -n or v.max() >= n):
                raise DispatchError(f"index {int(v.max()) if v.max() >= n else int(v.min())} is out of bounds "
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
                raise DispatchError(f"index {v} is out of bounds for axis {ax} of size {n}",
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
                raise DispatchError(f"bad slice {v!r}: {exc}", fix="use int bounds and a non-zero step") from None
            length = len(range(lo, hi, step))
            p.start[ax] = lo if length else 0
            p.dims.append((ax, step))
            p.shape.append(length)
        else:  # an integer array: the view keeps the whole axis, the gather picks from it
            if n == 0 and v.size:
                raise DispatchError(f"cannot take elements of axis {ax}: it has size 0", fix="index a non-empty axis")
            if not adv_pos:
                p.at = len(p.dims)
            adv_pos.append(pos)
            p.adv.append((len(p.dims), v))
            p.dims.append((ax, 1))
            p.shape.append(n)
        ax += 1
    p.front = bool(adv_pos) and adv_pos != list(range(adv_pos[0], adv_pos[0] + len(adv_pos)))
    return p


__all__ = ["Parsed", "parse"]
