"""The linear-algebra kernels of vyre/array/_linalg.py that are not the op library's GEMM: the simple
product (one invocation per output element, stacks of contiguous matrices; f16 sums in f32; int32 and
uint32 exact with wrap-around) and vecdot's reduction over a fused ``x1 * x2`` (one invocation per
result). Their programs are the registry's ``matmul`` family. The float32 (and folded float16) products
run the op library's tiled GEMM (vyre/ops/linalg/matmul.py) instead: :func:`gemm_steps`.
"""

from __future__ import annotations

import functools
from typing import Any

from ...backends.config import DispatchConfig
from ...ir.builder import ProgramBuilder
from ...ir.program import Program
from . import cache
from . import dtypes as D
from . import matmul_split as S
from . import matmul_thin as T
from .dtypes import DType
from .emit import Emitter
from .fused import Plan
from .nodes import Node, collect

_cached = cache.register("matmul", 256, Program).get


def generic_program(dtype: Any, nb: int, m: int, k: int, n: int) -> Program:
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


def gemm_steps(dt: DType, fold: bool, nb: int, m: int, k: int, n: int) -> list[tuple[Program, DispatchConfig | None]]:
    """The op library's GEMM pipeline for (nb stacked) (m, k) @ (k, n) of ``dt`` (float32; float16 when
    the stack folds into M): its programs with one dispatch config per grid each."""
    if dt == D.float16 and not fold:
        return _f16_batched(nb, m, k, n)
    from ...ops.api import pipeline_for  # why: vyre.ops.api loads the wgpu backend; imported on first use
    op = "matmul" if dt == D.float32 else "matmul.f16"
    params = {"m": nb * m, "k": k, "n": n} if fold else {"batch": nb, "m": m, "k": k, "n": n}
    pipe = pipeline_for(op if fold else "matmul.batched", params)
    # coerce: one config per grid, so the backend's per-step plan memo hits
    return [(step.program, DispatchConfig.coerce(step.grid)) for step in pipe.steps]


@functools.lru_cache(maxsize=128)
def _f16_batched(nb: int, m: int, k: int, n: int) -> list[tuple[Program, DispatchConfig | None]]:
    """matmul.f16's tiled kernel over a stack (vyre.ops.linalg.matmul.build_f16_batched)."""
    from ...ops.linalg.matmul import build_f16_batched  # why: as pipeline_for, on first use
    return [(step.program, DispatchConfig.coerce(step.grid)) for step in build_f16_batched(nb, m, k, n).steps]


def _gpu_adapter(be: Any) -> bool:
    """Whether ``be`` runs on a GPU (a discrete or integrated adapter), not a CPU one (lavapipe, the
    reference interpreter): the thin kernel splits K finer there. Kept on the backend, as storage_limit."""
    got = getattr(be, "_vyre_gpu_adapter", None)
    if got is None:
        info = getattr(be, "adapter_info", None) or {}
        got = str(info.get("adapter_type", "")).lower() in ("discretegpu", "integratedgpu")
        try:
            be._vyre_gpu_adapter = got
        except AttributeError:
            pass
    return bool(got)


def product_steps(p: Plan, dt: DType, fold: bool, nb: int, m: int, k: int, n: int, handles: list[Any]) -> None:
    """Append to ``p`` the steps of the float32 / float16 product of ``handles`` = [A, B, C] (A: (nb, m, k);
    B: (k, n) when ``fold``, else (nb, k, n)): the thin kernel (vyre/array/_kernels/matmul_thin.py, split
    along K where K is long) when float32 and M or N is small; for a long K into a few tiles of C the GEMM
    per K-slice and a fixed-order sum (vyre/array/_kernels/matmul_split.py); else the op library's GEMM."""
    if dt == D.float32:
        gpu = _gpu_adapter(p.backend)
        s = (T.thin_shape(1, nb * m, k, n, False, False, gpu) if fold
             else T.thin_shape(nb, m, k, n, True, True, gpu))
        if s is not None:
            if s.slices == 1:
                p.steps.append((T.thin_program(s), handles, s.grid()))
                return
            part = p.backend.allocate_resident(T.partial_bytes(s), zeroed=False)  # every slice writes its block
            p.temps.append(part)  # freed after the submission (WebGPU keeps it for the submitted work)
            p.steps.append((T.thin_program(s), [handles[0], handles[1], part], s.grid()))
            p.steps.append((T.partials_program(s.slices, s.nb * s.m * s.n), [part, handles[2]]))
            return
        sk = S.split_shape(nb * m, k, n) if fold or nb == 1 else None
        if sk is not None:
            prog, grid = S.split_steps(sk)
            part = p.backend.allocate_resident(4 * sk.slices * sk.m * sk.n, zeroed=False)
            p.temps.append(part)
            p.steps.append((prog, [handles[0], handles[1], part], grid))
            p.steps.append((T.partials_program(sk.slices, sk.m * sk.n), [part, handles[2]]))
            return
    for prog, config in gemm_steps(dt, fold, nb, m, k, n):
        p.steps.append((prog, handles, config))


def vecdot_program(node: Node, rows: int, k: int, dt: DType) -> Program:
    """out[i] = the sum of ``node``'s elements i*k .. i*k + k - 1 (``node``: the fused product, the
    contracted axis last), accumulated in ``node``'s dtype and cast to ``dt``."""
    return _cached(("vecdot", collect(node).key, rows, k, dt.str), lambda: _vecdot(node, rows, k, dt))


def _vecdot(node: Node, rows: int, k: int, dt: DType) -> Program:
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


__all__ = ["generic_program", "gemm_steps", "product_steps", "vecdot_program"]
