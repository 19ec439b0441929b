"""Philox 4x32-10 bit for bit: the published Random123 known answers, the numpy reference of
philox_np.py, and the key derivations (key, split, fold_in), on the reference backend and the GPU."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from philox_np import KAT, fold_in, key_words, philox4x32, split, stream

import vyre
import vyre.array as va
import vyre.random as vr
from vyre.array._kernels import cache
from vyre.random import _keys


def _raw_key(words):
    return va.asarray(np.array(words, dtype=np.uint32))


@pytest.mark.parametrize("ctr,key,want", KAT)
def test_numpy_reference_meets_the_known_answers(ctr, key, want):
    got = philox4x32(np.array([ctr], dtype=np.uint32), key)[0]
    assert [int(w) for w in got] == list(want)


@pytest.mark.parametrize("ctr,key,want", KAT)
def test_kernel_meets_the_known_answers(rb, ctr, key, want):
    # 9 words: the second block's counter is ctr + 1 (the all-ones counter wraps to zero), the third is cut
    got = np.asarray(_keys.generate(_raw_key(key), (9,), "bits", "kat", ctr))
    assert [int(w) for w in got[:4]] == list(want)
    np.testing.assert_array_equal(got, stream(key, 9, ctr))


def test_counter_carries_through_all_four_words(rb):
    base = (0xFFFFFFFE, 0xFFFFFFFF, 0xFFFFFFFF, 7)  # blocks 2.. carry into words 1, 2 and 3
    got = np.asarray(_keys.generate(_raw_key((5, 6)), (16,), "bits", "carry", base))
    np.testing.assert_array_equal(got, stream((5, 6), 16, base))


@settings(max_examples=12, deadline=None)
@given(seed=st.integers(-(2**63), 2**64 - 1), shape=st.sampled_from([(), (1,), (3,), (7, 5), (2, 3, 4), (0, 3)]))
def test_bits_equal_the_numpy_stream(ref_backend, seed, shape):
    k = vr.key(seed, device=ref_backend)
    np.testing.assert_array_equal(np.asarray(k), np.array(key_words(seed), dtype=np.uint32))
    got = np.asarray(vr.bits(k, shape))
    assert got.shape == shape and got.dtype == np.uint32
    np.testing.assert_array_equal(got.reshape(-1), stream(key_words(seed), int(np.prod(shape))))


@pytest.mark.parametrize("seed", [0, 1, 2**32 + 5, -1])
def test_bits_same_on_every_backend(rb, seed):
    got = np.asarray(vr.bits(vr.key(seed), (5, 7)))
    np.testing.assert_array_equal(got.reshape(-1), stream(key_words(seed), 35))


def test_split_and_fold_in_follow_philox(rb):
    k = vr.key(2024)
    kw = key_words(2024)
    keys = vr.split(k, 5)
    assert keys.shape == (5, 2) and keys.dtype == va.uint32
    want = split(kw, 5)
    np.testing.assert_array_equal(np.asarray(keys), np.array(want, dtype=np.uint32))
    # a key sliced out of split's result (read at a runtime offset), then folded, then sampled
    for i in (0, 3, 4):
        np.testing.assert_array_equal(np.asarray(vr.bits(keys[i], (6,))), stream(want[i], 6))
    folded = vr.fold_in(keys[3], 2**40 + 9)
    np.testing.assert_array_equal(np.asarray(folded), np.array(fold_in(want[3], 2**40 + 9), dtype=np.uint32))
    np.testing.assert_array_equal(np.asarray(vr.bits(folded, (4,))), stream(fold_in(want[3], 2**40 + 9), 4))
    assert vr.split(k, 0).shape == (0, 2)


def test_a_computed_key_is_fused(rb):
    # a key that is a pending expression (not a slice of a buffer) is read through the fused tree
    k = va.bitwise_xor(vr.key(77), _raw_key((0, 0)))
    np.testing.assert_array_equal(np.asarray(vr.bits(k, (4,))), stream(key_words(77), 4))


def test_streams_of_split_keys_differ(ref_backend):
    keys = vr.split(vr.key(3, device=ref_backend), 4)
    outs = [np.asarray(vr.bits(keys[i], (64,))) for i in range(4)]
    outs.append(np.asarray(vr.bits(vr.key(3, device=ref_backend), (64,))))
    for a in range(len(outs)):
        for b in range(a):
            assert np.mean(outs[a] == outs[b]) < 0.05


def test_one_program_for_every_size_counter_and_slice(ref_backend):
    keys = vr.split(vr.key(1, device=ref_backend), 8)
    np.asarray(vr.bits(keys[0], (3,)))
    built = cache.stats()["random.philox"]["built"]
    for i in range(1, 8):
        np.asarray(vr.bits(keys[i], (i * 5 + 1,)))
        np.asarray(vr.uniform(keys[i], (i,)))
    assert cache.stats()["random.philox"]["built"] == built


def test_sampling_is_one_submission(ref_backend):
    k = vr.key(5, device=ref_backend)
    va.reset_fusion_stats()
    total = float(va.sum(vr.uniform(vr.split(k)[1], (1000,))))
    assert 400 < total < 600
    assert va.fusion_stats()["submissions"] == 1


def test_key_moves_to_the_requested_device(gpu, ref_backend):
    k = vr.key(9, device=ref_backend)
    x = vr.bits(k, (8,), device=gpu)
    assert x.device is gpu
    np.testing.assert_array_equal(np.asarray(x), stream(key_words(9), 8))
    with vyre.use(gpu):
        assert vr.key(1).device is gpu
