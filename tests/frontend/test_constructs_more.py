"""More constructs: select/bitcast/pow/round, atomic_cas and atomic_load, ids along axes of a 2-D
launch, aliased imports and closure constants, while conditions that need statements, helpers."""

from __future__ import annotations

import math as m

import numpy as np

import vyre
import vyre as v
from vyre import In, InOut, Out, f32, i32, tid, u32
from vyre import sqrt as root

RNG = np.random.default_rng(5)
N = 200


@vyre.kernel
def misc(x: In[f32], k: In[i32], fo: Out[f32], uo: Out[u32]):
    i = tid()
    a = x[i]
    fo[i] = v.select(a > 0.0, root(abs(a)), v.pow(2.0, a)) + v.round(a * 10.0) + m.floor(a) + abs(a) ** 1.5
    uo[i] = v.bitcast(k[i], u32) ^ v.popcount(u32(k[i])) + v.clz(u32(k[i])) * 0 - (u32(k[i]) >> 31)


def test_select_bitcast_pow_round_and_aliases(backend):
    x = RNG.uniform(-3, 3, N).astype(np.float32)
    k = RNG.integers(-1000, 1000, N).astype(np.int32)
    fo, uo = misc[N](x, k, np.zeros(N, np.float32), np.zeros(N, np.uint32), backend=backend)
    want = np.where(x > 0, np.sqrt(np.abs(x)), np.power(2.0, x)) + np.round(x * np.float32(10)) + np.floor(x) \
        + np.abs(x) ** 1.5
    assert np.allclose(fo, want, rtol=1e-4, atol=1e-4)
    ku = k.view(np.uint32)
    pop = np.array([bin(int(u)).count("1") for u in ku], np.uint32)
    assert np.array_equal(uo, ku ^ (pop - (ku >> 31)))


@vyre.kernel
def cas_and_load(slots: InOut[u32], won: Out[u32]):
    i = tid()
    old = vyre.atomic_cas(slots, i % 4, 0, i + 1)  # the first to come claims the slot
    won[i] = u32(old == 0) + vyre.atomic_load(slots, 4) * 0


def test_atomic_cas_and_load(backend):
    slots, won = cas_and_load[64](np.zeros(5, np.uint32), np.zeros(64, np.uint32), backend=backend)
    assert won.sum() == 4 and (slots[:4] > 0).all()
    assert all(won[slots[j] - 1] == 1 and (slots[j] - 1) % 4 == j for j in range(4))


@vyre.kernel(workgroup_size=(4, 8))
def ids2d(out: Out[u32]):
    y, x = tid(0), tid(1)
    out[y, x] = vyre.local_id(0) * 1000000 + vyre.local_id(1) * 10000 + vyre.group_id(0) * 100 + vyre.group_id(1)


def test_ids_along_the_axes_of_a_2d_launch(backend):
    (got,) = ids2d[12, 20](np.zeros((12, 20), np.uint32), backend=backend)
    yy, xx = np.meshgrid(np.arange(12), np.arange(20), indexing="ij")
    # workgroup_size=(4, 8): x (axis 1, columns) has 4 threads per workgroup, y (axis 0) has 8
    want = (yy % 8) * 1000000 + (xx % 4) * 10000 + (yy // 8) * 100 + xx // 4
    assert np.array_equal(got, want.astype(np.uint32))


def make_scaled(factor):
    @vyre.kernel
    def scaled(x: In[f32], out: Out[f32]):
        i = tid()
        out[i] = x[i] * factor  # a closure constant, inlined

    return scaled


def test_closure_constants(backend):
    x = np.arange(10, dtype=np.float32)
    for factor in (2.0, 3.5):
        (got,) = make_scaled(factor)[10](x, np.zeros(10, np.float32), backend=backend)
        assert np.array_equal(got, x * np.float32(factor))


@vyre.func
def halve(a: i32) -> i32:
    b = a // 2
    return b


@vyre.kernel
def collatz_like(x: In[i32], steps: Out[i32]):
    i = tid()
    a = x[i]
    n: i32 = 0
    while halve(a) // 3 != 0:  # a condition that needs statements, re-evaluated every trip
        a = halve(a)
        n += 1
    steps[i] = n


def test_while_condition_with_statements(backend):
    x = RNG.integers(0, 5000, N).astype(np.int32)  # (negative values would halve to -1 forever)
    (got,) = collatz_like[N](x, np.zeros(N, np.int32), backend=backend)
    want = []
    for a in x.tolist():
        n = 0
        while (a // 2) // 3 != 0:
            a //= 2
            n += 1
        want.append(n)
    assert np.array_equal(got, np.array(want, np.int32))


SCALE = np.float32(0.25)
OFFSET = np.int32(3)


@vyre.kernel
def numpy_constants(x: In[f32], out: Out[f32]):
    i = tid()
    out[i] = x[i] * SCALE + f32(OFFSET)


def test_numpy_scalar_constants_are_inlined(backend):
    x = np.arange(8, dtype=np.float32)
    (got,) = numpy_constants[8](x, np.zeros(8, np.float32), backend=backend)
    assert np.array_equal(got, x * np.float32(0.25) + 3)


@vyre.kernel
def lazy_typed(x: In[f32], h: InOut[u32], out: Out[f32]):
    i = tid()
    # a constant on the taken side takes the type of the other side (f32), as in a select
    out[i] = 0 if x[i] < 0.0 else f32(vyre.atomic_add(h, 0, 1)) + x[i] * f32(not False)


def test_lazy_ternary_types_from_either_side(backend):
    x = RNG.uniform(-1, 1, 64).astype(np.float32)
    h, out = lazy_typed[64](x, np.zeros(1, np.uint32), np.zeros(64, np.float32), backend=backend)
    assert h[0] == (x >= 0).sum() and (out[x < 0] == 0).all()
    # each taken lane got a distinct old counter value k and stored k + x in f32 (so out - x is k up to rounding)
    k = out[x >= 0] - x[x >= 0]
    assert np.array_equal(np.sort(np.rint(k)), np.arange(h[0], dtype=np.float32))
    assert np.abs(k - np.rint(k)).max() <= 2 * np.spacing(np.float32(h[0]))
