"""Focused tests of the hash ops (hash.fnv1a32, hash.crc32 and their .rows variants)."""

from __future__ import annotations

import zlib

import numpy as np
import pytest

import vyre.ops
from vyre.backends.host import pack_bytes
from vyre.errors import DispatchError
from vyre.ops.hash import crc32
from vyre.ops.registry import get


@pytest.fixture(params=["reference", "gpu"])
def backend(request):
    return request.getfixturevalue(request.param)


def b(text: bytes) -> np.ndarray:
    return np.frombuffer(text, dtype=np.uint8)


def test_known_values(backend):
    assert int(vyre.ops.hash_crc32(backend, b(b"123456789"))) == 0xCBF43926
    assert int(vyre.ops.hash_crc32(backend, b(b""))) == 0
    assert int(vyre.ops.hash_fnv1a32(backend, b(b""))) == 0x811C9DC5
    assert int(vyre.ops.hash_fnv1a32(backend, b(b"a"))) == 0xE40C292C
    assert int(vyre.ops.hash_fnv1a32(backend, b(b"foobar"))) == 0xBF9CF968
    out = vyre.ops.hash_crc32(backend, b(b"123456789"))
    assert out.dtype == np.uint32 and out.shape == ()


def test_rows(backend):
    rows = np.stack([b(b"123456789"), b(b"abcdefghi"), b(b"\x00" * 9)])
    np.testing.assert_array_equal(vyre.ops.hash_crc32_rows(backend, rows), [zlib.crc32(bytes(r)) for r in rows])
    words = np.stack([b(b""), b(b"")]).reshape(2, 0)
    np.testing.assert_array_equal(vyre.ops.hash_fnv1a32_rows(backend, words), [0x811C9DC5] * 2)
    one = vyre.ops.hash_fnv1a32_rows(backend, b(b"a").reshape(1, 1))
    assert one.shape == (1,) and one[0] == 0xE40C292C


@pytest.mark.parametrize("n,chunk", [(1, 64), (255, 1), (4097, 4), (70_001, 64)])
def test_crc32_matches_zlib_at_any_length_and_chunk(backend, n, chunk):
    data = np.random.default_rng(n).integers(0, 256, n, dtype=np.uint8)
    assert int(vyre.ops.hash_crc32(backend, data, chunk=chunk)) == zlib.crc32(data.tobytes())


def test_crc32_large_buffer_on_the_gpu(gpu):
    data = np.random.default_rng(1).integers(0, 256, 3_000_001, dtype=np.uint8)
    assert int(vyre.ops.hash_crc32(gpu, data)) == zlib.crc32(data.tobytes())


def test_crc32_passes_grow_with_the_length():
    steps = lambda n, chunk=64: len(get("hash.crc32").build(nbytes=n, chunk=chunk).steps)  # noqa: E731
    assert steps(0) == steps(256 * 64) == 1
    assert steps(256 * 64 + 1) == 2
    assert steps(300_000, 4) == 3


def test_gf2_helpers_combine_crcs():
    """raw(A || B) = raw(A) * x^(8|B|) ^ raw(B), and the init term is 0xFFFFFFFF * x^(8n)."""
    r = np.random.default_rng(2)
    a, c = r.integers(0, 256, 37, dtype=np.uint8).tobytes(), r.integers(0, 256, 91, dtype=np.uint8).tobytes()

    def raw(data: bytes) -> int:  # CRC register from 0, no final xor
        return zlib.crc32(data) ^ crc32.mulmod(0xFFFFFFFF, crc32.xpow8n(len(data))) ^ 0xFFFFFFFF

    assert raw(a + c) == crc32.mulmod(raw(a), crc32.xpow8n(len(c))) ^ raw(c)
    assert raw(b"\x00" * 5 + a) == raw(a)  # leading zeros leave the raw CRC unchanged
    assert crc32.xpow8n(0) == 1 << 31


def test_bytes_are_packed_little_endian():
    np.testing.assert_array_equal(pack_bytes(b(b"\x01\x02\x03\x04\x05")), np.array([0x04030201, 5], np.uint32))
    assert pack_bytes(np.zeros(0, np.uint8)).size == 0


def test_params_errors(reference):
    with pytest.raises(DispatchError, match="uint8") as e:
        vyre.ops.hash_crc32(reference, np.arange(4, dtype=np.uint32))
    assert "np.frombuffer" in e.value.fix
    with pytest.raises(DispatchError, match="2-d"):
        vyre.ops.hash_fnv1a32_rows(reference, b(b"abc"))
    with pytest.raises(DispatchError, match="uint8"):
        vyre.ops.hash_crc32_rows(reference, np.zeros((2, 2), np.int8))
