"""Manipulation, indexing, sorting and linear-algebra rules against central finite differences of float64
numpy, on both backends. Tolerances rtol 1e-3, atol 1e-4 (matmul-like rules: atol 2e-4, k-term sums)."""

from __future__ import annotations

import numpy as np
import pytest
from fdcheck import check
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import mutually_broadcastable_shapes

import vyre.array as xp

SETTINGS = settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
RNG = np.random.default_rng(7)
A = RNG.uniform(-1, 1, (2, 3, 4)).astype(np.float32)
M = RNG.uniform(-1, 1, (3, 4)).astype(np.float32)

VIEWS = {
    "reshape": (lambda a: xp.reshape(a, (4, 6)), lambda a: a.reshape(4, 6)),
    "reshape_method": (lambda a: a.reshape(6, 4), lambda a: a.reshape(6, 4)),
    "permute_dims": (lambda a: xp.permute_dims(a, (2, 0, 1)), lambda a: a.transpose(2, 0, 1)),
    "expand_dims": (lambda a: xp.expand_dims(a, axis=1), lambda a: a[:, None]),
    "squeeze": (lambda a: xp.squeeze(xp.expand_dims(a, axis=0), axis=0), lambda a: a),
    "flip": (lambda a: xp.flip(a, axis=(0, 2)), lambda a: np.flip(a, axis=(0, 2))),
    "flip_all": (lambda a: xp.flip(a), lambda a: np.flip(a)),
    "moveaxis": (lambda a: xp.moveaxis(a, 0, -1), lambda a: np.moveaxis(a, 0, -1)),
    "roll": (lambda a: xp.roll(a, (1, -2), axis=(0, 2)), lambda a: np.roll(a, (1, -2), axis=(0, 2))),
    "roll_flat": (lambda a: xp.roll(a, 5), lambda a: np.roll(a, 5)),
    "tile": (lambda a: xp.tile(a, (2, 1, 2)), lambda a: np.tile(a, (2, 1, 2))),
    "tile_longer": (lambda a: xp.tile(a, (2, 1, 1, 2)), lambda a: np.tile(a, (2, 1, 1, 2))),
    "repeat": (lambda a: xp.repeat(a, 2, axis=1), lambda a: np.repeat(a, 2, axis=1)),
    "repeat_flat": (lambda a: xp.repeat(a, 3), lambda a: np.repeat(a, 3)),
    "broadcast_to": (lambda a: xp.broadcast_to(a[:, :1], (3, 2, 3, 4)),
                     lambda a: np.broadcast_to(a[:, :1], (3, 2, 3, 4))),
    "matrix_transpose": (lambda a: xp.matrix_transpose(a), lambda a: np.swapaxes(a, -1, -2)),
    "mT": (lambda a: a.mT * 2.0, lambda a: np.swapaxes(a, -1, -2) * 2.0),
    "tril": (lambda a: xp.tril(a, k=1), lambda a: np.tril(a, k=1)),
    "triu": (lambda a: xp.triu(a, k=-1), lambda a: np.triu(a, k=-1)),
    "unstack": (lambda a: xp.unstack(a, axis=1)[2] * 2.0 + xp.unstack(a, axis=1)[0],
                lambda a: a[:, 2] * 2.0 + a[:, 0]),
    "sort": (lambda a: xp.sort(a, axis=1), lambda a: np.sort(a, axis=1)),
    "sort_desc": (lambda a: xp.sort(a, descending=True), lambda a: -np.sort(-a, axis=-1)),
    "asarray_copy": (lambda a: xp.asarray(a, copy=True) * 3.0, lambda a: a * 3.0),
}


@pytest.mark.parametrize("name", sorted(VIEWS))
def test_view_rules(be, name):
    fv, fn = VIEWS[name]
    check(be, fv, fn, [A])


KEYS = {
    "slices": (slice(None), slice(1, None), slice(None, None, -2)),
    "int": (1, Ellipsis, 2),
    "newaxis": (None, 0, slice(None, 2)),
    "int_array_repeats": np.array([1, 0, 1, 1]),
    "int_arrays_pair": (np.array([0, 1, 1]), slice(None), np.array([3, 3, 0])),
    "int_list": ([1, 1, 0],),
    "negative_index_array": (slice(None), np.array([-1, 0, -1])),
    "bool_mask": "mask",
    "bool_mask_2d": "mask2",
}


@pytest.mark.parametrize("name", sorted(KEYS))
def test_getitem_rule(be, name):
    """Slicing and integer/boolean indexing: the gradient scattered back, repeated places summed."""
    key = KEYS[name]
    if isinstance(key, str):
        mask = (A > 0) if key == "mask" else (A[:, :, 0] > 0)
        check(be, lambda a: a[xp.asarray(mask)] * 2.0, lambda a: a[mask] * 2.0, [A])
        return

    def vkey():
        items = key if isinstance(key, tuple) else (key,)
        return tuple(xp.asarray(k.astype(np.int32)) if isinstance(k, np.ndarray) else k for k in items)

    np_key = key if not isinstance(key, tuple) else tuple(key)
    check(be, lambda a: a[vkey()] * 2.0, lambda a: a[np_key] * 2.0, [A])


def test_take_rules(be):
    idx = np.array([3, 0, 3, -1], dtype=np.int32)
    check(be, lambda a: xp.take(a, xp.asarray(idx), axis=2), lambda a: np.take(a, idx, axis=2), [A])
    along = np.array([[[0, 0], [2, 1], [1, 1]], [[2, 2], [0, 1], [0, 0]]], dtype=np.int32)
    check(be, lambda a: xp.take_along_axis(a[:, :, :3], xp.asarray(along), axis=2),
          lambda a: np.take_along_axis(a[:, :, :3], along, axis=2), [A])


def test_repeat_with_counts(be):
    counts = np.array([2, 0, 3], dtype=np.int32)
    check(be, lambda a: xp.repeat(a, xp.asarray(counts), axis=0), lambda a: np.repeat(a, counts, axis=0), [M])


def test_concat_stack_meshgrid(be):
    b = RNG.uniform(-1, 1, (2, 1, 4)).astype(np.float32)
    check(be, lambda a, c: xp.concat([a, c, a], axis=1), lambda a, c: np.concatenate([a, c, a], axis=1), [A, b])
    check(be, lambda a, c: xp.concat([a, c], axis=None), lambda a, c: np.concatenate([a.ravel(), c.ravel()]),
          [A, b])
    check(be, lambda a, c: xp.stack([a, a * c], axis=-1), lambda a, c: np.stack([a, a * c], axis=-1), [A, b])
    u, v = RNG.uniform(-1, 1, 3).astype(np.float32), RNG.uniform(-1, 1, 2).astype(np.float32)
    for indexing in ("xy", "ij"):
        check(be, lambda p, q, i=indexing: xp.meshgrid(p, q, indexing=i)[0] * xp.meshgrid(p, q, indexing=i)[1],
              lambda p, q, i=indexing: np.meshgrid(p, q, indexing=i)[0] * np.meshgrid(p, q, indexing=i)[1], [u, v])
    check(be, lambda p, q: xp.broadcast_arrays(p[:, None], q)[0] - xp.broadcast_arrays(p[:, None], q)[1] ** 2,
          lambda p, q: p[:, None] - q ** 2, [u, v])


@SETTINGS
@given(shapes=mutually_broadcastable_shapes(min_dims=0, max_dims=2, max_side=3,
                                            signature="(m,k),(k,n)->(m,n)"), seed=st.integers(0, 2**16))
def test_matmul_rule(be, shapes, seed):
    """matmul with batch broadcasting (hypothesis), and the 1-D operand cases."""
    rng = np.random.default_rng(seed)
    s1, s2 = shapes.input_shapes
    a = rng.uniform(-1, 1, s1).astype(np.float32)
    b = rng.uniform(-1, 1, s2).astype(np.float32)
    check(be, lambda p, q: p @ q, lambda p, q: p @ q, [a, b], atol=2e-4, seed=seed)


@pytest.mark.parametrize("case", ["vec-mat", "mat-vec", "vec-vec", "batch-vec"])
def test_matmul_vectors(be, case):
    v3, v4 = RNG.uniform(-1, 1, 3).astype(np.float32), RNG.uniform(-1, 1, 4).astype(np.float32)
    ops = {"vec-mat": [v3, M], "mat-vec": [M, v4], "vec-vec": [v4, v4 * 2], "batch-vec": [A, v4]}[case]
    check(be, lambda p, q: xp.matmul(p, q), lambda p, q: np.matmul(p, q), ops, atol=2e-4)


def test_linalg_rules(be):
    b = RNG.uniform(-1, 1, (4, 2, 3)).astype(np.float32)
    pairs = ([1, 2], [2, 0])
    check(be, lambda p, q: xp.tensordot(p, q, axes=pairs), lambda p, q: np.tensordot(p, q, axes=pairs), [A, b],
          atol=2e-4)
    check(be, lambda p, q: xp.tensordot(p, q, axes=1), lambda p, q: np.tensordot(p, q, axes=1), [A, b], atol=2e-4)
    check(be, lambda p, q: xp.vecdot(p, q), lambda p, q: np.sum(p * q, axis=-1), [A, M], atol=2e-4)
    check(be, lambda p, q: xp.vecdot(p, q, axis=0), lambda p, q: np.sum(p * q, axis=0), [M, M * 0.5], atol=2e-4)
    check(be, lambda p, q: xp.linalg.outer(p, q), lambda p, q: np.outer(p, q), [M[0], M[1, :3]])
    check(be, lambda p: xp.linalg.diagonal(p, offset=1), lambda p: np.diagonal(p, offset=1, axis1=-2, axis2=-1),
          [A])
    check(be, lambda p: xp.linalg.diagonal(p, offset=-1), lambda p: np.diagonal(p, offset=-1, axis1=-2, axis2=-1),
          [A])
    check(be, lambda p: xp.linalg.trace(p), lambda p: np.trace(p, axis1=-2, axis2=-1), [A])
    check(be, lambda p: xp.linalg.vector_norm(p, axis=1), lambda p: np.linalg.norm(p, axis=1), [A])
    check(be, lambda p: xp.linalg.matrix_norm(p), lambda p: np.linalg.norm(p, axis=(-2, -1)), [A])
    c3 = RNG.uniform(-1, 1, (4, 3)).astype(np.float32)
    check(be, lambda p, q: xp.linalg.cross(p, q), lambda p, q: np.cross(p, q), [c3, c3[::-1] * 0.5 + 0.1])
    sq = (RNG.uniform(-1, 1, (2, 3, 3)) * 0.7).astype(np.float32)
    for n in (0, 1, 2, 3):
        check(be, lambda p, k=n: xp.linalg.matrix_power(p, k), lambda p, k=n: np.linalg.matrix_power(p, k), [sq],
              atol=2e-4)


@SETTINGS
@given(data=st.data())
def test_getitem_rule_random_keys(be, data):
    """Random basic keys (ints, slices with steps, ..., None) and random integer-array keys with repeats."""
    from hypothesis.extra.numpy import array_shapes, basic_indices
    shape = data.draw(array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=4))
    x = np.random.default_rng(data.draw(st.integers(0, 2**16))).uniform(-1, 1, shape).astype(np.float32)
    key = data.draw(basic_indices(shape, allow_newaxis=True, allow_ellipsis=True))
    check(be, lambda a: a[key] * 3.0, lambda a: np.asarray(a[key]) * 3.0, [x])
    idx = np.asarray(data.draw(st.lists(st.integers(-shape[0], shape[0] - 1), min_size=1, max_size=6)), np.int32)
    check(be, lambda a: a[xp.asarray(idx)] * 3.0, lambda a: a[idx] * 3.0, [x])
