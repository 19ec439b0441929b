"""dispatch_batch: one result per job, bad jobs isolated, one submission for the valid ones."""

from __future__ import annotations

import time

import numpy as np
import pytest

import vyre
from vyre.backends.config import DispatchConfig
from vyre.errors import DeviceLostError, DispatchError, NoAdapterError, ValidationError
from vyre.ir.builder import ProgramBuilder

from gpu_policy import skip_or_fail


@pytest.fixture(scope="module")
def gpu():
    try:
        return vyre.WgpuBackend.new(disk_cache=False)
    except NoAdapterError as exc:
        skip_or_fail(f"no GPU adapter: {exc}")


def axpy(a: float):
    b = ProgramBuilder("axpy", 64)
    x = b.buffer("x", "f32")
    y = b.buffer("y", "f32", access="read_write")
    i = b.global_index()
    with b.if_(i < y.len()):
        y[i] = x[i] * float(a) + y[i]
    return b.build()


def iota():
    b = ProgramBuilder("iota", 32)
    out = b.buffer("out", "u32", access="write")
    i = b.global_index()
    with b.if_(i < out.len()):
        out[i] = i * 3
    return b.build()


def invalid_program():
    b = ProgramBuilder("invalid", 64)
    x = b.buffer("x", "f32")
    y = b.buffer("y", "u32", access="write")
    i = b.global_index()
    y[i] = x[i]  # f32 stored into u32: rejected by the validator
    return b.build(validate=False)


def inputs(n, seed):
    r = np.random.default_rng(seed)
    return [r.standard_normal(n, dtype=np.float32), r.standard_normal(n, dtype=np.float32)]


def test_bad_jobs_do_not_fail_the_others(gpu):
    p2, p3 = axpy(2), axpy(3)
    good = [(p2, inputs(100, 1)), (p3, inputs(257, 2)), (iota(), [], DispatchConfig(counts={"out": 70})),
            (p2, inputs(5, 3)), (p2, inputs(100, 4))]
    bad = [(invalid_program(), [np.zeros(4, np.float32)]),  # invalid program
           (p2, [np.zeros(4, np.float64), np.zeros(4, np.float32)]),  # wrong dtype
           (p3, inputs(10, 5)[:1]),  # missing input
           ("not a program", []),  # malformed
           (p2,)]  # malformed
    jobs = [good[0], bad[0], good[1], bad[1], good[2], bad[2], good[3], bad[3], good[4], bad[4]]
    s0 = gpu.stats()
    results = gpu.dispatch_batch(jobs)
    assert len(results) == len(jobs)
    assert isinstance(results[1], ValidationError)
    for k in (3, 5, 7, 9):
        assert isinstance(results[k], DispatchError) and results[k].fix, results[k]
    for k, job in zip((0, 2, 4, 6, 8), good):
        assert isinstance(results[k], list), results[k]
        expect = gpu.dispatch(*job)
        assert len(results[k]) == len(expect)
        for got, want in zip(results[k], expect):
            assert got.dtype == want.dtype and got.shape == want.shape
            np.testing.assert_array_equal(got, want)
    s1 = gpu.stats()
    assert s1["submits"] == s0["submits"] + 1 + len(good)  # the batch's one submission, then the checks
    assert s1["batches"] == s0["batches"] + 1


def test_many_jobs_of_one_program_in_one_submission(gpu, monkeypatch):
    p = axpy(0.5)
    jobs = [(p, inputs(64 + k, k)) for k in range(40)]
    s0 = gpu.stats()
    results = gpu.dispatch_batch(jobs)
    for (_, (x, y)), (out,) in zip(jobs, results):
        np.testing.assert_allclose(out, x * np.float32(0.5) + y, rtol=1e-6)
    s1 = gpu.stats()
    assert s1["submits"] == s0["submits"] + 1 and s1["dispatches"] == s0["dispatches"] + 40
    # the same batch shape again: every job slot's buffers and bind groups are reused
    results = gpu.dispatch_batch([(p, inputs(64 + k, 100 + k)) for k in range(40)])
    s2 = gpu.stats()
    assert s2["buffers_created"] == s1["buffers_created"]
    assert s2["bind_groups_created"] == s1["bind_groups_created"]
    assert s2["submits"] == s1["submits"] + 1
    # submissions are split at batch_max_jobs
    monkeypatch.setattr(gpu._dispatcher, "batch_max_jobs", 16)
    results = gpu.dispatch_batch(jobs)
    assert gpu.stats()["submits"] == s2["submits"] + 3
    for (_, (x, y)), (out,) in zip(jobs, results):
        np.testing.assert_allclose(out, x * np.float32(0.5) + y, rtol=1e-6)


def test_zero_grid_and_empty_batch(gpu):
    assert gpu.dispatch_batch([]) == []
    x, y = inputs(10, 0)
    submits = gpu.stats()["submits"]
    with pytest.raises(DispatchError, match="dimension of 0"):
        gpu.dispatch_batch([(axpy(1), [x, y]), (axpy(1), [x, y], DispatchConfig(grid=0))])
    assert gpu.stats()["submits"] == submits, "nothing of the batch runs"


def test_a_failed_submission_is_retried_job_by_job(gpu, monkeypatch):
    p = axpy(4)
    jobs = [(p, inputs(50, k)) for k in range(4)]
    runner = gpu._dispatcher.runner
    real = runner.run

    def picky(jobs_):
        if len(jobs_) > 1:
            raise DispatchError("simulated GPU rejection of the whole submission")
        return real(jobs_)

    monkeypatch.setattr(runner, "run", picky)
    results = gpu.dispatch_batch(jobs)
    for (_, (x, y)), (out,) in zip(jobs, results):
        np.testing.assert_allclose(out, x * np.float32(4) + y, rtol=1e-6)


def test_batch_on_a_lost_device_raises():
    try:
        b = vyre.WgpuBackend.new(disk_cache=False)
    except NoAdapterError as exc:
        skip_or_fail(f"no GPU adapter: {exc}")
    b.force_device_lost()
    with pytest.raises(DeviceLostError):
        b.dispatch_batch([(axpy(1), inputs(4, 0))])


def test_batch_is_faster_than_a_loop(gpu, capsys):
    """100 small jobs: one submission vs 100 dispatch() calls (printed; the batch must not be slower)."""
    p = axpy(1.5)
    jobs = [(p, inputs(256, k)) for k in range(100)]
    gpu.dispatch_batch(jobs)
    for job in jobs[:3]:
        gpu.dispatch(*job)
    best_batch = best_loop = float("inf")
    for _ in range(3):
        t = time.perf_counter()
        gpu.dispatch_batch(jobs)
        best_batch = min(best_batch, time.perf_counter() - t)
        t = time.perf_counter()
        for job in jobs:
            gpu.dispatch(*job)
        best_loop = min(best_loop, time.perf_counter() - t)
    with capsys.disabled():
        print(f"\n[vyre] 100 small jobs: dispatch_batch {best_batch * 1e3:.1f} ms, "
              f"dispatch() loop {best_loop * 1e3:.1f} ms")
    assert best_batch < best_loop
