"""pool.dispatch_batch and pool.map on two Ray workers equal one WgpuBackend, job for job."""

from __future__ import annotations

import numpy as np
import pytest

from vyre.errors import DispatchError, VyreError

from programs import CASES, scale_program


def mixed_jobs(features) -> list:
    """At least 200 jobs: the parity catalogue (every IR construct) four times, scale jobs of many
    sizes, and jobs that fail (malformed, wrong dtype) in their places."""
    jobs: list = []
    for _ in range(4):
        jobs += [c.build() for c in CASES if c.needs <= features]
    p = scale_program()
    rng = np.random.default_rng(7)
    jobs += [(p, [rng.standard_normal(50 + 37 * j).astype(np.float32), np.float32(j)]) for j in range(30)]
    jobs.insert(5, ("not a job",))
    jobs.insert(50, (p, [np.ones(8, np.int32), np.float32(2)]))  # wrong dtype: a DispatchError
    jobs.insert(120, ("not a program", []))
    assert len(jobs) >= 200
    return jobs


def assert_same(got: list, want: list) -> None:
    """Bit for bit: same outputs (dtype, shape, bytes) or an error of the same class and message."""
    assert len(got) == len(want)
    for k, (g, w) in enumerate(zip(got, want)):
        if isinstance(w, VyreError):
            assert type(g) is type(w) and str(g) == str(w), (k, g, w)
            continue
        assert isinstance(g, list) and len(g) == len(w), (k, g)
        for a, b in zip(g, w):
            assert a.dtype == b.dtype and a.shape == b.shape, (k, a.dtype, b.dtype, a.shape, b.shape)
            assert a.tobytes() == b.tobytes(), f"job {k}: outputs differ"


def test_mixed_batch_equals_one_backend(ray_pool, mixed_batch):
    jobs, want = mixed_batch
    got = ray_pool.dispatch_batch(jobs)
    assert_same(got, want)
    assert isinstance(got[5], DispatchError) and isinstance(got[50], DispatchError)
    assert all(a.flags.writeable for out in got if isinstance(out, list) for a in out)
    stats = ray_pool.stats()
    assert [s["worker"] for s in stats] == [0, 1]
    assert all(s["backend"]["dispatches"] > 0 for s in stats)  # both workers got work
    assert sum(s["programs"] for s in stats) >= len({j[0].fingerprint for j in jobs if hasattr(j[0], "body")})


def test_map_equals_dispatch_and_raises_the_first_error(ray_pool, gpu):
    p = scale_program("scale_map")
    inputs = [[np.arange(n, dtype=np.float32), np.float32(n)] for n in (1, 64, 65, 1000)]
    got = ray_pool.map(p, inputs)
    assert_same(got, [gpu.dispatch(p, x) for x in inputs])
    with pytest.raises(DispatchError):
        ray_pool.map(p, inputs[:1] + [[np.ones(3, np.int32), np.float32(1)]])
    assert ray_pool.map(p, []) == []


def test_wire_bytes_travel_once_per_worker(ray_pool):
    """Spy on the calls: the first batch sends each program once to each worker using it, the
    second sends fingerprints only; a worker that forgot its programs gets them again."""
    import ray

    from vyre.distributed.batch import BatchRun
    from vyre.distributed.worker import AdapterWorker

    sent: list[tuple[int, dict]] = []

    class Method:
        def __init__(self, index):
            self.index, self.worker = index, AdapterWorker("default")

        def remote(self, wire, jobs):
            sent.append((self.index, dict(wire)))
            return ray.put(self.worker.run_batch(wire, jobs))

    class Handle:
        def __init__(self, index):
            self.run_batch = Method(index)

    class Spy:
        size, chunk_bytes, chunk_jobs, timeout_s = 2, 1 << 20, 4, 60.0

        def __init__(self):
            self._workers = [Handle(0), Handle(1)]
            self._known = [set(), set()]

    spy = Spy()
    p, q = scale_program("scale_a"), scale_program("scale_b")
    jobs = [(prog, [np.arange(n, dtype=np.float32), np.float32(2)]) for n in range(1, 21) for prog in (p, q)]
    first = BatchRun(spy, jobs).result()
    assert all(isinstance(out, list) for out in first)
    shipped = [(w, fp) for w, wire in sent for fp in wire]
    assert len(shipped) == len(set(shipped)), "a program's bytes travelled twice to one worker"
    assert {fp for _, fp in shipped} == {p.fingerprint, q.fingerprint}
    assert len(sent) > len(shipped)  # later calls named the programs by fingerprint only
    sent.clear()
    assert_same(BatchRun(spy, jobs).result(), first)
    assert len(sent) > 2 and all(not wire for _, wire in sent)  # fingerprints only
    spy._workers[1] = Handle(1)  # a restarted worker: its programs are gone
    sent.clear()
    assert_same(BatchRun(spy, jobs).result(), first)
    assert {(w, fp) for w, wire in sent for fp in wire} == {(w, fp) for w, fp in shipped if w == 1}
