"""dispatch_async / PendingDispatch and timed dispatch (vyre/backends/wgpu/async_dispatch.py, timestamps.py)."""

from __future__ import annotations

import numpy as np
import pytest

from vyre.backends.config import DispatchConfig
from vyre.errors import DispatchError
from vyre.ir.builder import ProgramBuilder

from gpu_policy import skip_or_fail

U32 = np.uint32
# llvmpipe stops every loop after 65535 iterations, so the spin count stays below that.
SPIN = 60_000


def _spin():
    """x = x*3+1, k[0] times per element (a kernel that takes a while)."""
    b = ProgramBuilder("async_spin", workgroup_size=64)
    x = b.buffer("x", "u32", access="read_write")
    k = b.buffer("k", "u32", access="uniform", count=1)
    out = b.buffer("steps", "u32", access="write")
    i = b.global_index()
    with b.if_(i < x.len()):
        v = b.var("u32", init=x[i])
        with b.for_range(0, k[0]):
            v.set(v * 3 + 1)
        x[i] = v
        out[i] = k[0]
    return b.build()


SPIN_PROGRAM = _spin()


def spun(x: np.ndarray, k: int) -> np.ndarray:
    """x after k steps of x*3+1 (mod 2^32): 3^k x + (3^k - 1) / 2."""
    a = pow(3, k, 2**32)
    c = ((pow(3, k, 2**33) - 1) // 2) % 2**32
    return ((x.astype(np.uint64) * a + c) % 2**32).astype(U32)


def test_four_in_flight_waited_in_reverse(gpu):
    rng = np.random.default_rng(11)
    xs = [rng.integers(0, 2**32, 256 * (j + 1), dtype=U32) for j in range(4)]
    copies = [x.copy() for x in xs]
    ks = [1000, 2000, 3000, 4000]
    pending = [gpu.dispatch_async(SPIN_PROGRAM, [x, U32([k])]) for k, x in zip(ks, xs)]
    slots = {id(p._slot) for p in pending}
    assert len(slots) == 4, "each dispatch in flight owns its buffers"
    for k, x, p in reversed(list(zip(ks, xs, pending))):
        x_out, steps = p.wait()
        np.testing.assert_array_equal(x_out, spun(x, k))
        np.testing.assert_array_equal(steps, np.full(x.size, k, U32))
        assert p.done() and p.wait()[0] is x_out, "wait() again returns the same outputs"
    for x, c in zip(xs, copies):
        np.testing.assert_array_equal(x, c)  # inputs are not modified


def test_async_slots_are_reused(gpu):
    x = np.arange(512, dtype=U32)
    for p in [gpu.dispatch_async(SPIN_PROGRAM, [x, U32([3])]) for _ in range(3)]:
        p.wait()
    before = (gpu._stats.get("buffers_created", 0), gpu._stats.get("bind_groups_created", 0))
    for _ in range(2):
        pending = [gpu.dispatch_async(SPIN_PROGRAM, [x + j, U32([3])]) for j in range(3)]
        for j, p in enumerate(pending):
            np.testing.assert_array_equal(p.wait()[0], spun(x + j, 3))
    assert (gpu._stats.get("buffers_created", 0), gpu._stats.get("bind_groups_created", 0)) == before


def test_wait_timeout_raises_and_waiting_again_works(gpu):
    x = np.arange(4096, dtype=U32)
    p = gpu.dispatch_async(SPIN_PROGRAM, [x, U32([SPIN])])
    if gpu.stats()["driver"] == "native":
        # done() only polls: the map completes in a later poll. (The public API's map thread may already have
        # seen the work finish: lavapipe runs it inside queue.submit.)
        assert not p.done()
    if not p.done():
        with pytest.raises(DispatchError, match="did not finish"):
            p.wait(timeout=0)
    x_out, _ = p.wait(timeout=60)
    np.testing.assert_array_equal(x_out, spun(x, SPIN))
    assert p.done()


def test_async_bad_inputs_raise_at_once(gpu):
    with pytest.raises(DispatchError):
        gpu.dispatch_async(SPIN_PROGRAM, [np.arange(4, dtype=np.int32), U32([1])])
    with pytest.raises(DispatchError):
        gpu.dispatch_async(SPIN_PROGRAM, [np.arange(4, dtype=U32)])


def test_async_and_timed_zero_grid_is_a_dispatch_error(gpu):
    x = np.arange(10, dtype=U32)
    with pytest.raises(DispatchError, match="dimension of 0"):
        gpu.dispatch_async(SPIN_PROGRAM, [x, U32([5])], DispatchConfig(grid=0))
    with pytest.raises(DispatchError, match="dimension of 0"):
        gpu.dispatch_timed(SPIN_PROGRAM, [x, U32([5])], (3, 0))


def test_dispatch_timed_uses_timestamps(gpu):
    if "timestamp-query" not in gpu.features:
        skip_or_fail(f"adapter {gpu.adapter_info['device']!r} has no timestamp-query")
    x = np.arange(1024, dtype=U32)
    r = gpu.dispatch_timed(SPIN_PROGRAM, [x, U32([2000])])
    assert r.source == "timestamp" and r.gpu_ns > 0 and r.wall_ns > 0
    np.testing.assert_array_equal(r.outputs[0], spun(x, 2000))
    outputs, gpu_ns, source, wall_ns = r  # a NamedTuple
    assert gpu_ns == r.gpu_ns and r.seconds == gpu_ns / 1e9
    longer = gpu.dispatch_timed(SPIN_PROGRAM, [x, U32([40_000])])
    assert longer.gpu_ns > r.gpu_ns, "20x the work takes more GPU time"


def test_dispatch_timed_falls_back_to_wall_clock(gpu, monkeypatch):
    monkeypatch.setattr(gpu._dev, "features", frozenset(gpu.features) - {"timestamp-query"})
    x = np.arange(256, dtype=U32)
    r = gpu.dispatch_timed(SPIN_PROGRAM, [x, U32([10])])
    assert r.source == "wall-clock" and r.gpu_ns > 0 and r.gpu_ns == r.wall_ns
    np.testing.assert_array_equal(r.outputs[0], spun(x, 10))
    t = gpu.dispatch_resident_sequence_timed([], read=None)
    assert t.source == "wall-clock" and t.outputs == [] and t.gpu_ns > 0


def test_timed_resident_sequence(gpu):
    if "timestamp-query" not in gpu.features:
        skip_or_fail(f"adapter {gpu.adapter_info['device']!r} has no timestamp-query")
    hk, hx, hs = gpu.allocate_resident(16), gpu.allocate_resident(4096), gpu.allocate_resident(4096)
    try:
        x = np.arange(1024, dtype=U32)
        gpu.upload_resident_many([(hk, U32([500, 0, 0, 0])), (hx, x)])
        t = gpu.dispatch_resident_sequence_timed([(SPIN_PROGRAM, [hx, hk, hs])] * 3, read=[hx, (hs, 0, 8)])
        assert t.source == "timestamp" and t.gpu_ns > 0
        np.testing.assert_array_equal(t.outputs[0].view(U32), spun(x, 1500))
        np.testing.assert_array_equal(t.outputs[1].view(U32), [500, 500])
    finally:
        for h in (hk, hx, hs):
            gpu.free_resident(h)
