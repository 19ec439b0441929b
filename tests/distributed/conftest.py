"""The Ray cluster of the distributed tests: started once per test process (Ray's start-up stays out of
each test's time), two workers sharing this machine's adapter (lavapipe under CI), ``num_cpus=2``.

Without Ray the tests skip locally; under CI=true they fail (``make test`` installs the extra)."""

from __future__ import annotations

import os

import pytest

from gpu_policy import IN_CI

os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")


def require_ray():
    if IN_CI:
        import ray  # noqa: F401 - under CI a missing Ray is a failure, never a skip
    else:
        pytest.importorskip("ray")


@pytest.fixture(scope="session")
def ray_pool(gpu):
    """A :func:`vyre.distributed.local_pool` of two workers (``gpu`` first: no adapter skips or fails)."""
    require_ray()
    from vyre.distributed import local_pool

    pool = local_pool(2, num_cpus=2, timeout_s=120.0, max_restarts=4)
    yield pool
    pool.shutdown()


@pytest.fixture(scope="session")
def mixed_batch(gpu):
    """(jobs, what one WgpuBackend gives for them): the batch the pool must reproduce."""
    from test_dist_batch import mixed_jobs

    jobs = mixed_jobs(gpu.features)
    return jobs, gpu.dispatch_batch(jobs)
