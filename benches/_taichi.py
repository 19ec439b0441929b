"""Taichi baselines (issue 13): the same work as vyre's rows as Taichi kernels on Taichi's Vulkan
backend, in the same process and on the same GPU.

Taichi is imported lazily and initialised once per process with ``ti.init(arch=ti.vulkan)``;
when the import or the Vulkan initialisation fails (or ``ti.init`` falls back to another
arch), every Taichi baseline is reported unavailable with the reason. It is never run on
the CPU in a real run. For local correctness checks only, ``VYRE_BENCH_TAICHI_ARCH=cpu``
(any ``ti.<arch>`` name; default ``vulkan``) picks another arch; the records then say so.

Inputs live on the device beforehand as Taichi fields (like the torch tensors; :func:`_fields`
says why fields and not ``ti.ndarray``). Taichi exposes no GPU timestamps, so kernels are
timed by wall clock around k back-to-back launches followed by ``ti.sync()`` (the torch
baselines use CUDA events there); round trips and launch chains use wall clock per call,
like the torch baselines of those rows. Every result is checked against numpy first: a wrong
baseline is reported unavailable with the mismatch, never as a time.
"""

from __future__ import annotations

import importlib
import inspect
import os
import re
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

from ._harness import Context, Outcome, Timing, calibrated, host_timing

ARCH_ENV = "VYRE_BENCH_TAICHI_ARCH"
# tiled matmul: BM x BM tiles of C per block of NT threads, TM x TM outputs per thread, k in steps of BK
BM, BK, TM = 64, 16, 4
NT = (BM // TM) ** 2
STRIDE_THREADS = 1 << 18  # the strided sum's threads (about the H200's 132 SMs x 2048 resident threads)
KERNEL_METHOD = ("wall clock around k back-to-back launches then ti.sync() (Taichi {arch}; no GPU timestamps "
                 "in Taichi)")

#: Process-wide state: ti.init runs at most once (a second init would reset Taichi's runtime).
_STATE: dict[str, Any] = {}


def _version(ti) -> str:
    v = getattr(ti, "__version__", "?")  # a tuple such as (1, 7, 4) in Taichi 1.x
    return ".".join(map(str, v)) if isinstance(v, tuple) else str(v)


def _arch_name() -> str:
    return os.environ.get(ARCH_ENV, "vulkan").strip() or "vulkan"


def _init_logged(ti, arch) -> str:
    """``ti.init(arch)`` with Taichi's C++ log captured (file descriptor 2) to learn the Vulkan device it
    picked; returns that device's name ("" when not found)."""
    with tempfile.TemporaryFile() as log:
        saved = os.dup(2)
        try:
            os.dup2(log.fileno(), 2)
            ti.init(arch=arch, log_level=ti.TRACE, offline_cache=False)
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        ti.set_logging_level(ti.WARN)
        log.seek(0)
        text = log.read().decode(errors="replace")
    m = re.search(r'Vulkan Device "([^"]+)" supports', text)
    return m.group(1) if m else ""


def _try_taichi() -> tuple[Any, str]:
    """(the taichi module, "") once ``ti.init`` gave the wanted arch (Vulkan unless ``VYRE_BENCH_TAICHI_ARCH``
    says otherwise), else (None, why not). Initialises Taichi at most once per process."""
    if "result" in _STATE:
        return _STATE["result"]
    try:
        ti = importlib.import_module("taichi")  # optional, untyped: not a static import (mypy)
    except Exception as exc:  # noqa: BLE001 - any import failure means "no baseline"
        # the message matters here: taichi's core library needs libX11.so.6, which a bare GPU host may lack
        msg = " ".join(str(exc).split())[:160]
        result: tuple[Any, str] = (None, f"taichi not importable ({type(exc).__name__}: {msg})")
        _STATE["result"] = result
        return result
    name = _arch_name()
    arch = getattr(ti, name, None)
    if arch is None:
        result = (None, f"taichi {_version(ti)} has no arch {name!r} ({ARCH_ENV})")
    else:
        try:
            _STATE["device"] = _init_logged(ti, arch)
            got = ti.lang.impl.current_cfg().arch
            result = (ti, "") if got == arch else \
                (None, f"taichi {_version(ti)}: ti.init(arch=ti.{name}) fell back to {got} (no {name} device)")
        except Exception as exc:  # noqa: BLE001
            result = (None, f"taichi {_version(ti)}: ti.init(arch=ti.{name}) failed: {type(exc).__name__}: {exc}")
    _STATE["arch"] = name
    _STATE["result"] = result
    return result


def describe(ti) -> dict:
    out = {"available": True, "version": _version(ti), "arch": _STATE.get("arch", _arch_name())}
    if _STATE.get("device"):
        out["device"] = _STATE["device"]
    return out


def method() -> str:
    return KERNEL_METHOD.format(arch=_STATE.get("arch", _arch_name()))


def _kernels(ti) -> dict[str, Callable]:
    """Every Taichi kernel of the benches, defined once per process. They take fields as ``ti.template()``
    arguments: Taichi compiles one instance per set of fields, on its first call (before any timing)."""
    if "kernels" in _STATE:
        return _STATE["kernels"]
    f32 = ti.f32

    def kernel(fn: Callable) -> Callable:
        # every argument is a field passed as ti.template() (set here, not annotated: not a static type)
        fn.__annotations__ = {name: ti.template() for name in inspect.signature(fn).parameters}
        return ti.kernel(fn)

    @kernel
    def add(a, b, c):
        for i in c:
            c[i] = a[i] + b[i]

    @kernel
    def sum_all(x, total):
        total[None] = 0.0  # a serial task, then the parallel loop: Taichi turns the += into a reduction
        for i in x:
            total[None] += x[i]

    @kernel
    def sum_strided(x, total):
        total[None] = 0.0
        for t in range(STRIDE_THREADS):
            acc = 0.0
            for k in range((x.shape[0] - t + STRIDE_THREADS - 1) // STRIDE_THREADS):  # coalesced across t
                acc += x[t + k * STRIDE_THREADS]
            total[None] += acc

    @kernel
    def mm_naive(a, b, c):
        for i, j in c:  # one output per thread, j fastest
            acc = 0.0
            for k in range(a.shape[1]):
                acc += a[i, k] * b[k, j]
            c[i, j] = acc

    @kernel
    def mm_tiled(a, b, c):
        ti.loop_config(block_dim=NT)
        # one thread block per BM x BM tile of C: the loop's consecutive NT indices are one block; each thread
        # keeps TM x TM outputs (rows ty + 16 i, columns tx + 16 j) in registers; A and B pass through shared
        # memory BK columns / rows at a time
        for g in range(((c.shape[0] + BM - 1) // BM) * ((c.shape[1] + BM - 1) // BM) * NT):
            tiles_j = (c.shape[1] + BM - 1) // BM
            tile, tid = g // NT, g % NT
            ty, tx = tid // (BM // TM), tid % (BM // TM)
            row0, col0 = (tile // tiles_j) * BM, (tile % tiles_j) * BM
            sa = ti.simt.block.SharedArray((BM, BK), f32)
            sb = ti.simt.block.SharedArray((BK, BM), f32)
            acc = ti.Matrix.zero(f32, TM, TM)
            kdim = a.shape[1]
            for kt in range((kdim + BK - 1) // BK):
                k0 = kt * BK
                for r in ti.static(range(BM * BK // NT)):
                    idx = tid + NT * r
                    ar, ac = idx // BK, idx % BK
                    va = 0.0
                    if row0 + ar < a.shape[0] and k0 + ac < kdim:
                        va = a[row0 + ar, k0 + ac]
                    sa[ar, ac] = va
                    br, bc = idx // BM, idx % BM
                    vb = 0.0
                    if k0 + br < kdim and col0 + bc < b.shape[1]:
                        vb = b[k0 + br, col0 + bc]
                    sb[br, bc] = vb
                ti.simt.block.sync()
                for kk in ti.static(range(BK)):
                    av = ti.Vector([sa[ty + (BM // TM) * i, kk] for i in ti.static(range(TM))])
                    bv = ti.Vector([sb[kk, tx + (BM // TM) * j] for j in ti.static(range(TM))])
                    acc += av.outer_product(bv)
                ti.simt.block.sync()
            for i, j in ti.static(ti.ndrange(TM, TM)):
                r, cc = row0 + ty + (BM // TM) * i, col0 + tx + (BM // TM) * j
                if r < c.shape[0] and cc < c.shape[1]:
                    c[r, cc] = acc[i, j]

    @kernel
    def half_plus_one(src, dst):
        for i in dst:
            dst[i] = src[i] * 0.5 + 1.0

    @kernel
    def plus_one(src, dst):
        for i in dst:
            dst[i] = src[i] + 1.0

    @kernel
    def saxpy(a, x, y):
        for i in y:
            y[i] = a[0] * x[i] + y[i]

    _STATE["kernels"] = k = {"add": add, "sum_all": sum_all, "sum_strided": sum_strided, "mm_naive": mm_naive,
                             "mm_tiled": mm_tiled, "half_plus_one": half_plus_one, "plus_one": plus_one,
                             "saxpy": saxpy}
    return k


@contextmanager
def _fields(ti, *specs: np.ndarray | tuple[int, ...]) -> Iterator[list]:
    """f32 fields (dense, row-major), one per spec: an array (uploaded now, before any timing) or a shape
    (``()``: a 0-d field). They live in their own SNode tree, destroyed on exit to free the device memory.

    Fields rather than ti.ndarray: on Taichi's Vulkan backend a kernel with ndarray arguments goes through
    an argument buffer per launch (measured on lavapipe: 5x slower per small launch, 2x at 2^22 elements,
    8x per saxpy round trip), while kernels over fields passed as templates take no runtime arguments."""
    fb = ti.FieldsBuilder()
    out = []
    for spec in specs:
        shape = tuple(spec.shape) if isinstance(spec, np.ndarray) else tuple(spec)
        f = ti.field(ti.f32)
        if shape:
            fb.dense(ti.ij if len(shape) == 2 else ti.i, shape).place(f)
        else:
            fb.place(f)
        out.append(f)
    tree = fb.finalize()
    try:
        for spec, f in zip(specs, out):
            if isinstance(spec, np.ndarray):
                f.from_numpy(np.ascontiguousarray(spec, dtype=np.float32))
        yield out
    finally:
        ti.sync()
        tree.destroy()


def kernel_timing(ti, fn: Callable[[], object], *, reps: int, target_s: float, max_k: int = 1000) -> Timing:
    """Seconds per call of ``fn`` over k back-to-back calls, wall clock between two ``ti.sync()``."""
    def sample(k: int) -> float:
        ti.sync()
        t0 = time.perf_counter()
        for _ in range(k):
            fn()
        ti.sync()
        return (time.perf_counter() - t0) / k

    return calibrated(sample, reps=reps, target_s=target_s, max_k=max_k, method=method())


def _guarded(what: str, body: Callable[[Any], Outcome], ctx: Context) -> Outcome:
    """``body(ti)``, or the reason it has no time: Taichi missing, or its kernel failing to compile or run."""
    ti = ctx.base.taichi
    if ti is None:
        return Outcome.missing(ctx.base.taichi_note)
    try:
        return body(ti)
    except Exception as exc:  # noqa: BLE001 - a baseline that cannot run is reported, never fatal
        # Taichi's compile errors carry a traceback: its last line says what went wrong
        lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()]
        msg = " ".join((lines[-1] if len(lines) > 2 else " ".join(lines)).split())[:300]
        return Outcome.missing(f"taichi {what} failed: {type(exc).__name__}: {msg}")


def _mismatch(what: str, detail: str) -> Outcome:
    return Outcome.missing(f"taichi {what} gave a wrong result ({detail}); not timed")



# ----------------------------------------------------------------------------- the rows
def elementwise_add(ctx: Context, a: np.ndarray, b: np.ndarray) -> Outcome:
    """``c[i] = a[i] + b[i]`` over f32 fields, checked bit-exact against numpy."""
    def body(ti) -> Outcome:
        add = _kernels(ti)["add"]
        with _fields(ti, a, b, a.shape) as (fa, fb, fc):
            add(fa, fb, fc)
            got = fc.to_numpy()
            if not np.array_equal(got, a + b):
                return _mismatch("add", f"{int(np.count_nonzero(got != a + b))} of {a.size} elements differ")
            t = kernel_timing(ti, lambda: add(fa, fb, fc), reps=ctx.reps, target_s=ctx.target_s)
        return Outcome(t, label="c[i] = a[i] + b[i] over f32 fields")

    return _guarded("add", body, ctx)


def reduce_sum(ctx: Context, x: np.ndarray, tolerance) -> dict[str, Outcome]:
    """``{"taichi": the += idiom over every element, "taichi_strided": per-thread grid-stride partial sums
    then the same +=}`` into a 0-d field, each checked with ``tolerance`` (the op's) against float64."""
    from vyre.ops.registry import compare

    def run(kernel: str, label: str) -> Callable[[Any], Outcome]:
        def body(ti) -> Outcome:
            fn = _kernels(ti)[kernel]
            with _fields(ti, x, ()) as (fx, total):
                fn(fx, total)
                got = np.float32(total[None])  # reading the field synchronizes
                want = np.float32(np.sum(x, dtype=np.float64))
                ok, err, desc = compare(np.asarray(got).reshape(()), np.asarray(want).reshape(()), tolerance)
                if not ok:
                    return _mismatch(kernel, f"{got!r} vs {want!r}: {desc}")
                t = kernel_timing(ti, lambda: fn(fx, total), reps=ctx.reps, target_s=ctx.target_s)
            return Outcome(t, label=label, extra={"abs_err": err})

        return body

    # Taichi compiles a += on a global inside a top-level loop to a subgroup reduction and one float atomic
    # per subgroup; the strided kernel cuts those atomics to one per subgroup of STRIDE_THREADS threads
    return {"taichi": _guarded("sum", run("sum_all", "total[None] += x[i] in a top-level loop (0-d field)"), ctx),
            "taichi_strided": _guarded("strided sum", run("sum_strided", f"{STRIDE_THREADS} threads each sum a "
                                                                       f"grid-stride slice, then total[None] += "
                                                                       f"partial"), ctx)}


def matmul(ctx: Context, a: np.ndarray, b: np.ndarray, *, naive_max_n: int, reps: int,
           check: Callable[[np.ndarray], dict]) -> dict[str, Outcome]:
    """``{"taichi": naive, "taichi_tiled": shared-memory tiles}`` for C = A @ B (f32, square); ``check(C)``
    returns the benchmark's row check ({"ok", "detail", ...})."""
    n = a.shape[0]

    def run(kernel: str, label: str) -> Callable[[Any], Outcome]:
        def body(ti) -> Outcome:
            mm = _kernels(ti)[kernel]
            with _fields(ti, a, b, (n, n)) as (fa, fb, fc):
                mm(fa, fb, fc)
                res = check(fc.to_numpy())
                if not res["ok"]:
                    return _mismatch(kernel, res.get("detail", "rows differ"))
                t = kernel_timing(ti, lambda: mm(fa, fb, fc), reps=reps, target_s=ctx.target_s, max_k=200)
            return Outcome(t, label=label)

        return body

    out = {}
    if n > naive_max_n:
        out["taichi"] = Outcome.missing(f"naive kernel skipped above {naive_max_n} (seconds per launch)")
    else:
        out["taichi"] = _guarded("naive matmul", run("mm_naive", "naive: one output per thread, loop over k"), ctx)
    out["taichi_tiled"] = _guarded(
        "tiled matmul", run("mm_tiled", f"{BM}x{BM} tiles of C, A and B through ti.simt.block.SharedArray in "
                                        f"steps of {BK}, block_dim {NT}, {TM}x{TM} outputs per thread"), ctx)
    return out


def sequence(ctx: Context, x0: np.ndarray, want_x: np.ndarray, dispatches: int, reps: int) -> Outcome:
    """``dispatches`` launches of the two ping-pong kernels (y = x * 0.5 + 1, x = y + 1) then ``ti.sync()``;
    seconds per launch. ``want_x`` is x after the chain (numpy)."""
    def body(ti) -> Outcome:
        k = _kernels(ti)
        half, plus = k["half_plus_one"], k["plus_one"]
        with _fields(ti, x0, x0.shape) as (fx, fy):
            def chain():
                for _ in range(dispatches // 2):
                    half(fx, fy)
                    plus(fy, fx)
                ti.sync()

            chain()
            got = fx.to_numpy()
            if not np.allclose(got, want_x, rtol=1e-5):
                return _mismatch("chain", f"max |diff| {float(np.max(np.abs(got - want_x))):.3g}")
            fx.from_numpy(x0)
            t = host_timing(chain, reps=reps, inner=1)
        return Outcome(Timing([s / dispatches for s in t.samples], t.inner),
                       method=f"{dispatches} Taichi kernel launches (ping-pong, {x0.size} f32 fields, the same two "
                              f"programs) then ti.sync(): wall clock / {dispatches}")

    return _guarded("launch chain", body, ctx)


def round_trip(ctx: Context, a: np.ndarray, x: np.ndarray, y: np.ndarray, reps: int) -> Outcome:
    """saxpy per call: three ``from_numpy`` uploads, the kernel, ``to_numpy`` (fields made once)."""
    def body(ti) -> Outcome:
        saxpy = _kernels(ti)["saxpy"]
        with _fields(ti, a.shape, x.shape, y.shape) as (fa, fx, fy):
            def call() -> np.ndarray:
                fa.from_numpy(a)
                fx.from_numpy(x)
                fy.from_numpy(y)
                saxpy(fa, fx, fy)
                return fy.to_numpy()

            want = a[0] * x + y
            got = call()
            if not np.allclose(got, want, rtol=1e-6):
                return _mismatch("saxpy", f"max |diff| {float(np.max(np.abs(got - want))):.3g}")
            t = host_timing(call, reps=reps, target_s=0.05)
        return Outcome(t, method="3 field.from_numpy, the saxpy kernel, field.to_numpy (fields made once)")

    return _guarded("saxpy round trip", body, ctx)
