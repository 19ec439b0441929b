"""Freed resident buffers are reused by the next allocation of the same size: zero-filled like a new one
(by a queue write when small, a GPU clear when large) unless the caller asked for ``zeroed=False``; a reused
buffer keeps its bind groups; ``clear_cache`` drops the kept buffers and their bind groups."""

from __future__ import annotations

import numpy as np
import pytest

import vyre
from tests.programs import scale_program
from vyre.backends.wgpu.resident import SPARE_PER_SIZE, ZERO_BY_WRITE


@pytest.fixture
def be(gpu):
    backend = vyre.WgpuBackend.new()  # own counters and spare list: parallel tests do not interfere
    yield backend
    backend.shutdown()


@pytest.mark.parametrize("nbytes", [64, ZERO_BY_WRITE, ZERO_BY_WRITE + 1024, 1 << 20])
def test_reused_buffer_is_zero_filled_and_not_created_again(be, nbytes):
    h = be.allocate_resident(nbytes)
    be.upload_resident(h, np.full(nbytes // 4, 7, np.uint32))
    be.free_resident(h)
    created = be.stats()["buffers_created"]
    h2 = be.allocate_resident(nbytes)
    assert be.stats()["buffers_created"] == created  # the freed buffer came back
    assert not be.download_resident(h2).any()  # cleared
    be.free_resident(h2)
    be.clear_cache()
    before = be.stats()["buffers_created"]
    be.allocate_resident(nbytes)
    assert be.stats()["buffers_created"] == before + 1  # clear_cache dropped the kept buffer


def test_not_zeroed_reuse_skips_the_clear(be):
    h = be.allocate_resident(4096)
    be.upload_resident(h, np.full(1024, 7, np.uint32))
    be.free_resident(h)
    h2 = be.allocate_resident(4096, zeroed=False)
    # the same buffer, not cleared: the caller promised to write it whole (this shows no clear was queued)
    assert (be.download_resident(h2).view(np.uint32) == 7).all()


def test_kept_buffers_per_size_are_capped(be):
    hs = [be.allocate_resident(256) for _ in range(SPARE_PER_SIZE + 3)]
    for h in hs:
        be.free_resident(h)
    created = be.stats()["buffers_created"]
    again = [be.allocate_resident(256) for _ in range(SPARE_PER_SIZE + 3)]
    assert be.stats()["buffers_created"] == created + 3  # only SPARE_PER_SIZE were kept
    for h in again:
        be.free_resident(h)


def test_reused_buffers_keep_their_bind_groups_and_results_stay_right(be):
    """A loop allocating its output per step (as arrays do) creates bind groups only in the first steps, and
    buffers coming back in other roles never bind stale contents."""
    prog = scale_program()
    n = 256
    k = be.allocate_resident(4)
    be.upload_resident(k, np.array([3.0], np.float32))
    x = be.allocate_resident(4 * n)
    be.upload_resident(x, np.arange(n, dtype=np.float32))
    want = 3.0 * np.arange(n, dtype=np.float32)
    for step in range(6):
        y = be.allocate_resident(4 * n, zeroed=False)
        be.dispatch_resident_sequence([(prog, [x, k, y])])
        got = be.download_resident(y).view(np.float32)
        np.testing.assert_array_equal(got, want)
        if step == 1:
            groups = be.stats()["bind_groups_created"]
        be.free_resident(y)
    assert be.stats()["bind_groups_created"] == groups  # steps 2..5 found their bind groups
    # the kept output buffer comes back as an input: its bind groups are keyed by buffer and role
    x2 = be.allocate_resident(4 * n)
    be.upload_resident(x2, np.full(n, 2.0, np.float32))
    y2 = be.allocate_resident(4 * n, zeroed=False)
    be.dispatch_resident_sequence([(prog, [x2, k, y2])])
    np.testing.assert_array_equal(be.download_resident(y2).view(np.float32), np.full(n, 6.0, np.float32))
    be.free_resident(x)
    be.clear_cache()  # destroys kept buffers and forgets their bind groups
    y3 = be.allocate_resident(4 * n)
    be.dispatch_resident_sequence([(prog, [x2, k, y3])])
    np.testing.assert_array_equal(be.download_resident(y3).view(np.float32), np.full(n, 6.0, np.float32))
