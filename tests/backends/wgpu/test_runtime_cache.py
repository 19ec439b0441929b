"""Runtime caches: the in-memory pipeline LRU (hits, misses, evictions, pinning, invalidation),
compile artifacts, and the disk cache of lowerings (second process, corruption, off switch)."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import vyre
from vyre.backends.wgpu.disk_cache import DiskCache
from vyre.backends.wgpu.transfer import Stats
from vyre.errors import NoAdapterError, ValidationError
from vyre.ir.builder import ProgramBuilder
from vyre.lower import LOWERING_VERSION

from gpu_policy import skip_or_fail

ROOT = Path(__file__).resolve().parents[3]


def backend(**kw):
    try:
        return vyre.WgpuBackend.new(**kw)
    except NoAdapterError as exc:
        skip_or_fail(f"no GPU adapter: {exc}")


def affine(k: float, name: str = "affine"):
    """y = x * k + 1 (a distinct program, and fingerprint, per k)."""
    b = ProgramBuilder(name, 64)
    x = b.buffer("x", "f32")
    y = b.buffer("y", "f32", access="write")
    i = b.global_index()
    with b.if_(i < y.len()):
        y[i] = x[i] * float(k) + 1.0
    return b.build()


def check(gpu, program, k: float, n: int = 100):
    xs = np.arange(n, dtype=np.float32)
    (y,) = gpu.dispatch(program, [xs])
    np.testing.assert_allclose(y, xs * np.float32(k) + 1, rtol=1e-6)


# ----------------------------------------------------------------------------- memory cache
def test_hits_and_misses_in_stats():
    gpu = backend(disk_cache=False)
    p = affine(2)
    check(gpu, p, 2)
    s = gpu.stats()["pipeline_cache"]
    assert (s["entries"], s["misses"], s["hits"], s["compiled"]) == (1, 1, 0, 1)
    for _ in range(3):
        check(gpu, p, 2)
    check(gpu, vyre.Program.from_wire(p.to_wire()), 2)  # an equal program: same fingerprint, same pipeline
    s = gpu.stats()["pipeline_cache"]
    assert (s["entries"], s["misses"], s["hits"], s["compiled"]) == (1, 1, 4, 1)
    assert s["hit_rate"] == pytest.approx(4 / 5)
    assert s["capacity"] == 256 and s["evictions"] == 0
    assert gpu.stats()["lowerings"] == 1


def test_lru_eviction_with_small_capacity():
    gpu = backend(disk_cache=False, pipeline_cache_capacity=2)
    p1, p2, p3 = affine(1), affine(2), affine(3)
    check(gpu, p1, 1)
    check(gpu, p2, 2)
    check(gpu, p1, 1)  # p1 is now the most recently used: p2 goes first
    pool = gpu.stats()["buffer_pool"]
    check(gpu, p3, 3)
    s = gpu.stats()["pipeline_cache"]
    assert s["entries"] == 2 and s["evictions"] == 1
    # the evicted pipeline's buffers (x, y) went back to the pool and p3 got them (its params uniform is the
    # shared buffer of its words, not a pooled one)
    assert gpu.stats()["buffer_pool"]["hits"] == pool["hits"] + 2
    assert gpu.stats()["buffer_pool"]["buffers"] == pool["buffers"]
    before = gpu.stats()["pipeline_cache"]
    check(gpu, p1, 1)
    assert gpu.stats()["pipeline_cache"]["hits"] == before["hits"] + 1
    check(gpu, p2, 2)  # evicted: compiled again (its lowering is still cached)
    after = gpu.stats()["pipeline_cache"]
    assert after["misses"] == before["misses"] + 1 and after["compiled"] == before["compiled"] + 1
    assert gpu.stats()["lowerings"] == 3
    gpu.pipeline_cache_capacity = 1
    assert gpu.stats()["pipeline_cache"]["entries"] == 1


def test_compile_persistent_is_never_evicted():
    gpu = backend(disk_cache=False, pipeline_cache_capacity=1)
    p = affine(5)
    pp = gpu.compile_persistent(p)
    assert pp.pinned and pp.fingerprint == p.fingerprint and "fn main" in pp.wgsl
    for k in (6, 7, 8):
        check(gpu, affine(k), k)
    assert pp.pinned
    s = gpu.stats()["pipeline_cache"]
    assert s["pinned"] == 1 and s["entries"] == 2  # the pinned one plus the capacity of 1
    compiled = gpu.stats()["pipelines_compiled"]
    xs = np.arange(50, dtype=np.float32)
    (y,) = pp.dispatch([xs])
    np.testing.assert_allclose(y, xs * 5 + 1, rtol=1e-6)
    (y,) = gpu.dispatch_compiled(pp, {"x": xs})
    np.testing.assert_allclose(y, xs * 5 + 1, rtol=1e-6)
    assert gpu.stats()["pipelines_compiled"] == compiled
    pp.release()
    assert not pp.pinned
    check(gpu, affine(9), 9)
    assert gpu.stats()["pipeline_cache"]["pinned"] == 0 and gpu.stats()["pipeline_cache"]["entries"] == 1
    with pytest.raises(vyre.errors.DispatchError, match="released"):
        pp.dispatch([xs])


def test_compile_artifact_and_dispatch_compiled():
    gpu = backend(disk_cache=False)
    p = affine(3)
    c = gpu.compile(p)
    assert c is gpu.compile(vyre.Program.from_wire(p.to_wire()))
    assert c.fingerprint == p.fingerprint and c.program is p and c.name == "affine"
    assert "@compute" in c.wgsl and c.entry_point == "main"
    assert [(b.name, b.group, b.binding, b.kind) for b in c.bindings] == [
        ("x", 0, 0, "read-only-storage"), ("y", 0, 1, "storage"), ("_vyre", 1, 0, "uniform")]
    assert c.features == frozenset() and c.workgroup_size == (64, 1, 1)
    assert c.key[0] == p.fingerprint and c.lowering_version == LOWERING_VERSION
    xs = np.arange(10, dtype=np.float32)
    np.testing.assert_allclose(gpu.dispatch_compiled(c, [xs])[0], xs * 3 + 1, rtol=1e-6)
    gpu.invalidate_pipeline_cache()
    lowerings = gpu.stats()["lowerings"]
    np.testing.assert_allclose(gpu.dispatch_compiled(c, [xs])[0], xs * 3 + 1, rtol=1e-6)
    assert gpu.stats()["lowerings"] == lowerings  # rebuilt from the artifact's WGSL, not lowered again
    with pytest.raises(vyre.errors.DispatchError, match="CompiledProgram"):
        gpu.dispatch_compiled(p, [xs])
    for call in (gpu.compile, gpu.compile_persistent, lambda q: gpu.dispatch(q, [xs])):
        with pytest.raises(vyre.errors.DispatchError, match="expected a vyre Program"):
            call(p.to_wire())


def test_prepare():
    gpu = backend(disk_cache=False)
    assert gpu.stats()["staging_bytes"] == 0
    gpu.prepare()
    s = gpu.stats()
    assert s["staging_bytes"] > 0 and s["dispatches"] == 1  # the warm-up dispatch of raw WGSL
    assert s["buffer_pool"]["free_buffers"] == 0  # the warm-up's buffers stay with its pipeline
    arts = gpu.prepare([affine(1), affine(2)])
    assert [a.fingerprint for a in arts] == [affine(1).fingerprint, affine(2).fingerprint]
    assert gpu.stats()["pipeline_cache"]["entries"] == 3
    check(gpu, affine(1), 1)
    s = gpu.stats()
    assert s["pipeline_cache"]["hits"] == 1
    assert s["staging_buffers_created"] == 2  # no staging buffer had to be made on the way


def test_invalidate_by_fingerprint(tmp_path):
    gpu = backend(disk_cache=tmp_path)
    p1, p2 = affine(1), affine(2)
    check(gpu, p1, 1)
    check(gpu, p2, 2)
    files = {f.name.split("-")[0] for f in gpu.disk_cache_dir.glob("*.json")}
    assert files == {p1.fingerprint, p2.fingerprint}
    assert gpu.invalidate_pipeline_cache([p1.fingerprint]) == 1
    assert {f.name.split("-")[0] for f in gpu.disk_cache_dir.glob("*.json")} == {p2.fingerprint}
    s = gpu.stats()["pipeline_cache"]
    assert s["entries"] == 1 and s["lowerings"] == 1
    lowerings = gpu.stats()["lowerings"]
    check(gpu, p2, 2)
    assert gpu.stats()["lowerings"] == lowerings
    check(gpu, p1, 1)
    assert gpu.stats()["lowerings"] == lowerings + 1  # p1 really was dropped everywhere
    assert gpu.invalidate_pipeline_cache(p2) == 1  # a Program works too
    assert gpu.invalidate_pipeline_cache() == 1
    assert gpu.stats()["pipeline_cache"]["entries"] == 0 and not list(gpu.disk_cache_dir.glob("*.json"))


def test_deep_program_reports_nesting_issue():
    b = ProgramBuilder("deep", 64)
    x = b.buffer("x", "f32")
    y = b.buffer("y", "f32", access="write")
    i = b.global_index()
    v = x[i]
    for _ in range(400):  # deep enough that serialising it (the fingerprint) fails
        v = v + 1.0
    with b.if_(i < y.len()):
        y[i] = v
    p = b.build(validate=False)
    gpu = backend(disk_cache=False)
    with pytest.raises(ValidationError) as ei:
        gpu.dispatch(p, [np.zeros(4, np.float32)])
    assert "nesting" in ei.value.rules


# ----------------------------------------------------------------------------- disk cache
CHILD = """
import json, numpy as np, vyre
b = vyre.ProgramBuilder("disk_child", 64)
x = b.buffer("x", "f32")
y = b.buffer("y", "f32", access="write")
i = b.global_index()
with b.if_(i < y.len()):
    y[i] = x[i] * 4.5 + 1.0
gpu = vyre.WgpuBackend.new()
xs = np.arange(64, dtype=np.float32)
(out,) = gpu.dispatch(b.build(), [xs])
assert np.allclose(out, xs * 4.5 + 1)
s = gpu.stats()
print(json.dumps({k: s[k] for k in ("lowerings", "validations", "disk_cache_hits", "disk_cache_misses",
                                    "disk_cache_writes", "disk_cache_corrupt")}))
"""


def _run_child(cache_dir) -> dict:
    env = {**os.environ, "VYRE_CACHE_DIR": str(cache_dir), "PYTHONPATH": os.pathsep.join([str(ROOT), *sys.path])}
    r = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, env=env, cwd=ROOT, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    return json.loads(r.stdout.strip().splitlines()[-1])


def test_disk_cache_reused_by_a_second_process(tmp_path):
    backend(disk_cache=False)  # skip or fail early without an adapter
    first = _run_child(tmp_path)
    assert first["lowerings"] == 1 and first["validations"] == 1
    assert first["disk_cache_misses"] == 1 and first["disk_cache_writes"] == 1 and first["disk_cache_hits"] == 0
    second = _run_child(tmp_path)
    assert second["disk_cache_hits"] == 1 and second["disk_cache_misses"] == 0
    assert second["lowerings"] == 0 and second["validations"] == 0 and second["disk_cache_writes"] == 0


def _corrupt(path: Path, how: str) -> None:
    raw = path.read_bytes()
    if how == "truncated":
        path.write_bytes(raw[: len(raw) // 2])
    elif how == "garbled":
        path.write_bytes(bytes(b ^ 0x5A for b in raw[:64]) + raw[64:])
    elif how == "empty":
        path.write_bytes(b"")
    else:  # valid JSON whose payload was edited: only the checksum can tell
        doc = json.loads(raw)
        doc["payload"] = doc["payload"].replace("main", "mian")
        path.write_text(json.dumps(doc))


@pytest.mark.parametrize("how", ["truncated", "garbled", "empty", "edited"])
def test_corrupted_entry_is_rebuilt(tmp_path, how):
    p = affine(7)
    backend(disk_cache=tmp_path).compile(p)
    (entry,) = (tmp_path).glob("wgsl-*/*.json")
    good = entry.read_bytes()
    _corrupt(entry, how)
    assert entry.read_bytes() != good
    gpu = backend(disk_cache=tmp_path)
    check(gpu, p, 7)
    s = gpu.stats()
    assert s["disk_cache"]["corrupt"] == 1 and s["disk_cache"]["hits"] == 0
    assert s["lowerings"] == 1 and s["disk_cache"]["writes"] == 1
    assert entry.read_bytes() == good  # rebuilt, byte for byte
    third = backend(disk_cache=tmp_path)
    check(third, p, 7)
    assert third.stats()["disk_cache"]["hits"] == 1 and third.stats()["lowerings"] == 0


def test_disk_cache_logs_to_the_vyre_logger(tmp_path, caplog):
    from vyre.lower import lower

    p = affine(14)
    cache = DiskCache(tmp_path, "lowering=log;vyre=0.1.0", Stats())
    path = cache.path(p.fingerprint, "scope")
    caplog.set_level(logging.DEBUG, logger="vyre")
    assert cache.load(p.fingerprint, "scope") is None
    assert cache.store(p.fingerprint, "scope", lower(p))
    assert cache.load(p.fingerprint, "scope") is not None
    debug = [r.getMessage() for r in caplog.records if r.name == "vyre.cache" and r.levelno == logging.DEBUG]
    assert debug == [f"disk cache miss: {path}", f"disk cache write: {path}", f"disk cache hit: {path}"]
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]
    # a corrupt entry: one warning naming the file, then rebuilt by the caller
    caplog.clear()
    _corrupt(path, "truncated")
    assert cache.load(p.fingerprint, "scope") is None and not path.exists()
    (warning,) = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert warning.name == "vyre.cache" and warning.levelno == logging.WARNING
    assert str(path) in warning.getMessage() and "corrupt" in warning.getMessage()
    # an I/O error (the cache root is a file): a warning, no exception
    caplog.clear()
    blocked = tmp_path / "not-a-dir"
    blocked.write_text("")
    broken = DiskCache(blocked, "lowering=log;vyre=0.1.0", Stats())
    assert broken.store(p.fingerprint, "scope", lower(p)) is False and broken.stats["disk_cache_errors"] == 1
    (warning,) = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert warning.name == "vyre.cache" and "cannot write" in warning.getMessage()


def test_cache_dir_off_writes_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv("VYRE_CACHE_DIR", "off")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    gpu = backend()
    check(gpu, affine(11), 11)
    s = gpu.stats()
    assert gpu.disk_cache_dir is None and s["disk_cache"]["enabled"] is False
    assert s["disk_cache"]["writes"] == 0 and s["lowerings"] == 1
    assert list(tmp_path.rglob("*")) == []


def test_cache_dir_from_env_and_user_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("VYRE_CACHE_DIR", str(tmp_path / "c"))
    gpu = backend()
    assert gpu.disk_cache_dir.parent == tmp_path / "c"
    check(gpu, affine(12), 12)
    assert len(list((tmp_path / "c").glob("wgsl-*/*.json"))) == 1
    monkeypatch.delenv("VYRE_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    import platformdirs

    assert backend().disk_cache_dir.parent == Path(platformdirs.user_cache_dir("vyre"))
    # a custom lowering does not use the disk cache unless asked to
    assert backend(lower=vyre.lower).disk_cache_dir is None


def test_entries_are_versioned_by_the_lowering_contract(tmp_path):
    from vyre.lower import lower

    p = affine(13)
    old = DiskCache(tmp_path, "lowering=old;vyre=0.0.1", Stats())
    new = DiskCache(tmp_path, "lowering=new;vyre=0.1.0", Stats())
    assert old.dir != new.dir
    assert old.store(p.fingerprint, "scope", lower(p))
    assert new.load(p.fingerprint, "scope") is None and new.stats["disk_cache_misses"] == 1
    assert old.load(p.fingerprint, "scope").wgsl == lower(p).wgsl
    # an entry of another contract found in this contract's directory is never served
    new.dir.mkdir(parents=True)
    os.replace(old.path(p.fingerprint, "scope"), new.path(p.fingerprint, "scope"))
    assert new.load(p.fingerprint, "scope") is None and new.stats["disk_cache_corrupt"] == 1
    assert not new.path(p.fingerprint, "scope").exists()
    # another program's entry under this name is not served either
    new.store(p.fingerprint, "scope", lower(p))
    os.replace(new.path(p.fingerprint, "scope"), new.path("0" * 64, "scope"))
    assert new.load("0" * 64, "scope") is None and new.stats["disk_cache_corrupt"] == 2
    assert not [f for f in new.dir.iterdir() if f.name.startswith(".tmp-")]
