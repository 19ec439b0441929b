"""Chunked transfers (vyre/backends/wgpu/chunked.py): large resident uploads and downloads cut into chunks that
cycle through a ring of staging buffers. Every result is compared byte for byte with the data sent; the ring
is exercised with small chunks (many more chunks than slots), unaligned ranges, several transfers in one
call, threads sharing a backend, a failure in the middle of a transfer, and device loss and recovery."""

from __future__ import annotations

import numpy as np
import pytest
from threaded import run_in_threads

from vyre.backends.wgpu import chunked, hostcopy
from vyre.errors import DeviceLostError, VyreError

KiB = 1 << 10


@pytest.fixture
def small_chunks(monkeypatch, backend):  # backend: its own device (conftest.py): one test loses it
    """64 KiB chunks from 128 KiB on: a 1 MiB transfer is 16 chunks through the ring's 3 slots (chunking on
    also on a CPU adapter, where the backend leaves it off)."""
    monkeypatch.setattr(backend._executor, "chunked_transfers", True)
    monkeypatch.setattr(chunked, "CHUNK_MIN", 64 * KiB)
    monkeypatch.setattr(chunked, "CHUNK_MAX", 64 * KiB)
    monkeypatch.setattr(chunked, "READBACK_MIN_BYTES", 128 * KiB)
    monkeypatch.setattr(chunked, "UPLOAD_MIN_BYTES", 128 * KiB)
    monkeypatch.setattr(chunked, "FIXED_CHUNK", None)


def _data(nbytes: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 256, nbytes, dtype=np.uint8)


def _chunks(b) -> int:
    return b.stats().get("transfer_chunks", 0)


@pytest.mark.parametrize("nbytes", [128 * KiB, 128 * KiB + 4, 1 << 20, 3 * 64 * KiB - 12])
def test_round_trip_through_the_ring(backend, small_chunks, nbytes):
    data = _data(nbytes, nbytes)
    h = backend.allocate_resident(nbytes)
    before = _chunks(backend)
    backend.upload_resident(h, data)
    up = _chunks(backend) - before
    assert up == -(-nbytes // (64 * KiB))
    out = np.empty(nbytes, np.uint8)
    got = backend.download_resident(h, out=out)
    assert got is out and np.array_equal(out, data)
    fresh = backend.download_resident(h)
    assert fresh.dtype == np.uint8 and np.array_equal(fresh, data)
    assert _chunks(backend) - before == 3 * up
    assert len(backend._executor.staging.rings["upload"]) == chunked.SLOTS  # no buffer per chunk


def test_unaligned_ranges_and_several_reads(backend, small_chunks):
    """Ranges at odd offsets and lengths (the reads' 4-byte spans) and several reads of one call, chunked
    across their boundaries; a small read among them comes back too."""
    data = _data(1 << 20, 1)
    h = backend.allocate_resident(data.nbytes)
    backend.upload_resident(h, data)
    ranges = [(h, 3, 300 * KiB + 5), (h, 1 << 19, 200 * KiB - 1), (h, 7, 9)]
    got = backend.download_resident_ranges(ranges)
    for (_, off, n), g in zip(ranges, got):
        assert np.array_equal(g, data[off:off + n]), (off, n)
    outs = [np.empty(n, np.uint8) for _, _, n in ranges]
    backend.download_resident_ranges(ranges, outs)
    for (_, off, n), o in zip(ranges, outs):
        assert np.array_equal(o, data[off:off + n])
    f32 = np.empty((300 * KiB) // 4, np.float32)  # a typed destination, bytes kept
    backend.download_resident_range(h, 4, f32.nbytes, out=f32)
    assert f32.tobytes() == data[4:4 + f32.nbytes].tobytes()


def test_several_uploads_in_one_call_and_offsets(backend, small_chunks):
    a, c = _data(400 * KiB, 2), _data(300 * KiB + 8, 3)
    h1, h2 = backend.allocate_resident(a.nbytes), backend.allocate_resident(c.nbytes + 64)
    backend.upload_resident_many([(h1, a), (h2, c, 64)])
    assert np.array_equal(backend.download_resident(h1), a)
    assert np.array_equal(backend.download_resident(h2)[64:], c)


def test_threads_share_the_ring(backend, small_chunks):
    """Transfers from several threads (the backend lock orders them) never see each other's chunks."""

    def worker(seed: int) -> None:
        data = _data(512 * KiB + 4 * seed, seed)
        h = backend.allocate_resident(data.nbytes)
        for k in range(4):
            d = np.roll(data, k)
            backend.upload_resident(h, d)
            assert np.array_equal(backend.download_resident(h), d)
        backend.free_resident(h)

    run_in_threads(worker, 4)


def test_failure_mid_transfer_leaves_the_backend_usable(backend, small_chunks, monkeypatch):
    data = _data(1 << 20, 4)
    h = backend.allocate_resident(data.nbytes)
    backend.upload_resident(h, data)
    calls = {"n": 0}
    real = hostcopy.copy_bytes

    def flaky(dst, src):
        calls["n"] += 1
        if calls["n"] == 3:
            raise RuntimeError("simulated host copy failure")
        real(dst, src)

    driver = backend._executor.driver
    real_write = driver.write_mapped

    def flaky_write(buf, piece, offset):  # the public driver has no mapped view: it writes through wgpu-py
        calls["n"] += 1
        if calls["n"] == 3:
            raise RuntimeError("simulated host copy failure")
        real_write(buf, piece, offset)

    monkeypatch.setattr(hostcopy, "copy_bytes", flaky)
    monkeypatch.setattr(driver, "write_mapped", flaky_write)
    with pytest.raises((VyreError, RuntimeError)):
        backend.download_resident(h)
    calls["n"] = 0
    with pytest.raises((VyreError, RuntimeError)):
        backend.upload_resident(h, data[::-1].copy())
    monkeypatch.setattr(hostcopy, "copy_bytes", real)
    monkeypatch.setattr(driver, "write_mapped", real_write)
    backend.upload_resident(h, data)  # the staging ring was dropped and is made again
    assert np.array_equal(backend.download_resident(h), data)


def test_device_loss_and_recovery(backend, small_chunks):
    data = _data(1 << 20, 5)
    h = backend.allocate_resident(data.nbytes)
    backend.upload_resident(h, data)
    backend.force_device_lost()
    with pytest.raises(DeviceLostError):
        backend.upload_resident(h, data)
    with pytest.raises(DeviceLostError):
        backend.download_resident(h)
    backend.try_recover()
    assert backend._executor.chunked_transfers  # kept across the recovery (the same adapter)
    h2 = backend.allocate_resident(data.nbytes)
    backend.upload_resident(h2, data)
    assert np.array_equal(backend.download_resident(h2), data)


def test_chunk_sizes_and_switch(monkeypatch):
    assert chunked.chunk_size(16 << 20) == chunked.CHUNK_MIN
    assert chunked.chunk_size(64 << 20) == 16 << 20
    assert chunked.chunk_size(1 << 30) == chunked.CHUNK_MAX
    # the measured policy (chunked.py): large readbacks only, unless VYRE_TRANSFER_CHUNK_MIB says otherwise
    if chunked.FIXED_CHUNK is None:
        assert chunked.READBACK_MIN_BYTES == 128 << 20 and chunked.UPLOAD_MIN_BYTES == float("inf")
    monkeypatch.setattr(chunked, "FIXED_CHUNK", 1 << 20)
    assert chunked.chunk_size(1 << 30) == 1 << 20


def test_chunking_only_off_cpu_adapters(backend):
    on_cpu = backend.adapter_info["adapter_type"].upper() == "CPU"
    assert backend._executor.chunked_transfers is (not on_cpu)


def test_one_buffer_path_when_off(backend, monkeypatch):
    monkeypatch.setattr(backend._executor, "chunked_transfers", True)
    monkeypatch.setattr(chunked, "READBACK_MIN_BYTES", float("inf"))
    monkeypatch.setattr(chunked, "UPLOAD_MIN_BYTES", float("inf"))
    data = _data(256 * KiB, 6)
    h = backend.allocate_resident(data.nbytes)
    before = _chunks(backend)
    backend.upload_resident(h, data)
    assert np.array_equal(backend.download_resident(h), data)
    assert _chunks(backend) == before
