"""Issue 27 (vyre.array part): bad arguments raise the typed errors that are also Python's builtins
(InvalidArgumentError / ArgumentTypeError / IndexOutOfRangeError / AxisError), arrays pickle and copy,
iterate, take numpy scalars like Python ones, and answer numpy's dispatch protocols."""

from __future__ import annotations

import copy
import pickle

import numpy as np
import pytest

import vyre
import vyre.array as xp
from vyre.errors import (
    ArgumentTypeError,
    AxisError,
    DispatchError,
    IndexOutOfRangeError,
    InvalidArgumentError,
    UnsupportedDTypeError,
    VyreError,
)


def _fix(info: pytest.ExceptionInfo) -> None:
    assert info.value.fix, f"{info.value!r} has no Fix line"


# ---- 1. creation functions ------------------------------------------------------------------------

@pytest.mark.parametrize("call", [
    lambda: xp.zeros(2.5), lambda: xp.ones(2.5), lambda: xp.empty("3"), lambda: xp.full(True, 1.0),
    lambda: xp.zeros((2, 1.5)), lambda: xp.zeros((2, None)), lambda: xp.eye(2.0), lambda: xp.eye(2, 3.0),
    lambda: xp.eye(2, k=0.5), lambda: xp.linspace(0, 1, 2.0), lambda: xp.linspace(0, 1, "3"),
    lambda: xp.linspace("a", 1, 3), lambda: xp.linspace(0, 1, 3, endpoint="yes"), lambda: xp.arange("a"),
    lambda: xp.arange(0, 3, 1j), lambda: xp.arange(None), lambda: xp.full(3, "x"), lambda: xp.full(3, [1j]),
    lambda: xp.zeros_like([1, 2]), lambda: xp.ones_like(np.zeros(3)), lambda: xp.asarray([1, 2], copy="no"),
    lambda: xp.asarray([object()]),
])
def test_creation_wrong_types(xb, call):
    with pytest.raises(ArgumentTypeError) as info:
        call()
    assert isinstance(info.value, TypeError) and isinstance(info.value, DispatchError)
    _fix(info)


@pytest.mark.parametrize("call", [
    lambda: xp.eye(-1), lambda: xp.eye(2, -3), lambda: xp.linspace(0, 1, -1), lambda: xp.zeros(-1),
    lambda: xp.ones((2, -1)), lambda: xp.full((-2,), 1), lambda: xp.arange(0, 3, 0), lambda: xp.arange(0, 1e12),
    lambda: xp.arange(float("inf")), lambda: xp.arange(0, float("nan")), lambda: xp.linspace(0, float("inf"), 3),
    lambda: xp.zeros(2**33), lambda: xp.full((2**20, 2**13), 1.0), lambda: xp.eye(2**17),
    lambda: xp.asarray([[1], [2, 3]]),
])
def test_creation_bad_values(xb, call):
    with pytest.raises(InvalidArgumentError) as info:
        call()
    assert isinstance(info.value, ValueError)
    _fix(info)


def test_arange_checks_the_buffer_limit_before_allocating():
    # 2**26 float32 elements (256 MiB) on a backend whose largest buffer is 2**28 - 4 bytes: refused by the
    # backend's own limit, before the host ramp is built
    small = vyre.ReferenceBackend(max_storage_buffer_bytes=(1 << 28) - 4)
    with pytest.raises(InvalidArgumentError, match="largest buffer") as info:
        xp.arange(0.0, float(1 << 26), device=small)
    _fix(info)
    with pytest.raises(InvalidArgumentError, match="largest buffer"):
        xp.zeros((1 << 13, 1 << 13), device=small)
    with pytest.raises(InvalidArgumentError, match="largest buffer"):
        xp.linspace(0, 1, 1 << 26, device=small)
    assert xp.arange(10, device=small).shape == (10,)


def test_device_must_be_a_backend(xb):
    for call in (lambda: xp.ones(3, device="cuda"), lambda: xp.zeros(3, device="cpu"),
                 lambda: xp.asarray([1.0], device="cuda"), lambda: xp.arange(3, device=0),
                 lambda: xp.linspace(0, 1, 3, device="gpu"), lambda: xp.eye(2, device="cuda"),
                 lambda: xp.full(2, 1.0, device=object()), lambda: xp.zeros_like(xp.ones(2), device="cuda"),
                 lambda: xp.asarray(xp.ones(2), device="cuda"), lambda: xp.ones(2).to_device("cuda"),
                 lambda: xp.astype(xp.ones(2), xp.int32, device="cuda")):
        with pytest.raises(ArgumentTypeError, match="not a vyre backend") as info:
            call()
        _fix(info)
    with pytest.raises(ArgumentTypeError):
        with vyre.use("cuda"):
            pass
    assert xp.ones(3, device=xb).device is xb and xp.ones(3, device=None).device is xb


def test_creation_still_works(xb):
    np.testing.assert_array_equal(np.asarray(xp.zeros(np.int64(3))), np.zeros(3, np.float32))
    np.testing.assert_array_equal(np.asarray(xp.ones([2, np.int32(2)])), np.ones((2, 2), np.float32))
    np.testing.assert_array_equal(np.asarray(xp.arange(np.int64(4))), [0, 1, 2, 3])
    np.testing.assert_array_equal(np.asarray(xp.arange(np.float32(0.5), 2)), [0.5, 1.5])
    np.testing.assert_array_equal(np.asarray(xp.linspace(0, 1, np.int64(3))), [0, 0.5, 1])
    np.testing.assert_array_equal(np.asarray(xp.eye(np.int64(2))), np.eye(2, dtype=np.float32))
    got = xp.full(2, np.float64(1.5))
    assert got.dtype == xp.float32
    np.testing.assert_array_equal(np.asarray(got), [1.5, 1.5])
    assert xp.full(2, np.int64(7)).dtype == xp.int32 and xp.full(2, np.bool_(True)).dtype == xp.bool
    assert xp.linspace(0, 1, 0).shape == (0,) and xp.eye(0).shape == (0, 0)
    with pytest.raises(UnsupportedDTypeError):
        xp.asarray([2**70])


def test_typed_errors_across_the_namespace(xb):
    x = xp.asarray(np.arange(6, dtype=np.float32).reshape(2, 3))
    for call, cls in [
        (lambda: xp.sum(x, axis=2), AxisError), (lambda: xp.sum(x, axis=(0, 0)), AxisError),
        (lambda: xp.argmax(x, axis=-3), AxisError), (lambda: xp.expand_dims(x, axis=5), AxisError),
        (lambda: xp.permute_dims(x, (0, 0)), AxisError), (lambda: xp.sort(x, axis=2), AxisError),
        (lambda: xp.sum(x, axis=1.5), ArgumentTypeError), (lambda: xp.sum([1, 2]), ArgumentTypeError),
        (lambda: x + "a", ArgumentTypeError), (lambda: xp.where(True, x, x), ArgumentTypeError),
        (lambda: x + xp.ones(4), InvalidArgumentError), (lambda: xp.reshape(x, (4, 2)), InvalidArgumentError),
        (lambda: xp.matmul(x, x), InvalidArgumentError), (lambda: xp.broadcast_to(x, (3, 3)), InvalidArgumentError),
        (lambda: x[2], IndexOutOfRangeError), (lambda: x[0, 3], IndexOutOfRangeError),
        (lambda: x[0, 0, 0], IndexOutOfRangeError), (lambda: x[[0, 5]], IndexOutOfRangeError),
        (lambda: x[1.5], ArgumentTypeError), (lambda: x[::0], InvalidArgumentError),
        (lambda: xp.concat([x, xp.ones(2)]), InvalidArgumentError),
    ]:
        with pytest.raises(cls) as info:
            call()
        assert isinstance(info.value, DispatchError)
        _fix(info)
    assert issubclass(AxisError, IndexError) and issubclass(AxisError, ValueError)


# ---- 2. pickle and copy ---------------------------------------------------------------------------

def _dtypes(backend) -> list:
    out = [np.bool_, np.int32, np.uint32, np.float32]
    return out + [np.float16] if backend.capabilities().f16 else out


def test_pickle_round_trip(xb):
    for dt in _dtypes(xb):
        host = (np.arange(6).reshape(2, 3) % 2).astype(dt) if dt is np.bool_ else \
            (np.arange(6).reshape(2, 3) * 3 - (0 if np.dtype(dt).kind == "u" else 5)).astype(dt)
        x = xp.asarray(host)
        y = pickle.loads(pickle.dumps(x))
        assert isinstance(y, xp.Array) and y.dtype == x.dtype and y.shape == x.shape and y.device is xb
        np.testing.assert_array_equal(np.asarray(y), host)
    lazy = xp.asarray(np.arange(4, dtype=np.float32)) * 2 + 1
    assert lazy.is_lazy
    y = pickle.loads(pickle.dumps(lazy, protocol=pickle.HIGHEST_PROTOCOL))
    np.testing.assert_array_equal(np.asarray(y), [1, 3, 5, 7])
    assert pickle.loads(pickle.dumps(xp.asarray(2.5))).shape == ()
    assert pickle.loads(pickle.dumps(xp.zeros((0, 3)))).shape == (0, 3)


def test_unpickle_goes_to_the_current_backend(xb, ref_backend):
    blob = pickle.dumps(xp.asarray([1, 2, 3]))
    other = vyre.ReferenceBackend()
    with vyre.use(other):
        y = pickle.loads(blob)
    assert y.device is other
    np.testing.assert_array_equal(np.asarray(y), [1, 2, 3])


def test_copy_and_deepcopy(xb):
    for dt in _dtypes(xb):
        x = xp.asarray(np.array([1, 0, 1], dtype=dt))
        for y in (copy.copy(x), copy.deepcopy(x)):
            assert y is not x and y.dtype == x.dtype and y.device is x.device
            np.testing.assert_array_equal(np.asarray(y), np.asarray(x))
    x = xp.asarray(np.arange(3, dtype=np.float32))
    y = copy.deepcopy(x)
    x[0] = 10.0  # the copy does not see writes to the original ...
    y += 1  # ... nor the original writes to the copy
    np.testing.assert_array_equal(np.asarray(x), [10, 1, 2])
    np.testing.assert_array_equal(np.asarray(y), [1, 2, 3])
    lazy = x * 2
    holder = copy.deepcopy({"a": lazy, "b": [lazy]})
    assert holder["a"] is holder["b"][0]  # the memo: one copy of one array
    np.testing.assert_array_equal(np.asarray(holder["a"]), [20, 2, 4])


# ---- 3. iteration and indexing past the end -------------------------------------------------------

def test_iteration(xb):
    x = xp.asarray([[1.0, 2.0], [3.0, 4.0]])
    rows = list(x)
    assert len(rows) == 2 and all(isinstance(r, xp.Array) and r.shape == (2,) for r in rows)
    np.testing.assert_array_equal(np.asarray(rows[1]), [3, 4])
    assert [float(v) for v in xp.asarray([1.0, 2.0, 3.0])] == [1, 2, 3]
    assert list(xp.zeros((0, 2))) == []
    a, b = xp.asarray([5, 6])
    assert int(a) == 5 and int(b) == 6
    with pytest.raises(TypeError, match="0-d"):
        iter(xp.asarray(1.0))
    with pytest.raises(TypeError, match="0-d"):
        len(xp.asarray(1.0))
    with pytest.raises(IndexError):
        x[2]
    with pytest.raises(IndexOutOfRangeError):
        x[-3]
    with pytest.raises(IndexOutOfRangeError):
        x[:, 2]
    # code that indexes until IndexError (the old sequence protocol) stops at the end
    seen = []
    try:
        for k in range(10):
            seen.append(x[k])
    except IndexError:
        pass
    assert len(seen) == 2


# ---- 4. numpy scalars -----------------------------------------------------------------------------

@pytest.mark.parametrize("scalar", [np.float64(2), np.float32(2), np.float16(2), np.int64(2), np.int32(2),
                                    np.uint8(2), np.bool_(True)])
def test_numpy_scalars_act_as_python_scalars(xb, scalar):
    py = scalar.item()
    for host in (np.array([1, 2, 3], np.float32), np.array([1, 2, 3], np.int32), np.array([1, 2, 3], np.uint32),
                 np.array([True, False, True])):
        x = xp.asarray(host)
        for op in ("__add__", "__mul__", "__sub__", "__radd__", "__rmul__", "__lt__", "__eq__", "__rtruediv__"):
            try:
                want = getattr(x, op)(py)
            except VyreError as exc:
                with pytest.raises(type(exc)):
                    getattr(x, op)(scalar)
                continue
            got = getattr(x, op)(scalar)
            assert got.dtype == want.dtype, (op, host.dtype, scalar)
            np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
    x = xp.asarray(np.array([1.0, 2.0], np.float32))
    assert (scalar * x).dtype == xp.float32 and (x * scalar).dtype == xp.float32
    assert xp.where(x > 1, scalar, 0.0).dtype == xp.float32
    assert xp.maximum(x, scalar).dtype == xp.float32


def test_numpy_scalar_examples(xb):
    x = xp.ones(3)
    got = x * np.float64(2)
    assert got.dtype == xp.float32
    np.testing.assert_array_equal(np.asarray(got), [2, 2, 2])
    np.testing.assert_array_equal(np.asarray(np.float64(2) * x), [2, 2, 2])
    i = xp.asarray([1, 2, 3])
    assert (i + np.int64(1)).dtype == xp.int32 and (i * np.float32(0.5)).dtype == xp.float32
    np.testing.assert_array_equal(np.asarray(i ** np.float64(2.0)), [1, 4, 9])
    with pytest.raises(UnsupportedDTypeError, match="out of range"):
        i + np.int64(2**40)
    with pytest.raises(UnsupportedDTypeError, match="out of range"):
        xp.asarray(np.zeros(2, np.uint32)) + np.int64(-1)
    assert xp.result_type(x, np.float64(1.0)) == xp.float32
    y = xp.zeros(3)
    y[1] = np.float64(4)
    np.testing.assert_array_equal(np.asarray(y), [0, 4, 0])
    assert (x + np.complex64(1)).dtype == xp.complex64  # a numpy complex scalar as a Python complex


# ---- 5. numpy's protocols -------------------------------------------------------------------------

def _same(got, want, rtol=1e-6):
    assert isinstance(got, xp.Array), type(got)
    np.testing.assert_allclose(np.asarray(got).astype(np.float64), np.asarray(want).astype(np.float64), rtol=rtol,
                               atol=1e-6)


def test_array_function_table(xb):
    h = np.array([[3.0, 1.0, 2.0], [0.5, 4.0, -1.0]], np.float32)
    x = xp.asarray(h)
    cases = [
        lambda a: np.sum(a), lambda a: np.sum(a, axis=0), lambda a: np.sum(a, 1, keepdims=True),
        lambda a: np.prod(a, axis=1), lambda a: np.mean(a), lambda a: np.max(a, axis=0), lambda a: np.min(a),
        lambda a: np.std(a), lambda a: np.var(a, axis=1, ddof=1), lambda a: np.argmax(a),
        lambda a: np.argmin(a, axis=1), lambda a: np.all(a > -2), lambda a: np.any(a > 3, axis=0),
        lambda a: np.where(a > 1, a, 0.0), lambda a: np.concatenate([a, a], axis=1),
        lambda a: np.concatenate([a, a], axis=None), lambda a: np.stack([a, a], axis=1),
        lambda a: np.reshape(a, (3, 2)), lambda a: np.reshape(a, -1), lambda a: np.transpose(a),
        lambda a: np.dot(a, np.transpose(a)), lambda a: np.dot(a[0], a[1]), lambda a: np.sort(a),
        lambda a: np.sort(a, axis=0), lambda a: np.sort(a, axis=None), lambda a: np.argsort(a, axis=1),
        lambda a: np.clip(a, 0.0, 2.5), lambda a: np.clip(a, min=1.0), lambda a: np.cumsum(a),
        lambda a: np.cumsum(a, axis=1), lambda a: np.squeeze(a[None]), lambda a: np.expand_dims(a, 0),
        lambda a: np.flip(a, 1), lambda a: np.roll(a, 1, axis=1), lambda a: np.tile(a, (2, 1)),
        lambda a: np.repeat(a, 2, axis=0), lambda a: np.moveaxis(a, 0, 1), lambda a: np.broadcast_to(a[0], (2, 3)),
        lambda a: np.diff(a, axis=1), lambda a: np.tril(a), lambda a: np.triu(a, 1), lambda a: np.zeros_like(a),
        lambda a: np.ones_like(a, dtype=np.int32), lambda a: np.full_like(a, 7.0), lambda a: np.copy(a),
        lambda a: np.round(a * 1.3), lambda a: np.outer(a[0], a[1]), lambda a: np.trace(a[:, :2]),
        lambda a: np.diagonal(a), lambda a: np.count_nonzero(a > 1), lambda a: np.isclose(a, 1.0),
        lambda a: np.take(a, [0, 2], axis=1), lambda a: np.tensordot(a, a, axes=([1], [1])),
        lambda a: np.searchsorted(np.sort(a[0]), np.sort(a[1])),
    ]
    for fn in cases:
        want = fn(h)
        got = fn(x)
        _same(got, want, rtol=1e-5)
        if isinstance(got, xp.Array):
            assert got.device is xb
    assert np.allclose(x, x + 1e-7) is True and np.array_equal(x, x) is True and np.array_equal(x, x[0]) is False
    # the two that answer a Python bool also compare with host data (a download, as bool(x) is)
    assert np.allclose(x, h) is True and np.array_equal(h, x) is True and np.allclose(x, h + 1) is False
    assert np.shape(x) == (2, 3) and np.ndim(x) == 2 and np.size(x) == 6
    rows, cols = np.nonzero(x > 1)
    np.testing.assert_array_equal(np.asarray(rows), np.nonzero(h > 1)[0])
    np.testing.assert_array_equal(np.asarray(cols), np.nonzero(h > 1)[1])


def test_array_ufunc_table(xb):
    h = np.array([[0.5, 1.0, 2.0], [3.0, 0.25, 4.0]], np.float32)
    x = xp.asarray(h)
    for uf in (np.add, np.subtract, np.multiply, np.true_divide, np.maximum, np.minimum, np.equal, np.less,
               np.greater, np.less_equal, np.greater_equal, np.not_equal, np.power, np.arctan2, np.hypot):
        _same(uf(x, x[::-1]), uf(h, h[::-1]), rtol=1e-5)
        _same(uf(x, 2.0), uf(h, np.float32(2.0)), rtol=1e-5)
        _same(uf(np.float64(2.0), x), uf(np.float32(2.0), h), rtol=1e-5)
    for uf in (np.negative, np.positive, np.absolute, np.exp, np.log, np.sqrt, np.sin, np.cos, np.tanh, np.square,
               np.floor, np.ceil, np.isnan, np.isfinite, np.log1p, np.expm1, np.reciprocal, np.sign):
        _same(uf(x), uf(h), rtol=2e-5)
    _same(np.matmul(x, np.transpose(x)), h @ h.T, rtol=1e-5)
    i = xp.asarray(np.array([5, -3, 8], np.int32))
    _same(np.bitwise_and(i, 6), np.bitwise_and(np.array([5, -3, 8], np.int32), 6))
    _same(np.floor_divide(i, 2), np.array([5, -3, 8], np.int32) // 2)
    _same(np.remainder(i, 3), np.array([5, -3, 8], np.int32) % 3)
    got = np.float64(2) * x
    assert isinstance(got, xp.Array) and got.dtype == xp.float32 and got.device is xb
    assert np.abs(x).dtype == xp.float32 and np.exp(x).device is xb


def test_numpy_refusals(xb):
    x = xp.asarray(np.arange(6, dtype=np.float32).reshape(2, 3))
    for call, msg in [
        (lambda: np.add.reduce(x), "vyre.array.sum"), (lambda: np.add.accumulate(x), "cumulative_sum"),
        (lambda: np.multiply.outer(x, x), "np.asarray"), (lambda: np.add(x, 1, out=np.empty((2, 3))), "out="),
        (lambda: np.exp(x, dtype=np.float64), "dtype="), (lambda: np.sum(x, out=np.empty(())), "out="),
        (lambda: np.sum(x, where=np.ones((2, 3), bool)), "where="), (lambda: np.median(x), "np.asarray"),
        (lambda: np.fft.fft(x), "numpy.fft.fft"), (lambda: np.ones((2, 3)) + x, "numpy array"),
        (lambda: np.concatenate([x, np.ones((2, 3))]), "numpy array"), (lambda: np.gcd(x, x), "no vyre.array"),
        (lambda: np.dot(xp.ones((2, 2, 2)), x), "matmul"), (lambda: np.round(x, 2), "decimals"),
        (lambda: np.sort(x, order="f"), "order="), (lambda: np.mean(x, dtype=np.float32), "dtype="),
        (lambda: np.reshape(x, (3, 2), order="F"), "row-major"),
    ]:
        with pytest.raises(ArgumentTypeError, match=msg) as info:
            call()
        assert isinstance(info.value, TypeError) and "np.asarray(x)" in info.value.fix
        _fix(info)


def test_asarray_still_downloads(xb):
    x = xp.asarray(np.arange(4, dtype=np.float32)) + 1
    host = np.asarray(x)
    assert isinstance(host, np.ndarray) and host.dtype == np.float32
    np.testing.assert_array_equal(host, [1, 2, 3, 4])
    np.testing.assert_array_equal(np.array(x, dtype=np.float64), [1, 2, 3, 4])
    np.testing.assert_allclose(x, [1, 2, 3, 4])  # numpy's testing functions convert with asarray
    with pytest.raises(ValueError):
        np.asarray(x, copy=False)
