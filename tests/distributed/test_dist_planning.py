"""vyre.distributed's host-side parts that need neither Ray nor a GPU: planning, merging, placement
locks, the lazy import and the missing-Ray error."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from vyre.distributed import placement, sharding
from vyre.errors import DistributedError


def test_import_loads_neither_ray_nor_wgpu():
    code = ("import sys, vyre, vyre.distributed; "
            "bad = [m for m in sys.modules if m.split('.')[0] in ('ray', 'wgpu')]; assert not bad, bad")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


def test_missing_ray_is_a_distributed_error(monkeypatch):
    from vyre.distributed import _ray

    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` now raises ImportError
    with pytest.raises(DistributedError, match="needs Ray") as info:
        _ray.ray()
    assert "vyre[distributed]" in info.value.fix


def test_assign_balances_bytes_deterministically():
    weights = [100, 1, 1, 1, 50, 50, 3, 7]
    groups = sharding.assign(weights, 3)
    assert sorted(k for g in groups for k in g) == list(range(len(weights)))
    assert all(g == sorted(g) for g in groups)
    loads = [sum(weights[k] for k in g) for g in groups]
    assert loads == [100, 57, 56]  # longest first onto the least loaded bin, ties to the lower bin
    assert sharding.assign(weights, 3) == groups
    assert sharding.assign([], 2) == [[], []]
    with pytest.raises(ValueError):
        sharding.assign([1], 0)


def test_chunks_bound_jobs_and_bytes():
    weights = {0: 10, 1: 10, 2: 100, 3: 1, 4: 1, 5: 1}
    assert sharding.chunks([0, 1, 2, 3, 4, 5], weights, max_bytes=25, max_jobs=2) == [[0, 1], [2], [3, 4], [5]]
    assert sharding.chunks([], weights, 10, 10) == []


@pytest.mark.parametrize("n,parts", [(10, 3), (2, 5), (7, 7), (1, 1), (100, 4)])
def test_row_bounds_match_array_split(n, parts):
    bounds = sharding.row_bounds(n, parts)
    want = [(int(s[0]), int(s[-1]) + 1) for s in np.array_split(np.arange(n), min(parts, n))]
    assert bounds == want


def test_job_bytes_counts_inputs():
    a = np.zeros(100, np.float32)
    assert sharding.job_bytes([a, np.float32(2)]) == sharding.JOB_OVERHEAD + 400 + 4
    assert sharding.job_bytes({"x": a}) == sharding.JOB_OVERHEAD + 400
    assert sharding.job_bytes(None) == sharding.JOB_OVERHEAD


@pytest.mark.parametrize("k", [1, 2, 3, 5, 8])
def test_merge_sorted_equals_sort(k):
    rng = np.random.default_rng(k)
    runs = [np.sort(rng.integers(0, 50, rng.integers(1, 40)).astype(np.uint32)) for _ in range(k)]
    got = sharding.merge_sorted(runs)
    assert got.dtype == np.uint32 and np.array_equal(got, np.sort(np.concatenate(runs)))


def test_adapter_claim_is_exclusive_until_released():
    index = 9_990  # no real adapter: the lock files are per index
    first = placement.claim_adapter([index])
    try:
        assert first.index == index
        with pytest.raises(DistributedError, match="already used"):
            placement.claim_adapter([index])
        second_choice = placement.claim_adapter([index, index + 1])
        assert second_choice.index == index + 1
        second_choice.release()
    finally:
        first.release()
    again = placement.claim_adapter([index])
    assert again.index == index
    again.release()


@pytest.mark.parametrize("kwargs,builtin", [({"timeout_s": 0}, ValueError), ({"timeout_s": "1"}, TypeError),
                                            ({"chunk_jobs": 0}, ValueError), ({"chunk_bytes": 1.5}, TypeError),
                                            ({"max_restarts": -1}, ValueError), ({"max_restarts": "3"}, TypeError),
                                            ({"adapters": []}, ValueError)])
def test_pool_arguments_are_builtin_errors(kwargs, builtin):
    # issue 27's rule; checked before Ray is started or joined
    pytest.importorskip("ray")
    from vyre.distributed import Pool
    from vyre.errors import InvalidArgumentError

    with pytest.raises(InvalidArgumentError) as info:
        Pool(**kwargs)
    assert isinstance(info.value, builtin) and info.value.fix


def test_ray_task_error_is_unwrapped():
    # issue 27: Ray's RayTaskError(DispatchError) is a DispatchError too, so it was given back wrapped
    ray = pytest.importorskip("ray")
    from vyre.distributed._ray import as_vyre_error
    from vyre.errors import DispatchError

    cause = DispatchError("reduce.sum of an empty array", fix="pass at least one element")
    try:
        raise cause
    except DispatchError as exc:
        plain = ray.exceptions.RayTaskError("run_op", "Traceback (most recent call last): ...", exc,
                                            pid=42, ip="10.0.0.7")
    wrapped = plain.as_instanceof_cause()
    assert isinstance(wrapped, DispatchError)  # why the old check returned it as it was
    unwrapped = as_vyre_error(wrapped, "reduce.sum over 1 shard(s)")
    assert unwrapped is cause and not isinstance(unwrapped, ray.exceptions.RayError)
    got = as_vyre_error(plain, "reduce.sum over 1 shard(s)")
    assert type(got) is DispatchError and got.fix == cause.fix
    assert got.message == "reduce.sum of an empty array (on worker host 10.0.0.7, pid 42)"
    assert str(got) == got.message + "\nFix: pass at least one element" and got.worker == "host 10.0.0.7, pid 42"
    assert cause.message == "reduce.sum of an empty array"  # the original is not changed
