"""The disk cache's size: scan, prune (by age and total size), clear, and the default cap on write."""

from __future__ import annotations

import os
import threading
import time

import pytest

import vyre
from vyre.backends.wgpu import disk_cache
from vyre.backends.wgpu.disk_cache import DiskCache
from vyre.backends.wgpu.transfer import Stats
from vyre.lower import lower


def _program(k: int):
    b = vyre.ProgramBuilder(f"prune_{k}", 64)
    x = b.buffer("x", "u32", access="read_write")
    i = b.global_index()
    with b.if_(i < x.len()):
        x[i] = x[i] + k
    return b.build()


def _fill(cache: DiskCache, n: int, start: float = 1_000_000.0) -> list:
    """n entries whose modification times are 1 s apart (oldest first)."""
    paths = []
    for k in range(n):
        p = _program(k)
        assert cache.store(p.fingerprint, "scope", lower(p))
        path = cache.path(p.fingerprint, "scope")
        os.utime(path, (start + k, start + k))
        paths.append(path)
    return paths


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv(disk_cache.MAX_ENV_VAR, "0")  # no cap unless a test sets one
    return DiskCache(tmp_path, "lowering=test;vyre=0", Stats())


def test_scan_counts_entries_of_every_contract(cache, tmp_path):
    _fill(cache, 3)
    other = DiskCache(tmp_path, "lowering=older;vyre=0", Stats())
    _fill(other, 2)
    s = disk_cache.scan(tmp_path)
    assert len(s.entries) == 5 and set(s.dirs) == {cache.dir.name, other.dir.name}
    assert s.total_bytes == sum(p.stat().st_size for p in tmp_path.glob("wgsl-*/*.json"))
    assert s.oldest() == 1_000_000.0 and s.newest() == 1_000_002.0
    assert disk_cache.scan(tmp_path / "missing").entries == []


def test_prune_by_age_then_by_size_least_recently_used_first(cache, tmp_path):
    paths = _fill(cache, 6)
    r = disk_cache.prune(tmp_path, max_age_s=3.5, now=1_000_005.0)  # entries 0 and 1 are older than 3.5 s
    assert r.removed == 2 and [p.exists() for p in paths] == [False, False, True, True, True, True]
    size = paths[2].stat().st_size
    r = disk_cache.prune(tmp_path, max_bytes=2 * size + size // 2)
    assert r.removed == 2 and r.kept == 2 and [p.exists() for p in paths[2:]] == [False, False, True, True]
    assert r.kept_bytes <= 2 * size + size // 2


def test_a_hit_makes_an_entry_recent(cache, tmp_path):
    paths = _fill(cache, 3)
    p0 = _program(0)
    assert cache.load(p0.fingerprint, "scope") is not None  # refreshes entry 0's time
    disk_cache.prune(tmp_path, max_bytes=paths[0].stat().st_size)
    assert [p.exists() for p in paths] == [True, False, False]


def test_clear_removes_every_entry_and_keeps_the_locks(cache, tmp_path):
    _fill(cache, 4)
    r = disk_cache.clear(tmp_path)
    assert r.removed == 4 and r.kept == 0 and disk_cache.scan(tmp_path).entries == []
    assert (cache.dir / ".lock").exists()
    p = _program(9)  # the cache still works afterwards
    assert cache.store(p.fingerprint, "s", lower(p)) and cache.load(p.fingerprint, "s") is not None


def test_prune_waits_for_the_cache_lock(cache, tmp_path):
    _fill(cache, 2)
    done = threading.Event()
    with cache._lock():
        t = threading.Thread(target=lambda: (disk_cache.clear(tmp_path), done.set()))
        t.start()
        time.sleep(0.3)
        assert not done.is_set()  # blocked on the writer's lock
        assert len(disk_cache.scan(tmp_path).entries) == 2
    t.join(10)
    assert done.is_set() and disk_cache.scan(tmp_path).entries == []


def test_stale_temp_files_are_removed(cache, tmp_path):
    _fill(cache, 1)
    old, new = cache.dir / ".tmp-old.json", cache.dir / ".tmp-new.json"
    old.write_text("x")
    new.write_text("x")
    os.utime(old, (1.0, 1.0))
    disk_cache.prune(tmp_path)
    assert not old.exists() and new.exists()


def test_the_default_cap_prunes_on_write(tmp_path, monkeypatch):
    assert disk_cache.DEFAULT_MAX_MB > 0
    monkeypatch.delenv(disk_cache.MAX_ENV_VAR, raising=False)
    assert DiskCache(tmp_path, "c", Stats()).max_bytes == disk_cache.DEFAULT_MAX_MB * 2**20
    monkeypatch.setattr(disk_cache, "CAP_CHECK_EVERY", 1)
    probe = DiskCache(tmp_path / "probe", "c", Stats())
    size = _fill(probe, 1)[0].stat().st_size
    monkeypatch.setenv(disk_cache.MAX_ENV_VAR, str(10.5 * size / 2**20))  # room for 10 entries
    cache = DiskCache(tmp_path / "capped", "c", Stats())
    for k in range(25):
        p = _program(k)
        assert cache.store(p.fingerprint, "scope", lower(p))
        os.utime(cache.path(p.fingerprint, "scope"), (1000.0 + k, 1000.0 + k))
        assert disk_cache.scan(cache.root).total_bytes <= 10.5 * size + size  # at most one entry over
    left = disk_cache.scan(cache.root).entries
    assert 0 < len(left) <= 10
    # the newest entry survives: pruning goes least recently used first
    newest = cache.path(_program(24).fingerprint, "scope")
    assert newest.exists()
