"""Each supported construct of a kernel body, in a small kernel, against numpy (integers bit-exact)."""

from __future__ import annotations

import math

import numpy as np
import pytest

import vyre
from vyre import In, InOut, Out, bool_, f32, i32, tid, u32

N = 300  # not a multiple of the workgroup size
SCALE = 3  # a module constant, inlined
RNG = np.random.default_rng(7)


def ints(lo=-1000, hi=1000, n=N, dtype=np.int32):
    return RNG.integers(lo, hi, n).astype(dtype)


def floats(n=N):
    return RNG.uniform(-4, 4, n).astype(np.float32)


@vyre.kernel
def arith(a: In[i32], b: In[i32], out: Out[i32]):
    i = tid()
    x = a[i]
    y = b[i]
    out[i] = (x + y * SCALE - 7) * 2 - -x + (x & y) - (x | 5) + (x ^ y) + (~y) + (x << 2) + (y >> 1)


def test_integer_arithmetic_and_bits(backend):
    a, b = ints(), ints()
    (got,) = arith[N](a, b, np.zeros(N, np.int32), backend=backend)
    want = (a + b * 3 - 7) * 2 + a + (a & b) - (a | 5) + (a ^ b) + ~b + (a << 2) + (b >> 1)
    assert np.array_equal(got, want)


@vyre.kernel
def float_math(x: In[f32], out: Out[f32]):
    i = tid()
    v = x[i]
    out[i] = vyre.sqrt(abs(v)) + vyre.exp(v / 4.0) + math.sin(v) + vyre.floor(v) + min(v, 1.0) + max(v, -1.0, 0.5) \
        + v ** 2 + v ** -1 + vyre.fma(v, 2.0, 1.0) + math.tanh(v)


def test_float_math(backend):
    x = floats()
    x[x == 0] = 0.5
    (got,) = float_math[N](x, np.zeros(N, np.float32), backend=backend)
    want = (np.sqrt(np.abs(x)) + np.exp(x / 4) + np.sin(x) + np.floor(x) + np.minimum(x, 1) + np.maximum(x, 0.5)
            + x * x + 1 / x + (x * 2 + 1) + np.tanh(x))
    assert np.allclose(got, want, rtol=1e-4, atol=1e-4)


@vyre.kernel
def casts(x: In[f32], k: In[i32], fo: Out[f32], io: Out[i32], uo: Out[u32]):
    i = tid()
    fo[i] = f32(k[i]) / 2.0 + f32(i)
    io[i] = i32(x[i]) + i32(x[i] > 0.0)
    uo[i] = u32(bool_(k[i])) + i


def test_casts(backend):
    x, k = floats(), ints(-3, 3)
    fo, io, uo = casts[N](x, k, *(np.zeros(N, t) for t in (np.float32, np.int32, np.uint32)), backend=backend)
    idx = np.arange(N)
    assert np.array_equal(fo, (k / 2 + idx).astype(np.float32))
    assert np.array_equal(io, np.trunc(x).astype(np.int32) + (x > 0))
    assert np.array_equal(uo, (k != 0) + idx.astype(np.uint32))


@vyre.kernel
def control(x: In[i32], out: Out[i32], n: i32):
    i = tid()
    v = x[i]
    acc = 0
    if v < 0 and v > -100:
        acc = 1
    elif 0 <= v < 100:
        acc = 2
    elif not (v < 500):
        acc = 3
    else:
        acc = 4
    for k in range(n):
        acc += k
    for k in range(10, 0, -3):
        if k == 4:
            continue
        acc += k
    j: i32 = 0
    while True:
        j += 1
        if j >= 5:
            break
    acc = acc * 10 + j
    if v == 999:
        return
    out[i] = acc if v % 2 == 0 else -acc


def test_control_flow(backend):
    x = ints()
    x[:4] = [-5, 50, 600, 999]
    (got,) = control[N](x, np.full(N, 7, np.int32), 4, backend=backend)
    acc = np.where((x < 0) & (x > -100), 1, np.where((x >= 0) & (x < 100), 2, np.where(x >= 500, 3, 4)))
    acc = (acc + 6 + 10 + 7 + 1) * 10 + 5
    want = np.where(x % 2 == 0, acc, -acc)
    want[x == 999] = 7  # returned before the store: Out keeps the value passed... not uploaded: zero
    want[x == 999] = 0
    assert np.array_equal(got, want)


@vyre.kernel
def tuples_and_aug(x: InOut[u32], y: InOut[u32]):
    i = tid()
    a, b = x[i], y[i]
    a, b = b, a  # both sides evaluated first
    x[i] = a
    y[i] = b
    x[i] += 3
    y[i] *= 2
    y[i] //= 3
    x[i] %= 7
    x[i] <<= 1


def test_tuple_assignment_and_augmented_stores(backend):
    x, y = ints(0, 1000, dtype=np.uint32), ints(0, 1000, dtype=np.uint32)
    ox, oy = tuples_and_aug[N](x.copy(), y.copy(), backend=backend)
    assert np.array_equal(ox, ((y + 3) % 7) << 1)
    assert np.array_equal(oy, (x * 2) // 3)


@vyre.kernel
def grid2d(img: In[f32], out: Out[f32], k: f32):
    y, x = tid(0), tid(1)
    out[y, x] = img[y, x] * k + f32(img.shape[1]) + f32(len(img)) * 1000.0


@vyre.kernel
def grid3d(a: In[u32], out: Out[u32]):
    z, y, x = vyre.tid3()
    out[z, y, x] = a[z, y, x] + tid() * 1000 + u32(a.shape[2])


def test_2d_and_3d_launches(backend):
    img = RNG.uniform(0, 1, (19, 23)).astype(np.float32)
    out = np.zeros_like(img)
    (got,) = grid2d[19, 23](img, out, 2.0, backend=backend)
    assert got is out and np.allclose(out, img * 2 + 23 + 19000)
    a = RNG.integers(0, 100, (3, 5, 7)).astype(np.uint32)
    (got,) = grid3d[3, 5, 7](a, np.zeros_like(a), backend=backend)
    assert np.array_equal(got, a + np.arange(a.size).reshape(a.shape) * 1000 + 7)


@vyre.kernel
def atomics(keys: In[u32], hist: InOut[u32], olds: Out[u32]):
    i = tid()
    old = vyre.atomic_add(hist, keys[i] % 8, 1)
    vyre.atomic_max(hist, 8, keys[i])
    olds[i] = u32(old < 1000)


def test_atomics(backend):
    keys = ints(0, 1000, dtype=np.uint32)
    hist, olds = atomics[N](keys, np.zeros(9, np.uint32), np.zeros(N, np.uint32), backend=backend)
    assert np.array_equal(hist[:8], np.bincount(keys % 8, minlength=8))
    assert hist[8] == keys.max() and olds.all()


WG = 64


@vyre.kernel(workgroup_size=WG)
def block_sum(x: In[u32], sums: InOut[u32]):
    tile = vyre.shared(u32, WG)
    i = tid()
    t = vyre.local_id()
    tile[t] = x[i] if i < len(x) else 0
    vyre.barrier()
    stride = WG // 2
    while stride > 0:
        if t < u32(stride):
            tile[t] += tile[t + u32(stride)]
        vyre.barrier()
        stride //= 2
    if t == 0:
        vyre.atomic_add(sums, 0, tile[0])
        vyre.atomic_max(sums, 1, vyre.group_id() + 1)


def test_workgroup_array_and_barrier(backend):
    x = ints(0, 1 << 16, n=1000, dtype=np.uint32)
    (got,) = block_sum[1000](x, np.zeros(2, np.uint32), backend=backend)
    assert got[0] == x.sum() and got[1] == -(-1000 // WG)


@vyre.func
def clamp01(v: f32) -> f32:
    return min(max(v, 0.0), 1.0)


@vyre.func
def lerp(a, b, t):
    d = b - a
    return a + d * clamp01(t)


@vyre.func
def bump(h: InOut[u32], k):
    vyre.atomic_add(h, k, 1)


@vyre.kernel
def with_helpers(x: In[f32], out: Out[f32], h: InOut[u32]):
    i = tid()
    out[i] = lerp(10.0, 20.0, x[i])
    bump(h, i % 4)


def test_func_helpers_are_inlined(backend):
    x = floats()
    out, h = with_helpers[N](x, np.zeros(N, np.float32), np.zeros(4, np.uint32), backend=backend)
    assert np.allclose(out, 10 + 10 * np.clip(x, 0, 1), atol=1e-5)
    assert np.array_equal(h, np.bincount(np.arange(N) % 4))


@vyre.kernel
def lazy_select(x: In[i32], h: InOut[u32], out: Out[i32]):
    i = tid()
    # the atomic runs only where the condition picks it (an if, not a select)
    out[i] = i32(vyre.atomic_add(h, 0, 1)) if x[i] > 0 else -1


def test_ternary_with_an_atomic_runs_one_side(backend):
    x = ints()
    h, out = lazy_select[N](x, np.zeros(1, np.uint32), np.zeros(N, np.int32), backend=backend)
    assert h[0] == (x > 0).sum()
    assert np.array_equal(np.sort(out[x > 0]), np.arange((x > 0).sum())) and (out[x <= 0] == -1).all()


@pytest.mark.parametrize("dtype,marker,value", [(np.uint32, u32, 4_000_000_000), (np.int32, i32, -123456),
                                                (np.float32, f32, 2.5)])
def test_scalar_params_of_each_type(backend, dtype, marker, value):
    @vyre.kernel
    def fill(out: Out[marker], v: marker, flag: bool_):  # type: ignore[valid-type]
        if flag:
            out[tid()] = v

    (got,) = fill[5](np.zeros(5, dtype), value, True, backend=backend)
    assert np.array_equal(got, np.full(5, value, dtype))
