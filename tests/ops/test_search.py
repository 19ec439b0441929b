"""search.knn and FlatIndex beyond the witnesses: several adds against a numpy brute force (both
metrics, exact on small-integer data), ties, k = 1, k = ntotal, k > 64 (rounds), the random-float
contract, typed errors that leave the index intact, reset. Both backends."""

from __future__ import annotations

import numpy as np
import pytest

import vyre.ops
from vyre.errors import DispatchError
from vyre.ops.search._contract import contract_errors
from vyre.ops.search.index import FlatIndex
from vyre.ops.search.knn import brute_force

BACKENDS = ["reference", "gpu"]
D = 12  # vec4 rows, one partial K-tile


@pytest.fixture(params=BACKENDS)
def backend(request):
    return request.getfixturevalue(request.param)


def _ints(rng, rows, d=D, lo=-3, hi=4):
    return rng.integers(lo, hi, (rows, d)).astype(np.float32)


@pytest.mark.parametrize("metric", ["ip", "l2"])
def test_several_adds_match_brute_force(backend, metric):
    rng = np.random.default_rng(7)
    index = FlatIndex(backend, D, metric)
    parts = [_ints(rng, m) for m in (30, 1, 90, 50)]  # grows past 64 and 128 rows: device-side copies
    for p in parts:
        index.add(p)
    database = np.concatenate(parts)
    assert index.ntotal == 171
    queries = np.concatenate([_ints(rng, 5), database[[3, 100]]])  # two queries equal to stored vectors
    for k in (1, 10):
        dist, ids = index.search(queries, k)
        want_d, want_i = brute_force(queries, database, k, metric)
        assert dist.dtype == np.float32 and ids.dtype == np.uint32 and ids.shape == (7, k)
        np.testing.assert_array_equal(ids, want_i)
        np.testing.assert_array_equal(dist, want_d)
    if metric == "l2":
        assert dist[5, 0] == 0 and dist[6, 0] == 0  # a stored vector is its own nearest neighbour


def test_k_equals_ntotal_scalar_rows(backend):
    rng = np.random.default_rng(8)
    database = _ints(rng, 23, d=5)  # d % 4 != 0: scalar loads
    index = FlatIndex(backend, 5, "l2")
    index.add(database)
    queries = _ints(rng, 4, d=5)
    dist, ids = index.search(queries, 23)
    want_d, want_i = brute_force(queries, database, 23, "l2")
    np.testing.assert_array_equal(ids, want_i)
    np.testing.assert_array_equal(dist, want_d)
    assert sorted(ids[0].tolist()) == list(range(23))


@pytest.mark.parametrize("metric", ["ip", "l2"])
def test_k_over_64_runs_in_rounds(backend, metric):
    rng = np.random.default_rng(15)
    base = _ints(rng, 75, lo=-1, hi=2)  # few distinct values: ties across the round boundaries
    database = np.concatenate([base, base])
    index = FlatIndex(backend, D, metric)
    index.add(database)
    queries = _ints(rng, 3, lo=-1, hi=2)
    for k in (65, 150):  # two rounds; three rounds ending at k = ntotal
        dist, ids = index.search(queries, k)
        want_d, want_i = brute_force(queries, database, k, metric)
        np.testing.assert_array_equal(ids, want_i)
        np.testing.assert_array_equal(dist, want_d)


def test_ties_go_to_the_lower_index(backend):
    rng = np.random.default_rng(9)
    base = _ints(rng, 40)
    database = np.concatenate([base, base, np.zeros((50, D), np.float32)])  # rows i and 40 + i equal
    index = FlatIndex(backend, D, "l2")
    index.add(database)
    dist, ids = index.search(base[[5, 17]], 2)
    np.testing.assert_array_equal(ids, [[5, 45], [17, 57]])
    np.testing.assert_array_equal(dist, np.zeros((2, 2), np.float32))
    ip = FlatIndex(backend, D, "ip")
    ip.add(database)
    dist, ids = ip.search(np.zeros((1, D), np.float32), 10)  # every inner product is 0
    np.testing.assert_array_equal(ids, [list(range(10))])
    np.testing.assert_array_equal(dist, np.zeros((1, 10), np.float32))


@pytest.mark.parametrize("metric", ["ip", "l2"])
def test_random_floats_keep_the_contract(backend, metric):
    rng = np.random.default_rng(10)
    database = rng.standard_normal((300, 32), dtype=np.float32)
    queries = rng.standard_normal((20, 32), dtype=np.float32) * 3
    dist, ids = vyre.ops.search_knn(backend, queries, database, k=10, metric=metric)
    assert contract_errors(queries, database, dist, ids, metric) == []
    want_d, _ = brute_force(queries, database, 10, metric)
    np.testing.assert_allclose(dist, want_d, rtol=1e-5, atol=1e-4)


def test_contract_check_catches_a_wrong_answer():
    rng = np.random.default_rng(11)
    database = rng.standard_normal((50, 8), dtype=np.float32)
    queries = rng.standard_normal((3, 8), dtype=np.float32)
    dist, ids = brute_force(queries, database, 4, "ip")
    assert contract_errors(queries, database, dist, ids, "ip") == []
    worst = np.argsort(queries @ database.T, axis=1)[:, :4].astype(np.uint32)
    assert contract_errors(queries, database, dist, worst, "ip")
    assert contract_errors(queries, database, dist + 0.5, ids, "ip")


def test_op_slices_give_the_same_answer(backend):
    rng = np.random.default_rng(12)
    database, queries = _ints(rng, 200), _ints(rng, 3)
    want = brute_force(queries, database, 10, "ip")
    for slices in (1, 2, 4):
        dist, ids = vyre.ops.search_knn(backend, queries, database, k=10, metric="ip", slices=slices)
        np.testing.assert_array_equal(ids, want[1])
        np.testing.assert_array_equal(dist, want[0])


def _expect(fix_fragment: str, fn, *args, **kwargs):
    with pytest.raises(DispatchError) as err:
        fn(*args, **kwargs)
    assert err.value.fix and fix_fragment in err.value.fix, err.value.fix
    return err.value


def test_bad_input_raises_and_leaves_the_index_intact(backend):
    rng = np.random.default_rng(13)
    database, queries = _ints(rng, 70), _ints(rng, 3)
    index = FlatIndex(backend, D, "l2")
    _expect("index.add(vectors)", index.search, queries, 1)  # empty index
    index.add(database)
    before = index.search(queries, 5)
    nan = queries.copy()
    nan[1, 2] = np.nan
    _expect("astype(np.float32)", index.add, database.astype(np.float64))
    _expect(f"(rows, {D})", index.add, database[:, :5])
    _expect("reshape(1, -1)", index.add, database[0])
    _expect("nan_to_num", index.add, nan)
    _expect("astype(np.float32)", index.search, queries.astype(np.float16), 5)
    _expect(f"(rows, {D})", index.search, queries[:, :4], 5)
    _expect("at least one", index.search, queries[:0], 5)
    _expect("nan_to_num", index.search, nan, 5)
    _expect("between 1 and 70", index.search, queries, 71)
    _expect("between 1 and 70", index.search, queries, 0)
    _expect("k=10", index.search, queries, 2.5)
    assert index.ntotal == 70
    after = index.search(queries, 5)
    np.testing.assert_array_equal(after[0], before[0])
    np.testing.assert_array_equal(after[1], before[1])


def test_constructor_and_op_errors(reference):
    _expect("'ip' or metric='l2'", FlatIndex, reference, D, "cosine")
    _expect("128", FlatIndex, reference, 0)
    _expect("128", FlatIndex, reference, True)
    database = np.ones((5, 4), np.float32)
    _expect("k=...", vyre.ops.search_knn, reference, database[:2], database)
    _expect("between 1 and 5", vyre.ops.search_knn, reference, database[:2], database, k=6)
    _expect("(rows, 4)", vyre.ops.search_knn, reference, np.ones((2, 3), np.float32), database, k=1)
    _expect("omit slices", vyre.ops.search_knn, reference, database[:2], database, k=1, slices=0)


def test_reset_and_reuse(backend):
    rng = np.random.default_rng(14)
    index = FlatIndex(backend, D, "ip")
    index.add(_ints(rng, 10))
    index.reset()
    assert index.ntotal == 0
    _expect("index.add(vectors)", index.search, _ints(rng, 1), 1)
    index.add(np.zeros((0, D), np.float32))  # adding nothing is allowed and changes nothing
    assert index.ntotal == 0
    database, queries = _ints(rng, 20), _ints(rng, 2)
    index.add(database)
    dist, ids = index.search(queries, 3)
    want = brute_force(queries, database, 3, "ip")
    np.testing.assert_array_equal(ids, want[1])
    np.testing.assert_array_equal(dist, want[0])
    assert "ntotal=20" in repr(index)
