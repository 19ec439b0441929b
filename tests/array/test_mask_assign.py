"""Boolean-mask assignment (``x[mask] = value``, vyre/array/_mask_assign.py) against numpy on both backends,
bit-exact for every dtype (the values are moved, never computed): full-shape masks and masks over the
leading axes, device and host masks, values per True entry, one row, one value, Python scalars and
array-likes; at most one download (the count check) and none when the count is not needed; the errors
numpy raises (a wrong count: ValueError, a wrong mask shape: IndexError) before anything changes; the
rule of the in-place operators (pending readers keep the old values); tapes and vyre.compile."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from moved_values import data, same

import vyre
from vyre import array_api as xp
from vyre.errors import InvalidArgumentError, TraceError, UnsupportedDTypeError

DTYPES = ["bool", "int32", "uint32", "float32", "int64", "uint64", "float64"]


def _supported(dt: str) -> bool:
    return dt in xp.__array_namespace_info__().dtypes()


class Reads:
    """Counts the downloads a backend does (its resident reads and sequences ending in a read)."""

    def __init__(self, backend, monkeypatch):
        self.n = 0
        for name in ("download_resident", "download_resident_range", "download_resident_ranges"):
            self._wrap(backend, name, monkeypatch, lambda *a, **k: True)
        for name in ("dispatch_resident_sequence", "dispatch_resident_repeated_sequence"):
            self._wrap(backend, name, monkeypatch, lambda steps, *a, read=None, **k: bool(a and a[-1]) or bool(read))

    def _wrap(self, backend, name, monkeypatch, is_read):
        fn = getattr(backend, name, None)
        if fn is None:
            return

        def counted(*args, **kwargs):
            self.n += bool(is_read(*args, **kwargs))
            return fn(*args, **kwargs)
        monkeypatch.setattr(backend, name, counted)


CASES = dict(seed=st.integers(0, 2**31 - 1), shape=st.lists(st.integers(0, 4), min_size=1, max_size=3),
             k=st.integers(1, 3), at=st.integers(0, 2), dt=st.sampled_from(DTYPES),
             form=st.sampled_from(["rows", "one", "row", "scalar"]), host_mask=st.booleans(),
             density=st.sampled_from([0.0, 0.4, 1.0]), ellipsis=st.booleans())


@settings(max_examples=20, deadline=None)
@given(**CASES)
def test_matches_numpy_reference(ref_backend, **case):
    with vyre.use(ref_backend):
        _matches_numpy(**case)


@settings(max_examples=12, deadline=None)
@given(**CASES)
def test_matches_numpy_gpu(gpu, **case):
    with vyre.use(gpu):
        _matches_numpy(**case)


def _matches_numpy(seed, shape, k, at, dt, form, host_mask, density, ellipsis):
    """x[key] = value for a mask over axes at .. at + k (after ``at`` full slices, or after ``...`` when it
    ends the shape), against numpy."""
    if not _supported(dt):
        return  # the device has no 64-bit dtype (tests/array/test_float64.py says so)
    rng = np.random.default_rng(seed)
    shape = tuple(shape)
    k = min(k, len(shape))
    at = min(at, len(shape) - k)
    want = data(rng, shape, dt)
    mask = rng.random(shape[at:at + k]) < density
    count, lead, rest = int(mask.sum()), shape[:at], shape[at + k:]
    value: object = {"rows": lambda: data(rng, (*lead, count, *rest), dt),
                     "one": lambda: data(rng, (1, *rest), dt), "row": lambda: data(rng, rest, dt),
                     "scalar": lambda: data(rng, (), dt).item()}[form]()
    m = mask if host_mask else xp.asarray(mask)
    key = (Ellipsis, m) if ellipsis and not rest and at else (*(slice(None),) * at, m)
    x = xp.asarray(want.copy())
    x[key] = value if form == "scalar" else xp.asarray(value)
    want[(*(slice(None),) * at, mask)] = value
    same(x, want)


def test_mask_after_slices(xb):
    rng = np.random.default_rng(2)
    want = rng.standard_normal((3, 4, 2)).astype(np.float32)
    m = np.array([True, False, True, True])
    x = xp.asarray(want.copy())
    x[:, xp.asarray(m)] = xp.asarray(np.arange(18, dtype=np.float32).reshape(3, 3, 2))  # (3, count, 2)
    want[:, m] = np.arange(18, dtype=np.float32).reshape(3, 3, 2)
    same(x, want)
    x[..., xp.asarray(np.array([False, True]))] = -1.0
    want[..., np.array([False, True])] = -1.0
    same(x, want)
    with pytest.raises(ValueError, match="True entr"):
        x[:, xp.asarray(m)] = xp.asarray(np.ones((3, 2, 2), np.float32))
    with pytest.raises(IndexError, match="does not match"):
        x[:, xp.asarray(np.ones(3, bool))] = 0.0


def test_rows_over_leading_axes(xb):
    rng = np.random.default_rng(1)
    want = rng.standard_normal((4, 3, 5)).astype(np.float32)
    m = np.array([[1, 0, 1], [0, 0, 0], [1, 1, 1], [0, 1, 0]], bool)
    rows = rng.standard_normal((int(m.sum()), 5)).astype(np.float32)
    x = xp.asarray(want.copy())
    x[xp.asarray(m)] = xp.asarray(rows)
    want[m] = rows
    same(x, want)
    x[xp.asarray(m[:, 0]), ...] = xp.asarray(np.float32([1, 2, 3, 4, 5]))  # a row broadcast, (mask, ...)
    want[m[:, 0], ...] = np.float32([1, 2, 3, 4, 5])
    same(x, want)


def test_pending_operands_and_readers(xb):
    base = np.arange(10, dtype=np.float32)
    x = xp.asarray(base) * 2  # pending: evaluated with the assignment
    before = x + 0  # a pending reader of the old values
    m = xp.asarray(base) > 4.5
    x[m] = xp.asarray(base[5:]) * -1  # a pending value
    want = base * 2
    want[base > 4.5] = -base[5:]
    same(x, want)
    same(before, base * 2)  # recorded against the old values: keeps them
    y = xp.asarray(base)
    y[y > 6.5] = y[y > 6.5] * 10  # the value reads x itself
    w = base.copy()
    w[w > 6.5] *= 10
    same(y, w)


def test_array_likes_and_casts(xb):
    base = np.arange(6, dtype=np.int32)
    x = xp.asarray(base)
    x[xp.asarray(base % 2 == 0)] = [10, 20, 30]  # a list (int64 on the host): cast to int32
    want = base.copy()
    want[base % 2 == 0] = [10, 20, 30]
    same(x, want)
    f = xp.asarray(base.astype(np.float32))
    f[xp.asarray(base > 2)] = np.arange(3)  # a numpy int array into float32 (same-kind, as numpy)
    wf = base.astype(np.float32)
    wf[base > 2] = np.arange(3)
    same(f, wf)
    same(f, wf)
    with pytest.raises(UnsupportedDTypeError):  # a vyre array keeps the promotion rules (as x[k] = v does)
        f[xp.asarray(base > 3)] = xp.asarray([7, 8], dtype=xp.int32)
    f[xp.asarray(base > 3)] = xp.asarray([7, 8], dtype=xp.int32).astype(xp.float32)
    wf[base > 3] = [7, 8]
    same(f, wf)


def test_one_download_at_most(xb, monkeypatch):
    base = np.arange(12, dtype=np.float32).reshape(4, 3)
    x, m = xp.asarray(base), xp.asarray(base[:, 0] > 2)
    vals, row = xp.asarray(np.ones((3, 3), np.float32)), xp.asarray(np.float32([1, 2, 3]))
    for a in (x, m, vals, row):
        a.evaluate()
    reads = Reads(xb, monkeypatch)
    x[m] = vals  # the count check: one download
    assert reads.n == 1
    x[m] = row
    x[m] = 5.0
    x[np.asarray(base[:, 0] > 2)] = vals  # a host mask: the count is known
    x.evaluate()
    assert reads.n == 1
    monkeypatch.undo()
    want = base.copy()
    want[base[:, 0] > 2] = 1.0
    same(x, want)


def test_errors_before_any_change(xb):
    base = np.arange(12, dtype=np.int32).reshape(3, 4)
    x = xp.asarray(base)
    m = xp.asarray(base % 5 == 0)  # 3 True entries
    for bad in (xp.asarray(np.ones(2, np.int32)), xp.asarray(np.ones(4, np.int32)), [1, 2]):
        with pytest.raises(ValueError, match="True entr") as info:
            x[m] = bad
        assert isinstance(info.value, InvalidArgumentError) and info.value.fix
    with pytest.raises(IndexError, match="does not match"):
        x[xp.asarray(np.ones(4, bool))] = 1
    with pytest.raises(IndexError, match="does not match"):
        x[np.ones((3, 3), bool)] = 1
    with pytest.raises(ValueError, match="at most 2"):
        x[xp.asarray(base[:, 0] > 0)] = xp.asarray(np.ones((2, 4, 1), np.int32))
    with pytest.raises(ValueError, match="broadcast"):
        x[xp.asarray(base[:, 0] > 0)] = xp.asarray(np.ones((2, 3), np.int32))
    with pytest.raises(UnsupportedDTypeError):
        x[m] = xp.asarray(np.ones(3, np.float32))
    with pytest.raises(UnsupportedDTypeError):
        x[m] = [0.5, 1.5, 2.5]
    with pytest.raises(UnsupportedDTypeError):
        x[m] = 1.5
    same(x, base)


def test_under_a_tape_and_compile(xb):
    from vyre.autograd import GradientTape

    w = xp.asarray(np.arange(4, dtype=np.float32))
    with GradientTape() as tape:
        tape.watch(w)
        y = w * 2
        with pytest.raises(InvalidArgumentError, match="in-place change"):
            y[xp.asarray(np.array([1, 0, 1, 0], bool))] = xp.asarray(np.float32([5, 6]))

    @vyre.compile
    def fill(x, m, v):
        x[m] = v  # one value: no count, traced
        return x * 1

    @vyre.compile
    def rows(x, m, v):
        x[m] = v
        return x * 1

    for k in range(2):
        x = xp.asarray(np.arange(6, dtype=np.float32))
        m = xp.asarray(np.arange(6) % 2 == k)
        out = fill(x, m, xp.asarray(np.float32(-1)))
        want = np.arange(6, dtype=np.float32)
        want[np.arange(6) % 2 == k] = -1
        same(out, want)
    assert fill.traces == 1
    with pytest.raises(TraceError, match="count"):
        rows(xp.asarray(np.arange(6, dtype=np.float32)), xp.asarray(np.arange(6) % 2 == 0),
             xp.asarray(np.float32([1, 2, 3])))
