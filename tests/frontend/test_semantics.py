"""Python's semantics where WGSL differs (floor division, modulo), literal typing, and the guard that
makes exactly ``dim`` threads run."""

from __future__ import annotations

import numpy as np
import pytest

import vyre
from vyre import In, InOut, Out, f32, i32, tid, u32

RNG = np.random.default_rng(11)


@vyre.kernel
def divmod_i32(a: In[i32], b: In[i32], q: Out[i32], r: Out[i32]):
    i = tid()
    q[i] = a[i] // b[i]
    r[i] = a[i] % b[i]


@vyre.kernel
def divmod_const(a: In[i32], q: Out[i32], r: Out[i32]):
    i = tid()
    q[i] = a[i] // -3
    r[i] = a[i] % 7 + (-7 // 2) * 1000 + (-7 % 3) * 100000


def test_i32_floor_division_and_modulo_match_python(backend):
    a = RNG.integers(-2**31, 2**31, 2000, dtype=np.int64).astype(np.int32)
    b = RNG.integers(-50, 50, 2000).astype(np.int32)
    b[b == 0] = -1
    a[:6] = [-7, 7, -7, 7, -2**31, 0]
    b[:6] = [2, -2, -2, 2, 3, -5]
    q, r = divmod_i32[2000](a, b, np.zeros(2000, np.int32), np.zeros(2000, np.int32), backend=backend)
    assert np.array_equal(q, a // b) and np.array_equal(r, a % b)
    q, r = divmod_const[2000](a, np.zeros(2000, np.int32), np.zeros(2000, np.int32), backend=backend)
    assert np.array_equal(q, a // -3) and np.array_equal(r, a % 7 + (-4) * 1000 + 2 * 100000)


@vyre.kernel
def divmod_u32_f32(a: In[u32], x: In[f32], q: Out[u32], r: Out[u32], fq: Out[f32], fr: Out[f32]):
    i = tid()
    q[i] = a[i] // 7
    r[i] = a[i] % 7
    fq[i] = x[i] // 1.5
    fr[i] = x[i] % -1.5


def test_u32_and_float_floor_division(backend):
    a = RNG.integers(0, 2**32, 500, dtype=np.uint64).astype(np.uint32)
    x = RNG.uniform(-10, 10, 500).astype(np.float32)
    z = [np.zeros(500, t) for t in (np.uint32, np.uint32, np.float32, np.float32)]
    q, r, fq, fr = divmod_u32_f32[500](a, x, *z, backend=backend)
    assert np.array_equal(q, a // 7) and np.array_equal(r, a % 7)
    assert np.array_equal(fq, np.floor(x / np.float32(1.5)))
    assert np.allclose(fr, np.mod(x, np.float32(-1.5)), atol=1e-5)


@vyre.kernel
def literal_types(a: In[u32], out: Out[u32], fo: Out[f32]):
    i = tid()
    k = 3  # i32 by default
    out[i] = a[i] * 2 + u32(k)  # 2 takes a[i]'s type (u32)
    fo[i] = f32(a[i]) * 2  # an int literal takes the float's type


def test_literals_take_the_other_operands_type(backend):
    a = np.arange(10, dtype=np.uint32)
    out, fo = literal_types[10](a, np.zeros(10, np.uint32), np.zeros(10, np.float32), backend=backend)
    assert np.array_equal(out, a * 2 + 3) and np.array_equal(fo, a * 2.0)


@vyre.kernel
def mark(out: InOut[u32]):
    out[tid()] = 7


@vyre.kernel
def mark2(out: InOut[u32]):
    y, x = tid(0), tid(1)
    out[y, x] = 7


@pytest.mark.parametrize("n", [1, 255, 257, 1000])
def test_guard_writes_exactly_dim_elements(backend, n):
    out = np.full(1100, 5, np.uint32)
    (got,) = mark[n](out, backend=backend)
    assert (got[:n] == 7).all() and (got[n:] == 5).all()


def test_guard_in_2d(backend):
    out = np.full((20, 40), 5, np.uint32)
    mark2[17, 33](out, backend=backend)
    assert (out[:17, :33] == 7).all() and (out[17:] == 5).all() and (out[:, 33:] == 5).all()


def test_big_1d_launch_folds_the_grid(gpu):
    n = 65535 * 256 + 1  # one more workgroup than one grid dimension holds
    out = np.zeros(n + 5, np.uint32)
    (got,) = mark[n](out, backend=gpu)
    assert int(got[:n].sum()) == 7 * n and (got[n:] == 0).all()
