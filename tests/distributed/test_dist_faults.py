"""Faults: a worker killed mid-batch, a lost device, a worker that does not answer, placement by the
vyre_adapter resource. The caller sees every result or a typed vyre error, never a hang."""

from __future__ import annotations

import numpy as np
import pytest
from test_dist_batch import assert_same, scale_program

from vyre.errors import DistributedError, WorkerTimeoutError


def test_worker_killed_mid_batch_still_gives_every_result(ray_pool, mixed_batch):
    import ray

    jobs, want = mixed_batch
    victim = ray_pool.workers[0]
    pid_before = ray.get(victim.stats.remote(), timeout=60)["pid"]
    run = ray_pool.submit_batch(jobs)  # calls are queued on both workers now
    ray.kill(victim, no_restart=False)  # Ray restarts it; its unfinished calls run again
    assert_same(run.result(timeout_s=120), want)
    stats = ray_pool.stats()
    assert all("error" not in s for s in stats), stats
    assert stats[0]["pid"] != pid_before  # a new process took the worker's place
    assert_same(ray_pool.dispatch_batch(jobs[:60]), want[:60])  # and the pool goes on


def test_lost_device_recovers_inside_the_worker(ray_pool, mixed_batch):
    import ray

    jobs, want = mixed_batch
    before = ray_pool.stats()[1]["recoveries"]
    ray.get(ray_pool.workers[1].lose_device.remote(), timeout=60)
    assert_same(ray_pool.dispatch_batch(jobs[:80]), want[:80])
    x = np.arange(10_000, dtype=np.int32)
    ray.get(ray_pool.workers[1].lose_device.remote(), timeout=60)
    assert int(ray_pool.reduce("sum", x)) == int(x.sum())
    assert ray_pool.stats()[1]["recoveries"] == before + 2


def test_a_worker_that_does_not_answer_is_a_timeout_error(ray_pool):
    p = scale_program("scale_t")
    jobs = [(p, [np.ones(64, np.float32), np.float32(k)]) for k in range(8)]
    for w in ray_pool.workers:
        w.sleep.remote(2.0)  # both workers busy: the batch queues behind
    with pytest.raises(WorkerTimeoutError, match="unanswered after 0.3 s") as info:
        ray_pool.dispatch_batch(jobs, timeout_s=0.3)
    assert info.value.code == "VYRE-E309" and "timeout_s" in info.value.fix
    with pytest.raises(WorkerTimeoutError):
        ray_pool.reduce("sum", np.ones(1000, np.float32), timeout_s=0.2)
    assert [o[0][0] for o in ray_pool.map(p, [[np.ones(4, np.float32), np.float32(3)]])] == [3.0]


def test_pool_places_workers_by_the_vyre_adapter_resource(ray_pool):
    """local_pool offered one vyre_adapter unit per adapter of this host: a cluster Pool() takes them all,
    each worker claiming an adapter on its node; a second pool finds none free and times out, typed."""
    import ray

    from vyre.distributed import RESOURCE, Pool, host_adapters

    units = int(ray.cluster_resources().get(RESOURCE, 0))
    assert units == len(host_adapters())
    with Pool(timeout_s=60) as pool:
        assert pool.size == units
        p = scale_program("scale_c")
        (out,) = pool.map(p, [[np.arange(5, dtype=np.float32), np.float32(2)]])
        assert np.array_equal(out[0], 2 * np.arange(5, dtype=np.float32))
        assert sorted(s["adapter_index"] for s in pool.stats()) == sorted(host_adapters())
        with pytest.raises(WorkerTimeoutError):
            Pool(actors=1, timeout_s=1.0)  # no unit left: never placed
    with pytest.raises(DistributedError, match="shut down"):
        pool.dispatch_batch([])


def test_a_worker_gone_for_good_has_its_calls_run_by_the_others(ray_pool, mixed_batch):
    """No restarts left: the dead worker's calls move to the next worker; with none left, a typed error."""
    import ray

    from vyre.distributed import Pool

    jobs, want = mixed_batch
    with Pool(adapters=["default", "default"], max_restarts=0, timeout_s=120) as pool:
        run = pool.submit_batch(jobs[:100])
        ray.kill(pool.workers[0], no_restart=True)
        assert_same(run.result(), want[:100])
        ray.kill(pool.workers[1], no_restart=True)
        with pytest.raises(DistributedError, match="every worker tried died"):
            pool.dispatch_batch(jobs[:10])
