"""__array_namespace_info__: the standard's inspection API (capabilities, default device and dtypes, dtypes
by kind, float16 never (not a standard name), devices), checked against what the namespace does."""

from __future__ import annotations

import numpy as np
import pytest

import vyre
from vyre import array_api as xp
from vyre.errors import DispatchError


def test_capabilities_and_defaults(xb):
    info = xp.__array_namespace_info__()
    caps = info.capabilities()
    assert caps == {"boolean indexing": True, "data-dependent shapes": True, "max dimensions": 32}
    assert info.default_device() is xb  # inside vyre.use(xb)
    assert xp.asarray([1.0]).device is info.default_device()
    d = info.default_dtypes()
    assert d == {"real floating": xp.float32, "complex floating": xp.complex64, "integral": xp.int32,
                 "indexing": xp.int32}
    assert xp.asarray([1.5]).dtype == d["real floating"] and xp.asarray([1]).dtype == d["integral"]
    assert xp.argsort(xp.asarray([2, 1])).dtype == d["indexing"]
    assert info.default_dtypes(device=xb) == d
    assert xb in info.devices()


def test_max_dimensions_work(xb):
    nd = xp.__array_namespace_info__().capabilities()["max dimensions"]
    h = np.arange(6, dtype=np.float32).reshape((2,) + (1,) * (nd - 2) + (3,))
    x = xp.asarray(h)
    np.testing.assert_array_equal(np.asarray(xp.flip(x + 1)), np.flip(h + 1))
    np.testing.assert_array_equal(np.asarray(xp.sum(x, axis=0)), h.sum(axis=0))


def test_dtypes(xb):
    info = xp.__array_namespace_info__()
    caps = xb.capabilities()
    f16, f64, i64 = caps.f16, caps.f64, caps.int64  # the 64-bit dtypes: tests/array/test_float64.py
    every = info.dtypes(device=xb)
    assert set(every) - {"complex64", "complex128"} == {"bool", "int32", "uint32", "float32"} | (  # test_complex
        {"float64"} if f64 else set()) | ({"int64", "uint64"} if i64 else set())
    assert "float16" not in every  # not a dtype name of the standard, even where shader-f16 makes it usable
    if f16:
        assert xp.zeros((1,), dtype=xp.float16, device=xb).dtype == xp.float16
    for name, dt in every.items():
        assert dt == getattr(xp, name)
        assert xp.zeros((1,), dtype=dt, device=xb).dtype == dt  # each listed dtype works on the device
    assert info.dtypes(kind="bool") == {"bool": xp.bool}
    wide_i = {"int64": xp.int64} if i64 else {}
    assert info.dtypes(kind="signed integer") == {"int32": xp.int32, **wide_i}
    assert info.dtypes(kind="unsigned integer") == {"uint32": xp.uint32, **({"uint64": xp.uint64} if i64 else {})}
    assert set(info.dtypes(kind="integral")) == {"int32", "uint32"} | ({"int64", "uint64"} if i64 else set())
    assert set(info.dtypes(kind="real floating")) == {"float32"} | ({"float64"} if f64 else set())
    assert info.dtypes(kind="complex floating") == {"complex64": xp.complex64, **(
        {"complex128": xp.complex128} if f64 else {})}
    assert set(info.dtypes(kind="numeric")) == set(every) - {"bool"}
    assert set(info.dtypes(kind=("bool", "signed integer"))) == {"bool", "int32"} | set(wide_i)
    for kind in ("bool", "signed integer", "unsigned integer", "integral", "real floating", "complex floating",
                 "numeric"):
        got = info.dtypes(device=xb, kind=kind)
        assert {n for n, dt in every.items() if xp.isdtype(dt, kind)} == set(got)  # agrees with isdtype
    with pytest.raises(DispatchError, match="unknown kind"):
        info.dtypes(kind="floating")
    with pytest.raises(TypeError):
        info.dtypes(xb)  # keyword-only


def test_devices_follow_use(ref_backend):
    info = xp.__array_namespace_info__()
    other = vyre.ReferenceBackend()
    with vyre.use(other):
        assert info.default_device() is other
        assert other in info.devices()
    assert info.devices()[0] is vyre.default_backend()
