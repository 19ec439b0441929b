"""Freed resident buffers of SPARE_MIN bytes and more are reused by the next allocation of the same size,
zero-filled like a new one, and dropped by clear_cache."""

from __future__ import annotations

import numpy as np

import vyre
from vyre.backends.wgpu.resident import SPARE_MIN


def test_reused_buffer_is_zero_filled_and_not_created_again(gpu):
    be = vyre.WgpuBackend.new()  # own counters and spare list: parallel tests do not interfere
    try:
        n = SPARE_MIN
        h = be.allocate_resident(n)
        be.upload_resident(h, np.full(n // 4, 7, np.uint32))
        be.free_resident(h)
        created = be.stats()["buffers_created"]
        h2 = be.allocate_resident(n)
        assert be.stats()["buffers_created"] == created  # the freed buffer came back
        assert not be.download_resident(h2).any()  # cleared
        small = be.allocate_resident(64)
        be.upload_resident(small, np.arange(16, dtype=np.uint32))
        be.free_resident(small)
        small2 = be.allocate_resident(64)  # under SPARE_MIN: a new buffer, zero-filled by WebGPU
        assert not be.download_resident(small2).any()
        be.free_resident(h2)
        be.clear_cache()
        before = be.stats()["buffers_created"]
        be.allocate_resident(n)
        assert be.stats()["buffers_created"] == before + 1  # clear_cache dropped the spare
    finally:
        be.shutdown()
