"""Value semantics of pending expressions: a lazy array cut out of a fused tree (the node/buffer limits)
is captured when the expression is recorded, so a later in-place operator, assignment or kernel launch
on that array never leaks into expressions recorded before it (numpy's results), on both backends."""

from __future__ import annotations

import gc

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import vyre
from vyre import array_api as xp
from vyre.array._kernels import fused as _fuse


def _chains(n: int = 4):
    """t = x + 29 (a chain past MAX_NODES: cut out of y as a leaf), u = y0 + 5, y = t + u."""
    x = xp.asarray(np.arange(n, dtype=np.float32))
    t = x
    for _ in range(29):
        t = t + 1
    u = xp.asarray(np.zeros(n, np.float32))
    for _ in range(5):
        u = u + 1
    return t, t + u


def _cut(y) -> bool:
    """Whether y's tree reads a pending (cut-out) buffer: the case under test."""
    return bool(_fuse.pending_buffers([y._expr]))


def _mutate(kind: str, t) -> None:
    if kind == "iadd":
        t += 100
    elif kind == "setitem":
        t[...] = 1000.0
    elif kind == "setitem_part":
        t[1:3] = -5.0
    elif kind == "mask":
        t[t > 30] = 7.0
    elif kind == "imul_self":
        t *= t
    else:
        raise AssertionError(kind)


@pytest.mark.parametrize("kind", ["iadd", "setitem", "setitem_part", "mask", "imul_self"])
def test_cut_leaf_does_not_see_later_mutation(xb, kind):
    base = np.arange(4, dtype=np.float32)
    t, y = _chains()
    assert t.is_lazy and _cut(y)
    _mutate(kind, t)
    np.testing.assert_array_equal(np.asarray(y), base + 34)  # not base + 134 (the mutated t)
    expect = {"iadd": base + 129, "setitem": np.full(4, 1000, np.float32),
              "setitem_part": np.where((np.arange(4) >= 1) & (np.arange(4) < 3), -5, base + 29),
              "mask": np.where(base + 29 > 30, 7, base + 29), "imul_self": (base + 29) ** 2}[kind]
    np.testing.assert_array_equal(np.asarray(t), expect.astype(np.float32))


@pytest.mark.parametrize("kind", ["iadd", "setitem", "mask"])
def test_mutation_after_the_cut_array_was_evaluated(xb, kind):
    """t evaluated (its buffer filled) between recording y and the mutation: y still reads the old t."""
    base = np.arange(4, dtype=np.float32)
    t, y = _chains()
    t.evaluate()
    _mutate(kind, t)
    np.testing.assert_array_equal(np.asarray(y), base + 34)


def test_kernel_launch_on_cut_array(xb):
    @vyre.kernel
    def double(x: vyre.InOut[vyre.f32]):
        i = vyre.tid()
        x[i] = x[i] * 2.0

    base = np.arange(4, dtype=np.float32)
    t, y = _chains()
    double[4](t)  # writes t: y was recorded before and keeps the old values
    np.testing.assert_array_equal(np.asarray(t), (base + 29) * 2)
    np.testing.assert_array_equal(np.asarray(y), base + 34)


def test_cut_work_runs_once(xb):
    """Evaluating the cut-out array and the expression reading it computes the shared part once,
    whichever comes first."""
    t, y = _chains()
    _fuse.reset_fusion_stats()
    y.evaluate()  # t's kernel then y's, one submission
    assert _fuse.fusion_stats()["kernels_dispatched"] == 2
    assert t.is_lazy  # t's buffer is filled; evaluating t commits it without a kernel
    t.evaluate()
    assert _fuse.fusion_stats()["kernels_dispatched"] == 2 and not t.is_lazy
    np.testing.assert_array_equal(np.asarray(t), np.arange(4) + 29)
    t2, y2 = _chains()
    t2.evaluate()
    _fuse.reset_fusion_stats()
    y2.evaluate()
    assert _fuse.fusion_stats()["kernels_dispatched"] == 1
    np.testing.assert_array_equal(np.asarray(y2), np.arange(4) + 34)


def test_pending_cut_buffers_are_freed(xb):
    """A recorded expression that is dropped unevaluated frees the buffers its cut leaves allocated."""
    if xb.name == "wgpu":
        def count() -> int: return xb.stats()["resident"]["handles"]
    else:
        def count() -> int: return xb._resident.handles
    _chains()[1].evaluate()  # caches the parameter buffers
    gc.collect()
    start = count()
    for _ in range(5):
        t, y = _chains()
        assert _cut(y)
        del t, y
    gc.collect()
    assert count() == start


def test_deep_chain_then_mutation(xb):
    """A 300-op chain (several cut levels) with in-place updates between: every array keeps numpy's values."""
    ref = np.arange(6, dtype=np.int32)
    t = xp.asarray(ref)
    snaps = []
    for k in range(300):
        t, ref = t + 1, ref + 1
        if k % 97 == 0:
            snaps.append((t * 1, ref * 1))
            t += 1000
            ref += 1000
    for got, want in snaps:
        np.testing.assert_array_equal(np.asarray(got), want)
    np.testing.assert_array_equal(np.asarray(t), ref)


_OPS = st.sampled_from(["chain", "chain", "iadd", "setitem", "mask", "record", "record", "record2", "sum", "sum0",
                        "evaluate", "mix"])


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=st.lists(st.tuples(_OPS, st.integers(0, 2), st.integers(-9, 9)), min_size=4, max_size=40))
def test_random_programs_keep_numpy_values(xb, ops):
    """Random mixes of long chains (cut-outs), in-place operators, assignments, deferred reductions and
    evaluations on three int32 arrays: every recorded result equals numpy's at the time it was recorded."""
    refs = [np.arange(k, k + 12, dtype=np.int32).reshape(3, 4) + 30 for k in range(3)]
    arrs = []
    for r in refs:  # pending chains from the start: an expression reading two of them cuts one out
        a = xp.asarray(r - 30)
        for _ in range(30):
            a = a + 1
        arrs.append(a)
    recorded: list[tuple[object, np.ndarray]] = []
    for op, k, v in ops:
        a, r = arrs[k], refs[k]
        if op == "chain":  # long enough to be cut out of whatever reads it next
            for _ in range(20):
                a, r = a + v, r + np.int32(v)
            arrs[k], refs[k] = a, r
        elif op == "iadd":
            a += v
            refs[k] = r + np.int32(v)
        elif op == "setitem":
            a[k % 3, 1:3] = v
            refs[k] = r.copy()
            refs[k][k % 3, 1:3] = v
        elif op == "mask":
            a[a > v] = 0
            refs[k] = np.where(r > v, 0, r).astype(np.int32)
        elif op == "record":  # reads the arrays themselves: a long one is cut out as a leaf of it
            recorded.append((a + arrs[(k + 1) % 3], r + refs[(k + 1) % 3]))
        elif op == "record2":
            recorded.append((a * 2 - arrs[(k + 1) % 3], r * 2 - refs[(k + 1) % 3]))
        elif op == "sum":
            recorded.append((a.sum(), np.asarray(r.sum(dtype=np.int32))))
        elif op == "sum0":
            recorded.append((xp.max(a + arrs[(k + 2) % 3], axis=0), (r + refs[(k + 2) % 3]).max(axis=0)))
        elif op == "evaluate":
            a.evaluate()
        else:  # a result of a deferred reduction feeding an expression
            recorded.append((a - a.sum(axis=0), r - r.sum(axis=0, dtype=np.int32)))
    for got, want in recorded:
        np.testing.assert_array_equal(np.asarray(got), want)
    for a, r in zip(arrs, refs):
        np.testing.assert_array_equal(np.asarray(a), r)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(
    st.tuples(st.just("float32"), st.floats(width=32, allow_nan=False)),
    st.tuples(st.just("float16"), st.floats(-60000, 60000, width=16)),
    st.tuples(st.just("bool"), st.booleans()),
    st.tuples(st.just("int32"), st.integers(-2**31, 2**31 - 1)),
    st.tuples(st.just("uint32"), st.integers(0, 2**32 - 1))), min_size=1, max_size=6))
def test_scalar_words_are_the_kernel_encoding(values):
    """The parameter words of scalars: f32 bits for floats (f16 scalars travel as f32), 0/1 for bool,
    the 32-bit pattern for integers; numpy computes the same words independently."""
    from vyre.array._kernels.nodes import Scalar

    scalars = [Scalar(v, np.dtype(d)) for d, v in values]
    want = []
    for d, v in values:
        if d.startswith("float"):
            want.append(int(np.array([v], np.float32).view(np.uint32)[0]))
        elif d == "bool":
            want.append(int(v))
        else:
            want.append(int(np.array([v], d).view(np.uint32)[0]))
    assert list(np.frombuffer(_fuse.scalar_words(scalars), np.uint32)) == want
