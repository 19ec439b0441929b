"""Upload and readback GB/s, through vyre's resident buffers, for 16 MiB to 1 GiB.

vyre upload: ``upload_resident(handle, data)`` then ``flush()`` (the data is on the device
when the clock stops); readback: ``download_resident(handle, out=...)`` into a reused numpy
array (the fast path), and ``download_resident(handle)`` into a new array, reported apart:
fresh host memory costs page faults, which are expensive in virtual machines. The default policy
(vyre/backends/wgpu/chunked.py) chunks readbacks of 128 MiB and more through a ring of staging buffers
(host and device copies overlapped) and sends uploads through one staging buffer; ``vyre_one_buffer``
and ``vyre_chunked`` are the same calls with both directions forced one way, measured in the same
process, so a run shows which path wins at each size on its adapter (what set the policy);
on hosts of at least 16 CPUs ``vyre_copy16`` is the default call with 16 host-copy threads instead of 8
(hostcopy.py's cap), to show whether the host copy into mapped memory scales past 8.
Baselines: raw wgpu-py ``queue.write_buffer`` + a fence (a 4-byte ``read_buffer``) and
``queue.read_buffer`` (+ ``np.frombuffer``); torch ``torch.from_numpy(x).cuda()`` /
``t.cpu()`` and cupy ``cp.asarray`` / ``cp.asnumpy`` (pageable host memory, synchronized);
numpy: a host ``np.copyto`` of the same bytes (the host memory bandwidth, for scale).
"""

from __future__ import annotations

import functools
import os

import numpy as np

from ._harness import Context, Outcome, host_timing, record

NAME = "transfer"
MiB = 1 << 20


def sizes(ctx: Context) -> list[int]:
    return [4 * MiB, 16 * MiB, 64 * MiB] if ctx.quick else [16 * MiB, 64 * MiB, 256 * MiB, 1024 * MiB]


def plan(ctx: Context) -> int:
    return 3 * len(sizes(ctx))


def _label(nbytes: int) -> str:
    return f"{nbytes // (1 << 30)} GiB" if nbytes >= 1 << 30 else f"{nbytes // MiB} MiB"


def _reps(ctx: Context, nbytes: int) -> int:
    return 3 if nbytes >= 256 * MiB else ctx.reps


def _round_trip(gpu, h, data: np.ndarray, reps: int, budget: float):
    """Upload (+ flush) and readback (into a reused array) timings of ``h``, and whether the bytes came back."""
    def up():
        gpu.upload_resident(h, data)
        gpu.flush()

    t_up = host_timing(up, reps=reps, inner=1, budget_s=budget)
    into = np.empty(data.nbytes, np.uint8)
    t_down = host_timing(functools.partial(gpu.download_resident, h, out=into), reps=reps, inner=1, budget_s=budget)
    return t_up, t_down, bool(np.array_equal(into, data))


def _forced(gpu, h, data: np.ndarray, reps: int, budget: float, chunk: bool):
    """:func:`_round_trip` with both directions chunked (``chunk``) or both through one staging buffer, whatever
    the default policy (chunked.py) picks for this size."""
    from vyre.backends.wgpu import chunked

    saved = chunked.READBACK_MIN_BYTES, chunked.UPLOAD_MIN_BYTES, gpu._executor.chunked_transfers
    limit = 2 * chunked.CHUNK_MIN if chunk else float("inf")
    chunked.READBACK_MIN_BYTES = chunked.UPLOAD_MIN_BYTES = limit
    gpu._executor.chunked_transfers = True
    try:
        return _round_trip(gpu, h, data, reps, budget)
    finally:
        chunked.READBACK_MIN_BYTES, chunked.UPLOAD_MIN_BYTES, gpu._executor.chunked_transfers = saved


def _copy_threads(gpu, h, data: np.ndarray, reps: int, budget: float, threads: int):
    """:func:`_round_trip` with ``threads`` host-copy threads (a pool of that size for the measurement)."""
    from vyre.backends.wgpu import hostcopy

    saved = hostcopy._n_threads, hostcopy._pool
    hostcopy._n_threads, hostcopy._pool = threads, None
    try:
        return _round_trip(gpu, h, data, reps, budget)
    finally:
        pool = hostcopy._pool
        hostcopy._n_threads, hostcopy._pool = saved
        if pool is not None:
            pool.shutdown(wait=True)


def measure(ctx: Context, nbytes: int):
    gpu = ctx.gpu
    data = np.arange(nbytes // 4, dtype=np.uint32).view(np.uint8)
    reps = _reps(ctx, nbytes)
    budget = 20.0
    h = gpu.allocate_resident(nbytes, label="bench:transfer")
    try:
        def vyre_up():
            gpu.upload_resident(h, data)
            gpu.flush()

        up = host_timing(vyre_up, reps=reps, inner=1, budget_s=budget)
        into = np.empty(nbytes, np.uint8)
        down = host_timing(functools.partial(gpu.download_resident, h, out=into), reps=reps, inner=1, budget_s=budget)
        down_new = host_timing(lambda: gpu.download_resident(h), reps=reps, inner=1, budget_s=budget)
        del into
        back = gpu.download_resident(h)
        ok = bool(np.array_equal(back, data))
        del back
        up_one, down_one, ok_one = _forced(gpu, h, data, reps, budget, chunk=False)
        up_ring, down_ring, ok_ring = _forced(gpu, h, data, reps, budget, chunk=True)
        ok = ok and ok_one and ok_ring
        many = (os.cpu_count() or 1) >= 16
        if many:
            up_16, down_16, ok_16 = _copy_threads(gpu, h, data, reps, budget, 16)
            ok = ok and ok_16
    finally:
        gpu.free_resident(h)
    check = {"ok": ok, "against": "the uploaded bytes (round trip: the default, chunked and one-buffer paths)"}

    up_base: dict[str, Outcome] = {"vyre_one_buffer": Outcome(up_one, method="upload_resident + flush(), "
                                                              "chunking off (one staging buffer)")}
    down_base: dict[str, Outcome] = {"vyre_one_buffer": Outcome(down_one, method="download_resident(h, out=...), "
                                                                "chunking off (one staging buffer)")}
    up_base["vyre_chunked"] = Outcome(up_ring, method="upload_resident + flush(), chunked through a staging ring")
    down_base["vyre_chunked"] = Outcome(down_ring, method="download_resident(h, out=...), chunked through a "
                                        "staging ring")
    host = np.empty_like(data)
    t = host_timing(functools.partial(np.copyto, host, data), reps=reps, inner=1, budget_s=budget)
    up_base["numpy"] = Outcome(t, method="host np.copyto of the same bytes (host memory bandwidth)")
    down_base["numpy"] = Outcome(t, method="host np.copyto of the same bytes (host memory bandwidth)")
    del host
    if many:
        up_base["vyre_copy16"] = Outcome(up_16, method="upload_resident + flush(), 16 host-copy threads")
        down_base["vyre_copy16"] = Outcome(down_16, method="download_resident(h, out=...), 16 host-copy threads")

    raw = ctx.base.raw
    buf = raw.storage(nbytes)

    def raw_up():
        raw.queue.write_buffer(buf, 0, data)
        raw.wait()

    up_base["raw_wgpu"] = Outcome(host_timing(raw_up, reps=reps, inner=1, budget_s=budget),
                                  method="queue.write_buffer + a 4-byte read_buffer fence")
    down_base["raw_wgpu"] = Outcome(
        host_timing(lambda: np.frombuffer(raw.queue.read_buffer(buf), np.uint8), reps=reps, inner=1, budget_s=budget),
        method="queue.read_buffer + np.frombuffer")
    buf.destroy()

    if ctx.base.torch is not None:
        torch = ctx.base.torch

        def t_up():
            t = torch.from_numpy(data).cuda()
            torch.cuda.synchronize()
            return t

        dev = t_up()
        up_base["torch"] = Outcome(host_timing(t_up, reps=reps, inner=1, budget_s=budget),
                                   method="torch.from_numpy(x).cuda() + synchronize (pageable memory)")
        down_base["torch"] = Outcome(host_timing(lambda: dev.cpu(), reps=reps, inner=1, budget_s=budget),
                                     method="tensor.cpu() (pageable memory)")
        del dev
    else:
        up_base["torch"] = down_base["torch"] = Outcome.missing(ctx.base.torch_note)
    if ctx.base.cupy is not None:
        cp = ctx.base.cupy

        def c_up():
            c = cp.asarray(data)
            ctx.base.cupy_sync()
            return c

        dev = c_up()
        up_base["cupy"] = Outcome(host_timing(c_up, reps=reps, inner=1, budget_s=budget),
                                  method="cp.asarray(x) + synchronize (pageable memory)")
        down_base["cupy"] = Outcome(host_timing(lambda: cp.asnumpy(dev), reps=reps, inner=1, budget_s=budget),
                                    method="cp.asnumpy(x) (pageable memory)")
        del dev
    else:
        up_base["cupy"] = down_base["cupy"] = Outcome.missing(ctx.base.cupy_note)
    ctx.release()
    params = {"bytes": nbytes}
    lbl = _label(nbytes)
    yield record(bench=NAME, name=f"upload {lbl}", metric="transfer.upload", params=params, unit="GB/s",
                 vyre=Outcome(up, method="upload_resident + flush()"), baselines=up_base, work=nbytes, scale=1e9,
                 check=check)
    yield record(bench=NAME, name=f"readback {lbl}", metric="transfer.readback", params=params, unit="GB/s",
                 vyre=Outcome(down, method="download_resident(h, out=a reused numpy array)"), baselines=down_base,
                 work=nbytes, scale=1e9, check=check)
    yield record(bench=NAME, name=f"readback {lbl}, new array", metric="transfer.readback_new", params=params,
                 unit="GB/s", vyre=Outcome(down_new, method="download_resident(h) (allocates a new numpy array: "
                 "its page faults are part of the time)"), baselines={}, work=nbytes, scale=1e9, check=check)


def run(ctx: Context):
    for n in sizes(ctx):
        yield from measure(ctx, n)
