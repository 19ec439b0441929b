"""Set functions of the standard (2024.12): ``unique_values``, ``unique_counts``, ``unique_inverse``,
``unique_all``. Values come out sorted ascending (the standard leaves the order unspecified; numpy sorts);
index results are int32, the default index dtype here.

Strategy (kernels in vyre/array/_kernels/sets.py): one submission runs the stable radix argsort of the flattened
array's order keys (the pending expression of ``x`` fused into the key computation), flags the sorted
elements that start a group, and scans the flags; then one 4-byte download, the number of distinct values
(the output size depends on the data, as with ``nonzero``); then one submission scatters the values, the
inverse indices, each group's first index and its count. Equality is the sort's: ``-0.0`` equals ``+0.0``
(the value kept is the first in the stable order), and every NaN is distinct (a group of its own, NaNs
last), as the standard asks. Complex values (:func:`_unique_complex`) are composed of array functions
instead, ordered as numpy's sort orders them (real part, then imaginary part).
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from ..errors import UnsupportedDTypeError
from . import _dtypes as D
from ._array import Array, check_array
from ._complex import imag, real
from ._creation import asarray, ones, zeros
from ._elementwise import isnan
from ._kernels import sets as K
from ._kernels.fused import plan
from ._kernels.nodes import Map
from ._kernels.pipeline import run_pipeline_on
from ._manipulation import concat
from ._searching import nonzero
from ._sorting import argsort
from ._statistical import cumulative_sum
from ._views import reshape


class UniqueAllResult(NamedTuple):
    values: Array
    indices: Array
    inverse_indices: Array
    counts: Array


class UniqueCountsResult(NamedTuple):
    values: Array
    counts: Array


class UniqueInverseResult(NamedTuple):
    values: Array
    inverse_indices: Array


def _unique(x: Any, what: str) -> UniqueAllResult:
    x = check_array(x, what)
    if x.dtype.kind == "c" and x.size > 1:
        return _unique_complex(x)
    if x.dtype.kind not in "biufc":
        raise UnsupportedDTypeError(f"{what} needs a real-valued or bool array, got {x.dtype}", fix="astype first")
    n, dev = x.size, x.device
    flat = reshape(x, (n,))
    if n <= 1:  # nothing to sort: the values are themselves (a new array)
        return UniqueAllResult(D.astype(flat, x.dtype, copy=True), zeros((n,), dtype=D.int32, device=dev),
                               zeros(x.shape, dtype=D.int32, device=dev), ones((n,), dtype=D.int32, device=dev))
    if flat is not x and not x.is_lazy:  # a materialised array is row-major: read its buffer as it is
        vals = Array((n,), x.dtype, dev)
        vals._buf = x._buf
    else:
        vals = flat  # pending: evaluated in the sort's submission
    if x.dtype.itemsize == 8:  # the two words of the u64 order keys (vyre/array/_kernels/sort64.py)
        keys = [Array((n,), D.uint32, dev, Map(f"search_key64_{w}", (vals._node(),), D.uint32, (n,)))
                for w in ("lo", "hi")]
    else:
        keys = [Array((n,), D.uint32, dev, Map("search_key", (vals._node(),), D.uint32, (n,)))]
    order, incl = run_pipeline_on(K.group_pipeline(n, x.dtype.str), [*keys, vals])
    last = dev.download_resident_ranges([(incl.handle, (n - 1) * 4, 4)])[0]
    count = int(last.view(np.uint32)[0])
    values = Array((count,), x.dtype, dev)
    inverse = Array(x.shape, D.int32, dev)
    starts = Array((count,), D.uint32, dev)
    indices = Array((count,), D.int32, dev)
    counts = Array((count,), D.int32, dev)
    p = plan([], dev)
    grid = (-(-n // K.WG), 1, 1)
    p.steps.append((K.scatter_program(x.dtype.str), [vals.handle, order.handle, incl.handle, values._allocate(),
                                                     inverse._allocate(), starts._allocate(), indices._allocate()],
                    grid))
    p.steps.append((K.counts_program(), [starts.handle, order.handle, counts._allocate()],
                    (-(-count // K.WG), 1, 1)))
    p.run()
    return UniqueAllResult(values, indices, inverse, counts)


def _unique_complex(x: Array) -> UniqueAllResult:
    """Complex values, composed of array functions: stable argsorts by the imaginary part, the real part,
    then whether a part is NaN (NaNs last, as numpy) give the lexicographic order; a group starts where
    either part differs from the previous element's (so -0.0 equals +0.0) or at a NaN (each its own group);
    one download, the number of groups (``nonzero``)."""
    n, dev = x.size, x.device
    flat = reshape(x, (n,))
    re, im = real(flat), imag(flat)
    nan = isnan(re) | isnan(im)
    order = argsort(im)
    order = order[argsort(re[order])]
    order = order[argsort(D.astype(nan[order], D.int32))]
    s_re, s_im = re[order], im[order]
    differs = (s_re[1:] != s_re[:-1]) | (s_im[1:] != s_im[:-1])
    new = concat([ones((1,), dtype=D.bool, device=dev), differs]) | nan[order]
    starts = nonzero(new)[0]
    indices = order[starts]
    ends = concat([starts[1:], asarray([n], dtype=D.int32, device=dev)])
    inverse = zeros((n,), dtype=D.int32, device=dev)
    inverse[order] = cumulative_sum(D.astype(new, D.int32)) - 1  # a permutation: one writer each
    return UniqueAllResult(flat[indices], indices, reshape(inverse, x.shape), ends - starts)


def unique_all(x: Array, /) -> UniqueAllResult:
    """The distinct values of ``x`` (flattened, sorted), the index of each one's first occurrence in the
    flattened ``x``, the inverse indices (shape of ``x``: ``values[inverse_indices]`` rebuilds ``x``) and
    the counts. NaNs are distinct: each appears once with count 1."""
    return _unique(x, "unique_all")


def unique_counts(x: Array, /) -> UniqueCountsResult:
    """The distinct values of ``x`` (sorted) and how often each occurs (int32)."""
    r = _unique(x, "unique_counts")
    return UniqueCountsResult(r.values, r.counts)


def unique_inverse(x: Array, /) -> UniqueInverseResult:
    """The distinct values of ``x`` (sorted) and, for each element of ``x``, the index (int32) of its
    value among them (shape of ``x``)."""
    r = _unique(x, "unique_inverse")
    return UniqueInverseResult(r.values, r.inverse_indices)


def unique_values(x: Array, /) -> Array:
    """The distinct values of ``x`` (flattened, sorted ascending; each NaN kept)."""
    return _unique(x, "unique_values").values


__all__ = ["unique_all", "unique_counts", "unique_inverse", "unique_values"]
