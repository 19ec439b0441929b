"""DLPack through host copies: ``x.__dlpack_device__`` is kDLWebGPU, ``x.__dlpack__`` a capsule of a host
copy (numpy and, where importable, torch read it), ``copy=False`` and other target devices are BufferErrors;
``vyre.array.from_dlpack`` uploads any host DLPack producer. Values bit-exact."""

from __future__ import annotations

import numpy as np
import pytest

import vyre.array as xp
from vyre.errors import ArgumentTypeError


@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.uint32, np.bool_, np.float16])
def test_numpy_reads_a_host_copy(xb, dtype):
    host = (np.arange(12).reshape(3, 4) % 3).astype(dtype)
    x = xp.asarray(host)
    assert x.__dlpack_device__() == (15, 0)
    got = np.from_dlpack(x)
    assert got.dtype == host.dtype and got.shape == host.shape
    np.testing.assert_array_equal(got, host)
    got[0, 0] = 1  # the consumer owns its copy: the array is untouched
    np.testing.assert_array_equal(np.asarray(x), host)
    np.testing.assert_array_equal(np.from_dlpack(x[1:, ::2]), host[1:, ::2])  # a view: its elements only


def test_refusals(xb):
    x = xp.asarray([1.0, 2.0])
    with pytest.raises(BufferError):
        x.__dlpack__(copy=False)
    with pytest.raises(BufferError):
        x.__dlpack__(dl_device=(2, 0))  # CUDA
    with pytest.raises(BufferError):
        xp.from_dlpack(np.ones(2, np.float32), copy=False)
    with pytest.raises(ArgumentTypeError):
        xp.from_dlpack([1.0, 2.0])  # not a DLPack producer


def test_from_dlpack_uploads(xb):
    host = np.linspace(-1, 1, 7, dtype=np.float32)
    y = xp.from_dlpack(host)
    assert isinstance(y, xp.Array) and y.device is xb
    np.testing.assert_array_equal(np.asarray(y), host)
    assert xp.from_dlpack(xp.asarray(host)).device is xb  # a vyre array round-trips through its host copy


def test_torch_reads_and_gives(xb):
    torch = pytest.importorskip("torch")  # not in CI: the numpy tests above cover the protocol there
    x = xp.asarray(np.arange(6, dtype=np.float32))
    t = torch.from_dlpack(x)
    assert t.device.type == "cpu" and t.tolist() == list(range(6))
    np.testing.assert_array_equal(np.asarray(xp.from_dlpack(torch.arange(4, dtype=torch.int32))), np.arange(4))
