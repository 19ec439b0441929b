"""``flush()`` waits for the GPU: after it returns, reading a result of earlier work costs only the read.

wgpu-native's poll reports an empty queue while work still runs (measured: on lavapipe a 70 ms kernel, then
``flush()`` returned at once and the next 4-byte read waited 70 ms; on the H200 ``evaluate(); flush()``
looped faster than the kernel ran). ``flush()`` now maps a fence written by a new submission.

The kernel's loop stays under 65,535 iterations: llvmpipe (lavapipe) stops every loop of an invocation
after 65,535 iterations in all (gallivm's ``LP_MAX_TGSI_LOOP_ITERATIONS``), silently."""

from __future__ import annotations

import time

import numpy as np

from vyre.backends.wgpu.backend import WgpuBackend
from vyre.errors import NoAdapterError
from vyre.ir.builder import ProgramBuilder

from gpu_policy import skip_or_fail


def _spin_program(steps: int):
    """One u32 per invocation after ``steps`` LCG steps: long-running, its result checkable on the host."""
    b = ProgramBuilder("spin", 64)
    y = b.buffer("y", "u32", access="write")
    i = b.global_index()
    acc = b.var("u32", i, name="acc")
    with b.for_range(0, steps, name="r"):
        acc.set(acc * 1664525 + 1013904223)
    y[i] = acc
    return b.build()


def _lcg(seed: int, steps: int) -> int:
    a, c, m = 1664525, 1013904223, 1 << 32
    for _ in range(steps):
        seed = (seed * a + c) % m
    return seed


def test_flush_returns_after_the_work():
    """(The CI's run with ``VYRE_WGPU_NATIVE=0`` covers wgpu-py's public path, whose fence was already right.)"""
    try:
        gpu = WgpuBackend.new(disk_cache=False)
    except NoAdapterError as exc:
        skip_or_fail(f"no GPU adapter: {exc}")
    try:
        steps = 60_000
        prog = _spin_program(steps)
        h = gpu.allocate_resident(64 * 4)
        gpu.dispatch_resident(prog, [h], (1, 1, 1))
        gpu.download_resident_range(h, 0, 4)  # compiled and warm
        t = time.perf_counter()
        gpu.dispatch_resident(prog, [h], (1, 1, 1))
        gpu.download_resident_range(h, 0, 4)
        once = time.perf_counter() - t  # one kernel and a read, with a real wait (the map)
        repeats = max(1, min(2000, int(0.05 / once) + 1))  # >= ~50 ms of kernels on any adapter
        gpu.dispatch_resident_sequence([(prog, [h], (1, 1, 1))] * repeats)
        t0 = time.perf_counter()
        gpu.flush()
        t1 = time.perf_counter()
        got = gpu.download_resident_range(h, 0, 8).view(np.uint32)
        t2 = time.perf_counter()
        assert [int(v) for v in got] == [_lcg(k, steps) for k in range(2)]
        waited, read = t1 - t0, t2 - t1
        # without a wait, flush takes microseconds and the read waits for the kernel instead
        assert read < 0.5 * waited, f"flush returned in {waited * 1e3:.2f} ms, then a read took {read * 1e3:.2f} ms"
    finally:
        gpu.shutdown()
