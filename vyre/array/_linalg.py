"""The standard's linear algebra: matmul (and ``@``), matrix_transpose, tensordot, vecdot (the main
namespace's functions), and the ``linalg`` extension (2024.12, re-exported by vyre/array/linalg.py), the
part that needs no matrix decomposition: cross, diagonal, matrix_norm, matrix_power, outer, trace,
vector_norm, built on the products, on views and on the reductions, so pending work fuses in.

* float32 products run the op library's tiled GEMM (vyre/ops/linalg/matmul.py): ``matmul`` for 2-D
  and for stacks multiplied by one matrix (the stack folds into M), ``matmul.batched`` otherwise; a
  product with a side <= 16 runs the thin kernel instead, and a long K into a few tiles is split along K
  (both with a fixed-order sum of the slices: vyre/array/_kernels/matmul.py's ``product_steps``);
  float16 runs ``matmul.f16``'s tiled kernel (f32 accumulation, one rounding), over the stack's batch on
  the grid's z axis when it does not fold (``build_f16_batched``; the simple kernel took 104 µs per
  attention product of a transformer step under autocast on the H200). int32/uint32 run the simple kernel
  (one invocation per output element, exact with wrap-around like numpy's int32).
* Operands are bound as they are when materialised and row-major in the needed shape (a reshape of a
  materialised array too); otherwise (pending expressions, transposes, broadcast batch dimensions) they
  are evaluated into contiguous buffers in the same submission as the product.
* vecdot fuses ``x1 * x2`` (broadcast, the axis moved last) into a reduction kernel: one invocation per
  result, summing in f32 for float16 and in the dtype otherwise.
* tensordot permutes and reshapes both operands to 2-D and calls the same product.
* diagonal: a strided view (stride N + 1 along the last two axes); trace sums it; outer:
  ``x1[:, None] * x2[None, :]``, lazy; cross: three lazy components joined by ``stack``;
  vector_norm / matrix_norm: ``abs``/powers fused into one reduction per pass (float32 sums);
  matrix_power: repeated squaring with ``matmul``.

The decompositions (cholesky, det, eigh, eigvalsh, inv, matrix_rank, pinv, qr, slogdet, solve, svd,
svdvals) run on the device: vyre/array/_linalg_solve.py, _linalg_qr.py, _linalg_eig.py; matrix_norm's
ord 2, -2 and 'nuc' use svdvals, matrix_power with n < 0 inv.
"""

from __future__ import annotations

import builtins
import math
import operator
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..errors import ArgumentTypeError, AxisError, InvalidArgumentError
from . import _dtypes as D
from ._array import Array
from ._array import check_array as _check
from ._complex import dispatch as complex_form
from ._creation import eye, zeros
from ._device import same_device
from ._elementwise import abs as _abs
from ._elementwise import broadcast_together, equal, multiply, not_equal, sqrt
from ._kernels.fused import plan, plan_for_node
from ._kernels.index_maps import Reshape, Strided, strides_of
from ._kernels.matmul import generic_program, product_steps, vecdot_program
from ._kernels.nodes import Leaf
from ._manipulation import stack
from ._searching import where
from ._statistical import max as _max
from ._statistical import min as _min
from ._statistical import normalize_axes
from ._statistical import sum as _sum
from ._views import broadcast_to, permute_dims, reshape

if TYPE_CHECKING:
    from ..backends.base import Backend

_MAX_U32 = 2**32 - 1
_Ord = int | float | str | None


def _operands(what: str, x1: Any, x2: Any) -> tuple[Any, Any]:
    """The common device and the promoted (numeric) dtype; typed errors before any GPU work."""
    for label, x in (("x1", x1), ("x2", x2)):
        if not isinstance(x, Array):
            raise ArgumentTypeError(f"{what}: {label} must be a vyre array, got {type(x).__name__}",
                                    fix="convert it first: vyre.array.asarray(value)")
    dev = same_device([x1, x2], what)
    dt = D.promote(x1.dtype, x2.dtype)
    if dt == D.bool:
        raise ArgumentTypeError(f"{what}: needs numeric arrays (got {x1.dtype} and {x2.dtype})",
                                fix="convert with astype(x, int32) or astype(x, float32)")
    return dev, dt


def _source(x: Array) -> Array:
    """``x`` as a materialised row-major array: itself, or for a reshape view of a materialised array an
    array over that buffer; a pending ``x`` stays pending (the plan evaluates it)."""
    node = x._expr
    if isinstance(node, Reshape) and isinstance(node.child, Leaf) and node.child.pending is None:
        r = Array(x.shape, x.dtype, x.device)
        r._buf = node.child.buf
        return r
    return x


def _sharing(shape: tuple[int, ...], dtype: Any, dev: Backend, owner: Array) -> Array:
    r = Array(shape, dtype, dev)
    r._buf = owner._buf
    return r


def _product(a: Array, b: Array, batch: tuple[int, ...], m: int, k: int, n: int, dt: Any, dev: Backend) -> Array:
    """``a @ b`` with ``a`` broadcastable to (*batch, m, k) and ``b`` to (*batch, k, n): a new
    materialised (*batch, m, n) array, one submission."""
    shape = (*batch, m, n)
    if math.prod(shape) == 0 or k == 0:
        return zeros(shape, dtype=dt, device=dev)
    a, b = D.astype(a, dt, copy=False), D.astype(b, dt, copy=False)
    nb = math.prod(batch)
    fold = math.prod(b.shape[:-2]) == 1  # one right matrix: the stack is one (nb*m, k) @ (k, n)
    a_full = (*batch, m, k)
    a = _source(a) if math.prod(a.shape) == math.prod(a_full) else broadcast_to(a, a_full)
    b = _source(b) if fold or math.prod(b.shape) == nb * k * n else broadcast_to(b, (*batch, k, n))
    for label, count in (("x1", nb * m * k), ("x2", (1 if fold else nb) * k * n), ("result", nb * m * n)):
        if count > _MAX_U32:
            raise InvalidArgumentError(f"matmul: the {label} has {count} elements, over the 2**32-1 vyre indexes",
                                       fix="split the product into smaller ones")
    out = Array(shape, dt, dev)
    p = plan([x for x in (a, b) if x.is_lazy], dev)
    handles = [a._allocate(), b._allocate(), out._allocate(zeroed=False)]  # both kernels write every element
    if dt in (D.float32, D.float16):
        product_steps(p, dt, fold, nb, m, k, n, handles)
    else:
        if fold and nb > 1:  # the simple kernel reads a stacked B: fold the stack into M instead
            nb, m = 1, nb * m
        p.steps.append((generic_program(dt, nb, m, k, n), handles))
    p.run()
    return out


def matmul(x1: Array, x2: Array, /) -> Array:
    """The matrix product (the standard's rules: 1-D operands are promoted to a row (x1) or a column
    (x2) and that dimension is removed from the result; stacks broadcast their batch dimensions)."""
    if isinstance(x1, Array) and isinstance(x2, Array) and "c" in (x1.dtype.kind, x2.dtype.kind):
        return complex_form("matmul", x1, x2)
    dev, dt = _operands("matmul", x1, x2)
    if x1.ndim == 0 or x2.ndim == 0:
        raise InvalidArgumentError("matmul: operands must have at least one dimension",
                                   fix="use multiply (or *) for scalars")
    a = x1 if x1.ndim > 1 else reshape(x1, (1, x1.shape[0]))
    b = x2 if x2.ndim > 1 else reshape(x2, (x2.shape[0], 1))
    (m, k), (k2, n) = a.shape[-2:], b.shape[-2:]
    if k != k2:
        raise InvalidArgumentError(f"matmul: shapes {list(x1.shape)} and {list(x2.shape)} do not line up "
                                   f"({k} != {k2})", fix="x1.shape[-1] must equal x2.shape[-2] (x2.shape[0] when 1-D)")
    batch = broadcast_together(a.shape[:-2], b.shape[:-2])
    out = _product(a, b, batch, m, k, n, dt, dev)
    final = (*batch, *((m,) if x1.ndim > 1 else ()), *((n,) if x2.ndim > 1 else ()))
    return out if final == out.shape else _sharing(final, dt, dev, out)


def matrix_transpose(x: Array, /) -> Array:
    """``x`` with its last two axes swapped (a lazy view; ``x.mT``)."""
    if not isinstance(x, Array):
        raise ArgumentTypeError(f"matrix_transpose: expected a vyre array, got {type(x).__name__}",
                                fix="convert it first: vyre.array.asarray(value)")
    return x.mT


def vecdot(x1: Array, x2: Array, /, *, axis: int = -1) -> Array:
    """The dot product of ``x1`` and ``x2`` along ``axis`` (counted from the last axis; the other axes
    broadcast, the contracted one must have the same size in both); complex: ``sum(conj(x1) * x2)``
    (vyre/array/_complex_reduce.py); integers too (exact, wrapping), float16 summed in float32."""
    if isinstance(x1, Array) and isinstance(x2, Array) and "c" in (x1.dtype.kind, x2.dtype.kind):
        return complex_form("vecdot", x1, x2, axis=axis)
    dev, dt = _operands("vecdot", x1, x2)
    if isinstance(axis, bool) or not isinstance(axis, int):
        raise ArgumentTypeError(f"vecdot: axis must be an int, got {axis!r}", fix="e.g. axis=-1")
    nd, low = max(x1.ndim, x2.ndim), min(x1.ndim, x2.ndim)
    # the standard counts the axis from the end of each array; a non-negative one is accepted only when
    # both arrays have the same rank (then it means the same axis of both)
    neg = axis if axis < 0 else (axis - nd if x1.ndim == x2.ndim else 0)
    if low == 0 or not -low <= neg <= -1:
        raise AxisError(f"vecdot: axis {axis} is out of range for {x1.ndim}-d and {x2.ndim}-d operands",
                        fix=f"use an axis in [-{max(low, 1)}, -1] (counted from the last axis)")
    ax = nd + neg
    s1, s2 = (1,) * (nd - x1.ndim) + x1.shape, (1,) * (nd - x2.ndim) + x2.shape
    if s1[ax] != s2[ax]:
        raise InvalidArgumentError(f"vecdot: sizes {s1[ax]} and {s2[ax]} along axis {axis} differ",
                                   fix="the contracted axis must have the same size in both arrays")
    shape = broadcast_together(s1, s2)
    k = shape[ax]
    res_shape = shape[:ax] + shape[ax + 1:]
    rows = math.prod(res_shape)
    if rows == 0 or k == 0:
        return zeros(res_shape, dtype=dt, device=dev)
    acc = D.float32 if dt == D.float16 else dt
    perm = (*range(ax), *range(ax + 1, nd), ax)
    ops = [permute_dims(broadcast_to(D.astype(x, acc, copy=False), shape), perm) for x in (x1, x2)]
    node = multiply(ops[0], ops[1])._node()
    prog = vecdot_program(node, rows, k, dt)
    out = Array(res_shape, dt, dev)
    p = plan_for_node(node, dev)
    p.steps.append((prog, [*p.bind(node), out._allocate()]))  # the tree's buffers, in the program's order
    p.run()
    return out


def _axes_pair(x1: Array, x2: Array, axes: Any) -> tuple[list[int], list[int]]:
    if isinstance(axes, int) and not isinstance(axes, bool):
        if axes < 0 or axes > min(x1.ndim, x2.ndim):
            raise InvalidArgumentError(f"tensordot: axes={axes} is out of range for {x1.ndim}-d and {x2.ndim}-d arrays",
                                       fix=f"use 0 .. {min(x1.ndim, x2.ndim)}")
        return list(range(x1.ndim - axes, x1.ndim)), list(range(axes))
    ok = isinstance(axes, Sequence) and len(axes) == 2 and all(
        isinstance(s, Sequence) and all(isinstance(v, int) and not isinstance(v, bool) for v in s) for s in axes)
    if not ok or len(axes[0]) != len(axes[1]):
        raise ArgumentTypeError(f"tensordot: axes must be an int or two sequences of ints of one length, got {axes!r}",
                                fix="e.g. axes=2 or axes=((1, 2), (0, 1))")
    out = []
    for x, s in ((x1, axes[0]), (x2, axes[1])):
        if any(not -x.ndim <= v < x.ndim for v in s) or len({v % x.ndim for v in s}) != len(s):
            raise AxisError(f"tensordot: axes {list(s)} are out of range or repeated for a {x.ndim}-d array",
                            fix="give distinct axes of the array")
        out.append([v % x.ndim for v in s])
    return out[0], out[1]


def tensordot(x1: Array, x2: Array, /, *, axes: int | tuple[Sequence[int], Sequence[int]] = 2) -> Array:
    """Sum of products over ``axes`` (an int N: the last N of x1 with the first N of x2; or two sequences
    of axes), the result's shape being x1's free axes then x2's."""
    if isinstance(x1, Array) and isinstance(x2, Array) and "c" in (x1.dtype.kind, x2.dtype.kind):
        return complex_form("tensordot", x1, x2, axes=axes)
    dev, dt = _operands("tensordot", x1, x2)
    a1, a2 = _axes_pair(x1, x2, axes)
    for i, j in zip(a1, a2):
        if x1.shape[i] != x2.shape[j]:
            raise InvalidArgumentError(f"tensordot: axis {i} of x1 ({x1.shape[i]}) and axis {j} of x2 ({x2.shape[j]}) "
                                       "differ", fix="contracted axes must have equal sizes")
    f1 = [i for i in range(x1.ndim) if i not in a1]
    f2 = [j for j in range(x2.ndim) if j not in a2]
    m = math.prod(x1.shape[i] for i in f1)
    k = math.prod(x1.shape[i] for i in a1)
    n = math.prod(x2.shape[j] for j in f2)
    a = reshape(permute_dims(x1, (*f1, *a1)), (m, k))
    b = reshape(permute_dims(x2, (*a2, *f2)), (k, n))
    out = _product(a, b, (), m, k, n, dt, dev)
    final = (*(x1.shape[i] for i in f1), *(x2.shape[j] for j in f2))
    return out if final == out.shape else _sharing(final, dt, dev, out)


def _int(v: Any, what: str) -> int:
    if isinstance(v, builtins.bool):
        raise ArgumentTypeError(f"{what} must be an int, got {v!r}", fix="pass an int")
    try:
        return operator.index(v)
    except TypeError:
        raise ArgumentTypeError(f"{what} must be an int, got {v!r}", fix="pass an int") from None


def diagonal(x: Array, /, *, offset: int = 0) -> Array:
    """The diagonals of the last two axes (``offset`` > 0: above the main one, < 0: below), shape
    (..., k): a lazy strided view."""
    x = _check(x, "diagonal")
    off = _int(offset, "diagonal: offset")
    if x.ndim < 2:
        raise InvalidArgumentError(f"diagonal: needs an array of at least 2 dimensions, got shape {list(x.shape)}",
                                   fix="reshape it to (..., M, N)")
    m, n = x.shape[-2:]
    k = builtins.max(0, builtins.min(m, n - off) if off >= 0 else builtins.min(m + off, n))
    shape = (*x.shape[:-2], k)
    if k == 0 or math.prod(shape) == 0:
        return zeros(shape, dtype=x.dtype, device=x.device)
    st = strides_of(x.shape)
    start = off if off >= 0 else -off * n
    return Array(shape, x.dtype, x.device, Strided(x._node(), shape, start, (*st[:-2], n + 1)))


def trace(x: Array, /, *, offset: int = 0, dtype: Any = None) -> Array:
    """The sum of each diagonal (see :func:`diagonal`), with ``sum``'s dtype rules (int32 stays int32)."""
    d = diagonal(x, offset=offset)
    return _sum(d, axis=-1, dtype=dtype)


def outer(x1: Array, x2: Array, /) -> Array:
    """The outer product of two 1-D arrays, shape (len(x1), len(x2)): lazy (fuses into its consumer)."""
    a, b = _check(x1, "outer"), _check(x2, "outer")
    same_device([a, b], "outer")
    if a.ndim != 1 or b.ndim != 1:
        raise InvalidArgumentError(f"outer: needs 1-D arrays, got shapes {list(a.shape)} and {list(b.shape)}",
                                   fix="reshape both to 1-D")
    if D.promote(a.dtype, b.dtype) == D.bool:
        raise ArgumentTypeError("outer: needs numeric arrays", fix="convert with astype first")
    return reshape(a, (a.shape[0], 1)) * reshape(b, (1, b.shape[0]))


def cross(x1: Array, x2: Array, /, *, axis: int = -1) -> Array:
    """The 3-vector cross product along ``axis`` (counted from the last axis; the other axes broadcast)."""
    a, b = _check(x1, "cross"), _check(x2, "cross")
    same_device([a, b], "cross")
    if D.promote(a.dtype, b.dtype) == D.bool:
        raise ArgumentTypeError("cross: needs numeric arrays", fix="convert with astype first")
    ax = _int(axis, "cross: axis")
    low = builtins.min(a.ndim, b.ndim)
    if low == 0 or not -low <= ax <= -1:
        raise AxisError(f"cross: axis {axis} is out of range for {a.ndim}-d and {b.ndim}-d arrays",
                        fix=f"use an axis in [-{builtins.max(low, 1)}, -1] (counted from the last axis)")
    if a.shape[ax] != 3 or b.shape[ax] != 3:
        raise InvalidArgumentError(f"cross: axis {axis} must have size 3 in both arrays, got {a.shape[ax]} and "
                                   f"{b.shape[ax]}", fix="pass arrays of 3-vectors")
    broadcast_together(a.shape, b.shape)
    tail = (slice(None),) * (-ax - 1)
    u = [a[(..., k, *tail)] for k in range(3)]
    v = [b[(..., k, *tail)] for k in range(3)]
    parts = (u[1] * v[2] - u[2] * v[1], u[2] * v[0] - u[0] * v[2], u[0] * v[1] - u[1] * v[0])
    return stack(parts, axis=ax)


def _float(x: Array) -> Array:
    """Integer and bool inputs of the norms are computed in float32 (numpy: float64)."""
    return x if x.dtype.kind == "f" else D.astype(x, D.float32)


def _back(v: Array, dtype: Any) -> Array:
    return v if v.dtype == dtype else D.astype(v, dtype)


def _largest(v: Array, *, axis: Any, keepdims: bool) -> Array:
    """max over ``axis`` of a non-negative ``v``; 0 over zero elements (numpy's norms: an empty max is 0)."""
    axes = normalize_axes(axis, v.ndim, "norm")
    if math.prod(v.shape[d] for d in axes) == 0:
        shape = tuple(1 if d in axes else k for d, k in enumerate(v.shape) if keepdims or d not in axes)
        return zeros(shape, dtype=v.dtype, device=v.device)
    return _max(v, axis=axis, keepdims=keepdims)


def vector_norm(x: Array, /, *, axis: int | tuple[int, ...] | None = None, keepdims: bool = False,
                ord: int | float = 2) -> Array:  # noqa: A002 - the standard's name
    """The vector p-norm over ``axis`` (None: all elements): ``ord`` 2 (default), 1, any p != 0
    (sum(|x|^p)^(1/p)), 0 (the count of non-zeros), inf (max |x|), -inf (min |x|). Sums in float32;
    float16 results are rounded once at the end; integers give float32; complex: the norm of ``abs(x)``."""
    x = _check(x, "vector_norm")
    x = _float(_abs(x) if x.dtype.kind == "c" else x)
    if isinstance(ord, builtins.bool) or not isinstance(ord, (int, float)):
        raise ArgumentTypeError(f"vector_norm: ord must be a number, got {ord!r}", fix="e.g. ord=2 or ord=math.inf")
    out = x.dtype
    wide = D.astype(x, D.float32) if out == D.float16 else x  # lazy: fused into the reduction
    if ord == math.inf:
        return _largest(_abs(x), axis=axis, keepdims=keepdims)
    if ord == -math.inf:
        return _min(_abs(x), axis=axis, keepdims=keepdims)
    if ord == 0:
        return _back(_sum(D.astype(not_equal(wide, 0.0), D.float32), axis=axis, keepdims=keepdims), out)
    if ord == 2:
        return _back(sqrt(_sum(wide * wide, axis=axis, keepdims=keepdims)), out)
    if ord == 1:
        return _back(_sum(_abs(wide), axis=axis, keepdims=keepdims), out)
    p = float(ord)
    if p > 0:
        return _back(_sum(_abs(wide) ** p, axis=axis, keepdims=keepdims) ** (1.0 / p), out)
    # p < 0: a zero element makes the norm 0 (|0|^p = inf); WGSL's pow leaves pow(0, p < 0) and
    # pow(inf, 1/p) undefined, so both are spelled out
    mag = _abs(wide)
    s = _sum(where(equal(mag, 0.0), math.inf, mag ** p), axis=axis, keepdims=keepdims)
    return _back(where(equal(s, math.inf), 0.0, s ** (1.0 / p)), out)


def matrix_norm(x: Array, /, *, keepdims: bool = False, ord: _Ord = "fro") -> Array:  # noqa: A002
    """The norm of each matrix (the last two axes): 'fro' (default), 1 / -1 (max / min column sum of
    |x|), inf / -inf (max / min row sum), 2 / -2 (largest / smallest singular value), 'nuc' (their sum).
    Complex matrices: the norms of ``abs(x)`` for 'fro', 1, -1, inf, -inf; 2, -2 and 'nuc' from their
    singular values (svdvals through the real block form, vyre/array/_linalg_complex.py)."""
    x = _check(x, "matrix_norm")
    if x.dtype.kind == "c" and (isinstance(ord, builtins.bool) or ord not in (2, -2, "nuc")):
        x = _abs(x)
    if x.dtype.kind != "c":
        x = _float(x)
    if x.ndim < 2:
        raise InvalidArgumentError(f"matrix_norm: needs an array of at least 2 dimensions, got shape {list(x.shape)}",
                                   fix="reshape it to (..., M, N)")
    out = x.dtype
    if not isinstance(ord, builtins.bool) and ord in (2, -2, "nuc"):
        from ._linalg_eig import svdvals  # why: it imports this module (pinv's matmul)
        s = svdvals(x)
        r = _sum(s, axis=-1) if ord == "nuc" else s[..., 0] if ord == 2 else s[..., -1]
        return reshape(r, (*x.shape[:-2], 1, 1)) if keepdims else r
    wide = D.astype(x, D.float32) if out == D.float16 else x
    if ord == "fro":
        return _back(sqrt(_sum(wide * wide, axis=(-2, -1), keepdims=keepdims)), out)
    pairs = {1: (-2, _largest), -1: (-2, _min), math.inf: (-1, _largest), -math.inf: (-1, _min)}
    if isinstance(ord, builtins.bool) or ord not in pairs:
        raise InvalidArgumentError(f"matrix_norm: unknown ord {ord!r}", fix="use 'fro', 1, -1, inf or -inf")
    inner, pick = pairs[ord]
    sums = _sum(_abs(wide), axis=inner, keepdims=True)  # column sums (1, -1) or row sums (inf, -inf)
    r = pick(sums, axis=-1 if inner == -2 else -2, keepdims=True)
    if not keepdims:
            r = reshape(r, x.shape[:-2])
    return _back(r, out)


def matrix_power(x: Array, n: int, /) -> Array:
    """``x`` (square matrices, (..., M, M)) raised to the integer power ``n`` by repeated squaring (n = 0:
    the identity; n < 0: the inverse's power, LinAlgError for a singular matrix)."""
    x = _check(x, "matrix_power")
    k = _int(n, "matrix_power: n")
    if x.ndim < 2 or x.shape[-1] != x.shape[-2]:
        raise InvalidArgumentError(f"matrix_power: needs square matrices (..., M, M), got shape {list(x.shape)}",
                                   fix="pass a stack of square matrices")
    if x.dtype == D.bool:
        raise ArgumentTypeError("matrix_power: needs a numeric array", fix="convert with astype first")
    if k < 0:
        from ._linalg_solve import inv  # why: imported on use, like matrix_norm's svdvals
        x, k = inv(x), -k
    if k == 0:
        return broadcast_to(eye(x.shape[-1], dtype=x.dtype, device=x.device), x.shape)
    result: Array | None = None
    base = x
    while True:
        if k & 1:
            result = base if result is None else matmul(result, base)
        k >>= 1
        if not k:
            break
        base = matmul(base, base)
    assert result is not None
    if result is x:  # a new array, as for every other power
            return D.astype(x, x.dtype, copy=True)
    return result


__all__ = ["matmul", "matrix_transpose", "vecdot", "tensordot"]  # the main namespace's; the rest: vyre.array.linalg
