"""vyre.random.kernel: the @vyre.func Philox helpers inside @vyre.kernel give vyre.random's bits and the
published known answers, on both backends."""

from __future__ import annotations

import numpy as np
from philox_np import KAT

import vyre
import vyre.random as vr
from vyre import In, Out, f32, tid, u32
from vyre.random import kernel as rk


@vyre.kernel
def _sample(key: In[u32], y: Out[f32], w: Out[u32]):
    i = tid()
    y[i] = rk.uniform(key[0], key[1], i)
    w[i] = rk.bits(key[0], key[1], i)


@vyre.kernel
def _block(c: In[u32], k: In[u32], out: Out[u32]):
    i = tid()
    out[i] = rk.philox4x32(c[0], c[1], c[2], c[3], k[0], k[1], i)


def test_kernel_helpers_match_vyre_random(rb):
    k = vr.key(99)
    y, w = _sample[37](np.asarray(k), np.zeros(37, np.float32), np.zeros(37, np.uint32), backend=rb)
    np.testing.assert_array_equal(w, np.asarray(vr.bits(k, (37,))))
    np.testing.assert_array_equal(y, np.asarray(vr.uniform(k, (37,))))


def test_kernel_helper_known_answers(rb):
    for ctr, key, want in KAT:
        (got,) = _block[4](np.array(ctr, np.uint32), np.array(key, np.uint32), np.zeros(4, np.uint32), backend=rb)
        assert [int(x) for x in got] == list(want)
