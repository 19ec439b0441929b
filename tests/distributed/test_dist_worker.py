"""The worker's protocol, run in this process (no Ray): programs by fingerprint, the fingerprint check,
"missing" after a restart, device-loss recovery, ops, stats."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from vyre.distributed.worker import AdapterWorker
from vyre.errors import DispatchError, DistributedError, ValidationError

from programs import scale_program


@pytest.fixture(scope="module")
def worker(gpu):
    return AdapterWorker("default")


def test_programs_arrive_once_then_by_fingerprint(worker):
    p = scale_program("scale_w")
    xs = np.arange(70, dtype=np.float32)
    status, answer = worker.run_batch({p.fingerprint: p.to_wire()}, [(3, p.fingerprint, [xs, np.float32(2)], None)])
    assert status == "ok" and answer[0][0] == 3 and np.array_equal(answer[0][1][0], 2 * xs)
    assert p.fingerprint in worker.programs()
    status, answer = worker.run_batch({}, [(0, p.fingerprint, [xs, np.float32(3)], None),
                                           (1, p.fingerprint, [xs.astype(np.int32), np.float32(3)], None)])
    assert status == "ok" and [pos for pos, _ in answer] == [0, 1]
    assert np.array_equal(answer[0][1][0], 3 * xs)
    assert isinstance(answer[1][1], DispatchError)  # the job's own error, in its place


def test_unknown_fingerprint_is_answered_missing(worker):
    fresh = AdapterWorker("default")  # as after a restart: no programs
    p = scale_program("scale_w")
    assert fresh.run_batch({}, [(0, p.fingerprint, [np.ones(4, np.float32), np.float32(1)], None)]) == \
        ("missing", [p.fingerprint])


def test_fingerprint_is_checked_on_arrival(worker):
    p, other = scale_program("scale_w"), dataclasses.replace(scale_program("scale_w"), name="renamed")
    jobs = [(0, p.fingerprint, [np.ones(4, np.float32), np.float32(1)], None)]
    status, answer = worker.run_batch({p.fingerprint + "0": other.to_wire()},
                                      [(0, p.fingerprint + "0", jobs[0][2], None)])
    assert status == "ok" and isinstance(answer[0][1], DistributedError)
    assert "fingerprint" in answer[0][1].message
    status, answer = worker.run_batch({"f" * 64: b"{not json"}, [(5, "f" * 64, jobs[0][2], None)])
    assert status == "ok" and answer[0][0] == 5 and isinstance(answer[0][1], ValidationError)


def test_device_loss_recovers_and_retries(gpu):
    w = AdapterWorker("default")
    p = scale_program("scale_w")
    xs = np.arange(10, dtype=np.float32)
    w.lose_device()
    status, answer = w.run_batch({p.fingerprint: p.to_wire()}, [(0, p.fingerprint, [xs, np.float32(4)], None)])
    assert status == "ok" and np.array_equal(answer[0][1][0], 4 * xs)
    w.lose_device()
    status, total = w.run_op("reduce_sum", {}, np.arange(100, dtype=np.int32))
    assert status == "ok" and int(total) == 4950
    stats = w.stats()
    assert stats["recoveries"] == 2 and stats["programs"] == 1 and stats["backend"]["dispatches"] >= 1
    assert stats["adapter_index"] == gpu.adapter_index and stats["host"] and stats["pid"]
