"""Sorting 2^24 keys (quick: 2^16): ``vyre.array.sort`` and the op library's ``sort.radix``, int32 and f32.

Rows per dtype:

* ``sort.array``: ``vyre.array.sort(x)`` of a device array, synchronized wall time per evaluation (record +
  evaluate + a 4-byte download, as benches/arrays.py); baselines torch ``torch.sort(t)`` + synchronize and
  cupy ``cp.sort(c)`` + synchronize (same process, wall time too), numpy ``np.sort`` (CPU);
* ``sort.radix``: ``sort.radix`` on resident buffers (device time: timestamp queries around k launches)
  of the u32 order keys of the same values (int32: the sign bit flipped; f32: the bits, ordered as floats
  -- what ``vyre.array.sort`` sorts); baselines torch.sort / cupy.sort with CUDA events, numpy.

torch.sort always returns the indices too (a key-value sort with int64 indices); the vyre rows sort the
values only. Check: every result equals numpy's stable sort bit for bit.
The value is milliseconds per sort (lower is better; a ratio > 1 means vyre is faster).
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np

from . import _harness
from ._harness import Context, Outcome, ResidentOp, host_timing, over_binding_limit, record

NAME = "sort"
DTYPES = ("int32", "float32")


def sizes(ctx: Context) -> list[int]:
    return [1 << 16] if ctx.quick else [1 << 24]


def plan(ctx: Context) -> int:
    return 2 * len(DTYPES) * len(sizes(ctx))


def _data(ctx: Context, dtype: str, n: int) -> np.ndarray:
    if dtype == "int32":
        return ctx.rng.integers(-(2**31), 2**31, n, dtype=np.int64).astype(np.int32)
    x = ctx.rng.standard_normal(n).astype(np.float32)
    x[::97] = -0.0  # signed zeros and ties in the mix
    return x


def order_keys(x: np.ndarray) -> np.ndarray:
    """numpy's sort order as u32 (vyre/array/_kernels/sort.order_key on finite floats, int32 sign-flipped)."""
    u = x.view(np.uint32)
    if x.dtype == np.int32:
        return u ^ np.uint32(0x80000000)
    neg = (u >> np.uint32(31)).astype(bool)
    key = np.where(neg, ~u, u | np.uint32(0x80000000))
    return np.where((u & np.uint32(0x7FFFFFFF)) == 0, np.uint32(0x80000000), key).astype(np.uint32)


def _wall(ctx: Context, fn: Callable[[], object], method: str, label: str | None = None) -> Outcome:
    fn()  # compile and pool fills, then the device clocks up (see _harness.calibrated)
    end = time.perf_counter() + _harness.WARM_S
    while time.perf_counter() < end:
        fn()
    return Outcome(host_timing(fn, reps=ctx.reps, target_s=max(ctx.target_s, 0.05), budget_s=10.0, method=method),
                   label=label)


def _record(name: str, metric: str, params: dict, vyre: Outcome, **more) -> dict:
    """A row's record (milliseconds per sort); ``more``: baselines and check."""
    return record(bench=NAME, name=name, metric=metric, params=params, unit="ms", vyre=vyre, scale=1e3, **more)


def _too_big(ctx: Context, name: str, metric: str, params: dict, nbytes: int) -> dict | None:
    """The row's record with vyre missing when ``nbytes`` exceed one storage binding, else None."""
    why = over_binding_limit(ctx.gpu, nbytes)
    return _record(name, metric, params, Outcome.missing(why)) if why else None


def _bits(a: np.ndarray) -> np.ndarray:
    return a.view(np.uint32) if a.dtype == np.float32 else a


def array_row(ctx: Context, dtype: str, n: int) -> dict:
    import vyre.array as xp

    name = f"sort {dtype} n=2^{n.bit_length() - 1}"
    params = {"n": n, "dtype": dtype, "api": "vyre.array.sort"}
    if (skipped := _too_big(ctx, name, "sort.array", params, 8 * n)) is not None:
        return skipped
    host = _data(ctx, dtype, n)
    gpu = ctx.gpu
    with xp.use(gpu):
        x = xp.asarray(host)

        def run() -> None:  # a 4-byte read of the result waits for the submissions that wrote it
            r = xp.sort(x).evaluate()
            gpu.download_resident_range(r.handle, 0, 4)

        vy = _wall(ctx, run, "wall clock per evaluation: xp.sort + evaluate() + a 4-byte download")
        got = np.asarray(xp.sort(x))
    want = np.sort(host, kind="stable")
    check = {"ok": bool(np.array_equal(_bits(got), _bits(want))), "against": "numpy stable sort, bit-exact"}
    base: dict[str, Outcome] = {"numpy": ctx.numpy(lambda: np.sort(host), method="np.sort (CPU)")}
    torch, cp = ctx.base.torch, ctx.base.cupy
    if torch is None:
        base["torch"] = Outcome.missing(ctx.base.torch_note)
    else:
        t = torch.from_numpy(host).cuda()

        def t_run() -> None:
            torch.sort(t)
            torch.cuda.synchronize()

        base["torch"] = _wall(ctx, t_run, "wall clock: torch.sort (values and int64 indices) + synchronize")
        del t
    if cp is None:
        base["cupy"] = Outcome.missing(ctx.base.cupy_note)
    else:
        c = cp.asarray(host)

        def c_run() -> None:
            cp.sort(c)
            cp.cuda.Device().synchronize()

        base["cupy"] = _wall(ctx, c_run, "wall clock: cp.sort + synchronize")
        del c
    ctx.release()
    return _record(name, "sort.array", params, vy, baselines=base, check=check)


def radix_row(ctx: Context, dtype: str, n: int) -> dict:
    name = f"sort.radix keys of {dtype} n=2^{n.bit_length() - 1}"
    params = {"n": n, "dtype": dtype, "op": "sort.radix"}
    if (skipped := _too_big(ctx, name, "sort.radix", params, 4 * n)) is not None:
        return skipped
    host = _data(ctx, dtype, n)
    keys = order_keys(host)
    op = ResidentOp(ctx.gpu, "sort.radix", {"n": n}, [keys])
    try:
        vy = Outcome(ctx.kernel(op.steps, max_k=200))
        got = op.output()
    finally:
        op.free()
    want = np.sort(keys)
    # the keys sort in numpy's order: the values taken in the keys' stable order are numpy's stable sort
    in_order = host[np.argsort(keys, kind="stable")]
    check = {"ok": bool(np.array_equal(got, want))
             and bool(np.array_equal(_bits(in_order), _bits(np.sort(host, kind="stable")))),
             "against": "numpy sort of the same u32 keys, bit-exact (and the keys in numpy's order of the values)"}
    base: dict[str, Outcome] = {"numpy": ctx.numpy(lambda: np.sort(host), method=f"np.sort of the {dtype} values")}

    def make_torch(torch):
        t = torch.from_numpy(host).cuda()
        return lambda: torch.sort(t)

    def make_cupy(cp):
        c = cp.asarray(host)
        return lambda: cp.sort(c)

    base["torch"] = ctx.torch(make_torch, max_k=200)
    if base["torch"].timing is not None:
        base["torch"].label = f"torch.sort of the {dtype} values (values + int64 indices), CUDA events"
    base["cupy"] = ctx.cupy(make_cupy, max_k=200)
    ctx.release()
    return _record(name, "sort.radix", params, vy, baselines=base, check=check)


def run(ctx: Context):
    for n in sizes(ctx):
        for dtype in DTYPES:
            yield array_row(ctx, dtype, n)
            yield radix_row(ctx, dtype, n)
