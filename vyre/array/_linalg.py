"""Linear algebra functions of the standard: matmul (and ``@``), matrix_transpose, vecdot, tensordot.

* float32 products run the op library's tiled GEMM (vyre/ops/linalg/matmul.py): ``matmul`` for 2-D
  and for stacks multiplied by one matrix (the stack folds into M), ``matmul.batched`` otherwise;
  float16 runs ``matmul.f16`` (f32 accumulation, one rounding) when the stack folds, else the simple
  kernel below with the same accumulation. int32/uint32 run the simple kernel (one invocation per
  output element, exact with wrap-around like numpy's int32).
* Operands are bound as they are when materialised and row-major in the needed shape (a reshape of a
  materialised array too); otherwise (pending expressions, transposes, broadcast batch dimensions) they
  are evaluated into contiguous buffers in the same submission as the product.
* vecdot fuses ``x1 * x2`` (broadcast, the axis moved last) into a reduction kernel: one invocation per
  result, summing in f32 for float16 and in the dtype otherwise.
* tensordot permutes and reshapes both operands to 2-D and calls the same product.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from ..errors import DispatchError
from ..ir.builder import ProgramBuilder
from ..ir.program import Program
from . import _dtypes as D
from ._array import Array
from ._creation import zeros
from ._device import same_device
from ._elementwise import broadcast_shapes
from ._expr import Emitter, Leaf, Reshape, collect
from ._fuse import ProgramCache, plan, plan_for_node
from ._views import broadcast_to, permute_dims, reshape

_cached = ProgramCache(256).get
_MAX_U32 = 2**32 - 1


def _operands(what: str, x1: Any, x2: Any) -> tuple[Any, Any]:
    """The common device and the promoted (numeric) dtype; typed errors before any GPU work."""
    for label, x in (("x1", x1), ("x2", x2)):
        if not isinstance(x, Array):
            raise DispatchError(f"{what}: {label} must be a vyre array, got {type(x).__name__}",
                                fix="convert it first: vyre.array.asarray(value)")
    dev = same_device([x1, x2], what)
    dt = D.promote(x1.dtype, x2.dtype)
    if dt == D.bool:
        raise DispatchError(f"{what}: needs numeric arrays (got {x1.dtype} and {x2.dtype})",
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


def _sharing(shape: tuple[int, ...], dtype: Any, dev: Any, owner: Array) -> Array:
    r = Array(shape, dtype, dev)
    r._buf = owner._buf
    return r


def _generic(dtype: Any, nb: int, m: int, k: int, n: int) -> Program:
    """C[z] = A[z] @ B[z] for contiguous stacks, one invocation per element of C (f16: f32 sums)."""
    t = D.ir_type(dtype).value
    acc_t = "f32" if dtype == D.float16 else t

    def build() -> Program:
        b = ProgramBuilder(f"array_matmul_{t}", 256)
        a_ = b.buffer("a", t, "read", count=nb * m * k)
        b_ = b.buffer("b", t, "read", count=nb * k * n)
        c_ = b.buffer("c", t, "write", count=nb * m * n)
        b.set_grid_from(c_)
        i = b.global_index()
        with b.if_(i < b.lit(nb * m * n, "u32")):
            z = b.let(i / b.lit(m * n, "u32"))
            row = b.let((i / b.lit(n, "u32")) % b.lit(m, "u32"))
            col = b.let(i % b.lit(n, "u32"))
            a0 = b.let(z * b.lit(m * k, "u32") + row * b.lit(k, "u32"))
            b0 = b.let(z * b.lit(k * n, "u32") + col)
            acc = b.var(acc_t, b.lit(0, acc_t))
            with b.for_range(b.lit(0, "u32"), b.lit(k, "u32")) as kk:
                x, y = a_[a0 + kk], b_[b0 + kk * b.lit(n, "u32")]
                acc += (x.cast("f32") * y.cast("f32")) if acc_t != t else x * y
            c_[i] = acc.cast(t) if acc_t != t else acc
        return b.build()

    return _cached(("generic", t, nb, m, k, n), build)


def _product(a: Array, b: Array, batch: tuple[int, ...], m: int, k: int, n: int, dt: Any, dev: Any) -> Array:
    """``a @ b`` with ``a`` broadcastable to (*batch, m, k) and ``b`` to (*batch, k, n): a new
    materialised (*batch, m, n) array, one submission."""
    shape = (*batch, m, n)
    if math.prod(shape) == 0 or k == 0:
        return zeros(shape, dtype=dt, device=dev)
    from ._functions import astype
    a, b = astype(a, dt, copy=False), astype(b, dt, copy=False)
    nb = math.prod(batch)
    fold = math.prod(b.shape[:-2]) == 1  # one right matrix: the stack is one (nb*m, k) @ (k, n)
    a_full = (*batch, m, k)
    a = _source(a) if math.prod(a.shape) == math.prod(a_full) else broadcast_to(a, a_full)
    b = _source(b) if fold or math.prod(b.shape) == nb * k * n else broadcast_to(b, (*batch, k, n))
    for label, count in (("x1", nb * m * k), ("x2", (1 if fold else nb) * k * n), ("result", nb * m * n)):
        if count > _MAX_U32:
            raise DispatchError(f"matmul: the {label} has {count} elements, over the 2**32-1 vyre indexes",
                                fix="split the product into smaller ones")
    out = Array(shape, dt, dev)
    p = plan([x for x in (a, b) if x.is_lazy], dev)
    handles = [a._allocate(), b._allocate(), out._allocate(zeroed=False)]  # both kernels write every element
    if dt == D.float32 or (dt == D.float16 and fold):
        from ..ops.api import pipeline_for
        op = "matmul" if dt == D.float32 else "matmul.f16"
        params = {"m": nb * m, "k": k, "n": n} if fold else {"batch": nb, "m": m, "k": k, "n": n}
        pipe = pipeline_for(op if fold else "matmul.batched", params)
        from ..backends.config import DispatchConfig
        for step in pipe.steps:  # coerce: one config per grid, so the backend's per-step plan memo hits
            p.steps.append((step.program, handles, DispatchConfig.coerce(step.grid)))
    else:
        if fold and nb > 1:  # the simple kernel reads a stacked B: fold the stack into M instead
            nb, m = 1, nb * m
        p.steps.append((_generic(dt, nb, m, k, n), handles))
    p.run()
    return out


def matmul(x1: Array, x2: Array, /) -> Array:
    """The matrix product (the standard's rules: 1-D operands are promoted to a row (x1) or a column
    (x2) and that dimension is removed from the result; stacks broadcast their batch dimensions)."""
    dev, dt = _operands("matmul", x1, x2)
    if x1.ndim == 0 or x2.ndim == 0:
        raise DispatchError("matmul: operands must have at least one dimension",
                            fix="use multiply (or *) for scalars")
    a = x1 if x1.ndim > 1 else reshape(x1, (1, x1.shape[0]))
    b = x2 if x2.ndim > 1 else reshape(x2, (x2.shape[0], 1))
    (m, k), (k2, n) = a.shape[-2:], b.shape[-2:]
    if k != k2:
        raise DispatchError(f"matmul: shapes {list(x1.shape)} and {list(x2.shape)} do not line up "
                            f"({k} != {k2})", fix="x1.shape[-1] must equal x2.shape[-2] (x2.shape[0] when 1-D)")
    batch = broadcast_shapes(a.shape[:-2], b.shape[:-2])
    out = _product(a, b, batch, m, k, n, dt, dev)
    final = (*batch, *((m,) if x1.ndim > 1 else ()), *((n,) if x2.ndim > 1 else ()))
    return out if final == out.shape else _sharing(final, dt, dev, out)


def matrix_transpose(x: Array, /) -> Array:
    """``x`` with its last two axes swapped (a lazy view; ``x.mT``)."""
    if not isinstance(x, Array):
        raise DispatchError(f"matrix_transpose: expected a vyre array, got {type(x).__name__}",
                            fix="convert it first: vyre.array.asarray(value)")
    return x.mT


def _vecdot_program(node: Any, rows: int, k: int, dt: Any) -> Program:
    b = ProgramBuilder("array_vecdot", 256)
    e = Emitter(b, node)
    t = D.ir_type(dt).value
    acc_t = D.ir_type(node.dtype).value
    out = b.buffer("out", t, "write", count=rows)
    b.set_grid_from(out)
    i = b.global_index()
    with b.if_(i < b.lit(rows, "u32")):
        base = b.let(i * b.lit(k, "u32"))
        acc = b.var(acc_t, b.lit(0, acc_t))
        with b.for_range(b.lit(0, "u32"), b.lit(k, "u32")) as j:
            acc += e.value(base + j)
        out[i] = acc.cast(t) if acc_t != t else acc
    return b.build()


def vecdot(x1: Array, x2: Array, /, *, axis: int = -1) -> Array:
    """The dot product of ``x1`` and ``x2`` along ``axis`` (counted from the last axis; the other axes
    broadcast, the contracted one must have the same size in both). Real dtypes (no complex, so no
    conjugation); integers too (exact, wrapping), float16 summed in float32."""
    dev, dt = _operands("vecdot", x1, x2)
    if isinstance(axis, bool) or not isinstance(axis, int):
        raise DispatchError(f"vecdot: axis must be an int, got {axis!r}", fix="e.g. axis=-1")
    nd, low = max(x1.ndim, x2.ndim), min(x1.ndim, x2.ndim)
    # the standard counts the axis from the end of each array; a non-negative one is accepted only when
    # both arrays have the same rank (then it means the same axis of both)
    neg = axis if axis < 0 else (axis - nd if x1.ndim == x2.ndim else 0)
    if low == 0 or not -low <= neg <= -1:
        raise DispatchError(f"vecdot: axis {axis} is out of range for {x1.ndim}-d and {x2.ndim}-d operands",
                            fix=f"use an axis in [-{max(low, 1)}, -1] (counted from the last axis)")
    ax = nd + neg
    s1, s2 = (1,) * (nd - x1.ndim) + x1.shape, (1,) * (nd - x2.ndim) + x2.shape
    if s1[ax] != s2[ax]:
        raise DispatchError(f"vecdot: sizes {s1[ax]} and {s2[ax]} along axis {axis} differ",
                            fix="the contracted axis must have the same size in both arrays")
    shape = broadcast_shapes(s1, s2)
    k = shape[ax]
    res_shape = shape[:ax] + shape[ax + 1:]
    rows = math.prod(res_shape)
    if rows == 0 or k == 0:
        return zeros(res_shape, dtype=dt, device=dev)
    from ._functions import astype, multiply
    acc = D.float32 if dt == D.float16 else dt
    perm = (*range(ax), *range(ax + 1, nd), ax)
    ops = [permute_dims(broadcast_to(astype(x, acc, copy=False), shape), perm) for x in (x1, x2)]
    node = multiply(ops[0], ops[1])._node()
    prog = _cached(("vecdot", collect(node).key, rows, k, dt.str), lambda: _vecdot_program(node, rows, k, dt))
    e = Emitter(ProgramBuilder("array_vecdot_bind", 1), node)  # this tree's buffers, in the program's order
    out = Array(res_shape, dt, dev)
    p = plan_for_node(node, dev)
    p.steps.append((prog, [*p.bind(e), out._allocate()]))
    p.run()
    return out


def _axes_pair(x1: Array, x2: Array, axes: Any) -> tuple[list[int], list[int]]:
    if isinstance(axes, int) and not isinstance(axes, bool):
        if axes < 0 or axes > min(x1.ndim, x2.ndim):
            raise DispatchError(f"tensordot: axes={axes} is out of range for {x1.ndim}-d and {x2.ndim}-d arrays",
                                fix=f"use 0 .. {min(x1.ndim, x2.ndim)}")
        return list(range(x1.ndim - axes, x1.ndim)), list(range(axes))
    ok = isinstance(axes, Sequence) and len(axes) == 2 and all(
        isinstance(s, Sequence) and all(isinstance(v, int) and not isinstance(v, bool) for v in s) for s in axes)
    if not ok or len(axes[0]) != len(axes[1]):
        raise DispatchError(f"tensordot: axes must be an int or two sequences of ints of one length, got {axes!r}",
                            fix="e.g. axes=2 or axes=((1, 2), (0, 1))")
    out = []
    for x, s in ((x1, axes[0]), (x2, axes[1])):
        if any(not -x.ndim <= v < x.ndim for v in s) or len({v % x.ndim for v in s}) != len(s):
            raise DispatchError(f"tensordot: axes {list(s)} are out of range or repeated for a {x.ndim}-d array",
                                fix="give distinct axes of the array")
        out.append([v % x.ndim for v in s])
    return out[0], out[1]


def tensordot(x1: Array, x2: Array, /, *, axes: int | tuple[Sequence[int], Sequence[int]] = 2) -> Array:
    """Sum of products over ``axes`` (an int N: the last N of x1 with the first N of x2; or two sequences
    of axes), the result's shape being x1's free axes then x2's."""
    dev, dt = _operands("tensordot", x1, x2)
    a1, a2 = _axes_pair(x1, x2, axes)
    for i, j in zip(a1, a2):
        if x1.shape[i] != x2.shape[j]:
            raise DispatchError(f"tensordot: axis {i} of x1 ({x1.shape[i]}) and axis {j} of x2 ({x2.shape[j]}) "
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


__all__ = ["matmul", "matrix_transpose", "vecdot", "tensordot"]
