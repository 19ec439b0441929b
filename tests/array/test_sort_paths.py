"""The sort paths of vyre/array/_sorting.py beyond the general one: one row sorted without an index (integer
keys alone, float32 keys carrying the values' bits), bool keys in one digit pass, the row-id pass of a batch
only as wide as the row count, and the radix blocks of ITEMS keys per invocation at their edges. Every
result is compared bit-exactly with numpy's stable sort (floats through their bits)."""

from __future__ import annotations

import numpy as np
import pytest

from vyre import array_api as xp
from vyre.array._kernels.sort import argsort_pipeline, key_bits, keys_pipeline, row_bits, values_pipeline
from vyre.ops.sort import _radix

BLOCK = _radix.BLOCK


def _bits(a: np.ndarray) -> np.ndarray:
    a = np.asarray(a)
    return a.view(np.uint32) if a.dtype == np.float32 else a


def _want(a: np.ndarray, descending: bool) -> np.ndarray:
    if not descending:
        return a[np.argsort(a, kind="stable")]
    r = np.flip(a)  # numpy's stable descending (NaN first): the flip of the stable sort of the flip
    return np.flip(r[np.argsort(r, kind="stable")])


def _row(dtype: str, n: int, rng: np.random.Generator) -> np.ndarray:
    """Full-range values with many ties and the extremes (the digits of every pass differ)."""
    if dtype == "bool":
        return rng.integers(0, 2, n).astype(bool)
    if dtype == "float32":
        x = rng.standard_normal(n).astype(np.float32) * np.float32(1e30)
        x[::7] = np.float32(0.5)  # ties
        specials = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-45, -1e-45], np.float32)
        k = min(n, 40)
        x[rng.choice(n, k, replace=False)] = rng.choice(specials, k)
        x[3 % n] = np.frombuffer(np.uint32(0xFFC00123).tobytes(), np.float32)[0]  # a negative NaN with a payload
        x[5 % n] = np.frombuffer(np.uint32(0x7F800001).tobytes(), np.float32)[0]  # a signalling-pattern NaN
        return x
    info = np.iinfo(dtype)
    x = rng.integers(info.min, info.max, n, dtype=np.int64, endpoint=True).astype(dtype)
    x[::5] = x[-1]
    x[:4] = np.resize(np.array([info.min, info.max, 0, info.min], dtype), 4)[: min(n, 4)]
    return x


@pytest.mark.parametrize("dtype", ["int32", "uint32", "float32", "bool"])
@pytest.mark.parametrize("descending", [False, True])
@pytest.mark.parametrize("n", [2, 9, BLOCK - 1, BLOCK + 1, 3 * BLOCK + 17])
def test_one_row_fast_paths_bit_exact(gpu, dtype, descending, n):
    a = _row(dtype, n, np.random.default_rng(n))
    with xp.use(gpu):
        got = np.asarray(xp.sort(xp.asarray(a), descending=descending))
    assert got.dtype == a.dtype
    np.testing.assert_array_equal(_bits(got), _bits(_want(a, descending)))


@pytest.mark.parametrize("dtype", ["int32", "float32", "bool"])
def test_one_row_on_the_reference_interpreter(ref_backend, dtype):
    a = _row(dtype, BLOCK + 3, np.random.default_rng(7))
    with xp.use(ref_backend):
        for descending in (False, True):
            got = np.asarray(xp.sort(xp.asarray(a), descending=descending))
            np.testing.assert_array_equal(_bits(got), _bits(_want(a, descending)))


def test_one_row_inside_a_larger_shape_and_fused_input(gpu):
    """A (1, n, 1) array sorted along axis 1 is one row (the fast path); the input's pending expression
    fuses into the key (and, for floats, the bits) and the result keeps the shape."""
    rng = np.random.default_rng(3)
    a = rng.integers(-1000, 1000, (1, 5000, 1)).astype(np.int32)
    f = rng.standard_normal((1, 3000, 1)).astype(np.float32)
    with xp.use(gpu):
        x, y = xp.asarray(a), xp.asarray(f)
        got = xp.sort(x * 3 - 1, axis=1)
        assert got.shape == a.shape and got.dtype == xp.int32
        np.testing.assert_array_equal(np.asarray(got), np.sort(a * 3 - 1, axis=1))
        gf = xp.sort(-y, axis=-2, descending=True)
        np.testing.assert_array_equal(_bits(np.asarray(gf)), _bits(-np.sort(f, axis=1)))


def test_fast_path_pipelines_skip_the_index():
    """Integer rows: keys alone (no iota, no gather); bool keys take one digit pass of eight."""
    names = [s.program.name for s in keys_pipeline(10_000, 32).steps]
    assert sum(n.startswith("sort_radix_scatter_keys") for n in names) == _radix.PASSES
    assert not any("iota" in n or "gather" in n for n in names)
    bool_steps = [s.program.name for s in keys_pipeline(10_000, key_bits(np.dtype(bool))).steps]
    assert sum(n.startswith("sort_radix_scatter") for n in bool_steps) == 1
    vals = [s.program.name for s in values_pipeline(10_000, 32).steps]
    assert sum(n.startswith("sort_radix_scatter_pairs") for n in vals) == _radix.PASSES


def test_row_pass_only_as_wide_as_the_rows():
    assert (row_bits(2), row_bits(3), row_bits(1024), row_bits(1025)) == (1, 2, 10, 11)
    scatters = [s for s in argsort_pipeline(4 * 1000, 1000).steps if s.program.name.startswith("sort_radix_scatter")]
    assert len(scatters) == _radix.PASSES + 1  # the keys' eight passes, then one 4-bit pass over 4 row ids


@pytest.mark.parametrize("shape,axis", [((3000, 3), 0), ((17, 300), 1), ((2, 70, 40), 1)])
def test_batched_rows_with_narrow_row_pass(gpu, shape, axis):
    rng = np.random.default_rng(sum(shape))
    a = rng.integers(-5, 5, shape).astype(np.int32)
    f = (rng.integers(-4, 4, shape) / 2).astype(np.float32)
    f.flat[::11] = np.float32(-0.0)
    with xp.use(gpu):
        x, y = xp.asarray(a), xp.asarray(f)
        np.testing.assert_array_equal(np.asarray(xp.argsort(x, axis=axis)), np.argsort(a, axis, kind="stable"))
        want = np.take_along_axis(f, np.argsort(f, axis, kind="stable"), axis)
        np.testing.assert_array_equal(_bits(np.asarray(xp.sort(y, axis=axis))), _bits(want))
        b = a > 0
        flipped = np.flip(np.argsort(np.flip(b, axis), axis, kind="stable"), axis)
        np.testing.assert_array_equal(np.asarray(xp.argsort(xp.asarray(b), axis=axis, descending=True)),
                                      b.shape[axis] - 1 - flipped)


@pytest.mark.parametrize("n", [BLOCK - 1, BLOCK, BLOCK + 1, 2 * BLOCK + _radix.ITEMS + 1])
def test_radix_pairs_stable_at_block_edges(gpu, n):
    """Few distinct keys across block and per-invocation (ITEMS) boundaries: the values (input positions)
    must come back in input order within every key."""
    rng = np.random.default_rng(n)
    keys = (rng.integers(0, 3, n).astype(np.uint32) * np.uint32(0x01010101)) ^ np.uint32(0x80000000)
    vals = np.arange(n, dtype=np.uint32)
    import vyre.ops

    k, v = vyre.ops.sort_radix_pairs(gpu, keys, vals)
    order = np.argsort(keys, kind="stable")
    np.testing.assert_array_equal(k, keys[order])
    np.testing.assert_array_equal(v, order.astype(np.uint32))


def test_too_many_keys_is_a_typed_error_before_gpu_work():
    from vyre.errors import DispatchError

    with pytest.raises(DispatchError, match="at most") as err:
        argsort_pipeline(_radix.MAX_KEYS + 1, _radix.MAX_KEYS + 1)
    assert err.value.fix
    assert keys_pipeline(_radix.MAX_KEYS, 32).name == "array.sort_keys"  # the largest sort still plans


def test_passes_for_bounds():
    assert [_radix.passes_for(b) for b in (1, 4, 5, 31, 32)] == [1, 1, 2, 8, 8]
    for bad in (0, 33):
        with pytest.raises(ValueError, match="outside 1..32"):
            _radix.passes_for(bad)
