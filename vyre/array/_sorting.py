"""Sorting functions of the standard (2024.12): ``sort`` and ``argsort``, always stable, in numpy's order
(-0.0 equals +0.0, NaN last; first when descending). Indices are int32.

The axis is moved last (a lazy view); the order keys (vyre/array/_kernels/sort.py) are sorted with
sort.radix_pairs' stable passes carrying the flat index; several rows get a second stable pass on the row
id (a lexicographic (row, key) sort, one submission for the whole batch); ``sort`` then gathers the values
through the order (a second submission), so -0.0/+0.0 and NaN payloads keep their bits and stable order.
``sort`` of one row takes a shorter path with no index: bool/int32/uint32 keys sorted alone (equal keys
are equal values; the values are recomputed from the keys, lazily), float32 keys carrying the values'
bits. Bool keys take one digit pass, not eight. The input's pending expression fuses into the key
computation and the gather.
"""

from __future__ import annotations

from typing import Any

from ..errors import InvalidArgumentError, UnsupportedDTypeError
from . import _dtypes as D
from ._array import Array, check_array
from ._creation import zeros
from ._kernels.fused import plan_for_node
from ._kernels.nodes import Map, collect
from ._kernels.pipeline import run_pipeline_on
from ._kernels.sort import argsort_pipeline, gather_program, key_bits, keys_pipeline, values_pipeline
from ._kernels.sort64 import argsort64_pipeline
from ._searching import as_int32, axis_of, fused_node, u32_of
from ._views import permute_dims


def _prepare(x: Array, axis: Any, what: str) -> tuple[Array, int]:
    """(x with ``axis`` moved last, that axis), after the argument checks."""
    x = check_array(x, what)
    if x.dtype.kind not in "biuf":
        raise UnsupportedDTypeError(f"{what} needs a real-valued array, got {x.dtype}", fix="astype first")
    if x.ndim == 0:
        raise InvalidArgumentError(f"{what} of a 0-d array", fix="sort an array of at least one dimension")
    ax = axis_of(axis, x.ndim, what)
    perm = [d for d in range(x.ndim) if d != ax] + [ax]
    return permute_dims(x, perm), ax


def _order(xt: Array, descending: bool) -> Array | None:
    """The int32 order within the last axis' rows of ``xt``, or None when trivial."""
    n = xt.shape[-1]
    if xt.size == 0 or n == 1:
        return None
    if xt.dtype.itemsize == 8:  # two radix sorts, low word then high word (vyre/array/_kernels/sort64.py)
        suffix = "_desc" if descending else ""
        lo, hi = u32_of(xt, f"search_key64_lo{suffix}"), u32_of(xt, f"search_key64_hi{suffix}")
        order = run_pipeline_on(argsort64_pipeline(xt.size, n), [lo, hi])[0]
        return as_int32(order, xt.shape)
    keys = u32_of(xt, "sort_key_desc" if descending else "sort_key")
    order = run_pipeline_on(argsort_pipeline(xt.size, n, key_bits(xt.dtype)), [keys])[0]
    return as_int32(order, xt.shape)


def _sort_row(xt: Array, descending: bool) -> Array | None:
    """``sort`` of ``xt``'s one row (its last axis; the others are 1) without an index (see the module
    docstring), or None for the dtypes that take the general path."""
    if xt.dtype not in (D.bool, D.int32, D.uint32, D.float32):
        return None
    key = u32_of(xt, "sort_key_desc" if descending else "sort_key")
    bits = key_bits(xt.dtype)
    if xt.dtype != D.float32:
        (done,) = run_pipeline_on(keys_pipeline(xt.size, bits), [key])
        op = "sort_unkey_desc" if descending else "sort_unkey"
        return Array(xt.shape, xt.dtype, xt.device, Map(op, (done._node(),), xt.dtype, xt.shape))
    # float32: the keys carry the values' bits (-0.0/+0.0 and NaN payloads as they were)
    (done,) = run_pipeline_on(values_pipeline(xt.size, bits), [key, u32_of(xt, "sort_bits")])
    out = Array(xt.shape, xt.dtype, xt.device)
    out._buf = done._buf  # the sorted bits, read as float32
    return out


def _back(a: Array, ax: int) -> Array:
    """Undo the move of ``ax`` to the last position (a lazy view)."""
    nd = a.ndim
    perm = [d for d in range(nd - 1)]
    perm.insert(ax, nd - 1)
    return permute_dims(a, perm)


def argsort(x: Array, /, *, axis: int = -1, descending: bool = False, stable: bool = True) -> Array:
    """Indices (int32) that sort ``x`` along ``axis``; always stable (equal values keep their order, also
    when descending). Floats in numpy's order: -0.0 equals +0.0, NaN last (first when descending)."""
    xt, ax = _prepare(x, axis, "argsort")
    order = _order(xt, descending)
    if order is None:
        order = zeros(xt.shape, dtype=D.int32, device=xt.device)
    return _back(order, ax)


def sort(x: Array, /, *, axis: int = -1, descending: bool = False, stable: bool = True) -> Array:
    """``x`` sorted along ``axis`` (stable; the order of :func:`argsort`); values keep their exact bits."""
    xt, ax = _prepare(x, axis, "sort")
    if xt.size == xt.shape[-1] > 1:
        fast = _sort_row(xt, descending)
        if fast is not None:
            return _back(fast, ax)
    order = _order(xt, descending)
    if order is None:
        return D.astype(x, x.dtype, copy=True)
    node = fused_node(xt)
    prog = gather_program(node, collect(node).key)
    p = plan_for_node(node, xt.device)
    out = Array(xt.shape, xt.dtype, xt.device)
    p.steps.append((prog, [*p.bind(node), order.handle, out._allocate()]))
    p.run()
    return _back(out, ax)


__all__ = ["sort", "argsort"]
