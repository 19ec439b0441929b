"""Per-adapter tuning (vyre.ops.tuning): the store, validation of candidates, use at call time, isolation
by adapter, corrupt files, stats(). Tiny shapes: a (20, 12) @ (12, 24) product has two GEMM candidates
(32x64x16/4x4, the default, and 32x32x16/4x4)."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import vyre.ops  # noqa: F401 - vyre.ops.<name> below
from vyre.ops import _tuning_store as S
from vyre.ops import api, tuning
from vyre.ops._tunables import Setting, tunables

from procs import child_env

M, K, N = 20, 12, 24
SHAPE = {"matmul": [(M, K, N)]}
DEFAULT = Setting.of("generic", {"tile_m": 32, "tile_n": 64, "tile_k": 16, "reg_m": 4, "reg_n": 4})
OTHER = Setting.of("generic", {"tile_m": 32, "tile_n": 32, "tile_k": 16, "reg_m": 4, "reg_n": 4})
CLASS = tunables()["matmul"].shape_class({"m": M, "k": K, "n": N})


@pytest.fixture
def store_path(tmp_path, monkeypatch):
    path = tmp_path / "tuning.json"
    monkeypatch.setenv(S.ENV_VAR, str(path))
    return path


def _mats(seed=0):
    r = np.random.default_rng(seed)
    return r.uniform(-1, 1, (M, K)).astype(np.float32), r.uniform(-1, 1, (K, N)).astype(np.float32)


def _entry(setting: Setting) -> dict:
    return {"op": "matmul", "class": CLASS, "tuner": tuning.TUNER_VERSION, "setting": setting.to_json(),
            "time_s": 1e-3, "method": "test", "shape": [M, K, N], "candidates": [], "when": S.now_iso()}


def _spy_params(monkeypatch) -> list:
    """Record the params of every pipeline the convenience layer builds."""
    seen: list = []
    real = api.pipeline_for

    def spy(op_id, params, variant="generic"):
        seen.append((op_id, dict(params), variant))
        return real(op_id, params, variant)

    monkeypatch.setattr(api, "pipeline_for", spy)
    return seen


class _Corrupting:
    """A backend whose pipelines with ``bad_threads`` invocations per workgroup return wrong results."""

    def __init__(self, inner, bad_threads):
        self.inner, self.bad_threads = inner, bad_threads

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def run_pipeline(self, pipe, inputs):
        outs = self.inner.run_pipeline(pipe, inputs)
        threads = int(np.prod(pipe.steps[0].program.workgroup_size))
        return [o + np.float32(1) for o in outs] if self.bad_threads in (threads, "all") else outs


def test_round_trip_stores_the_winner_and_calls_use_it(gpu, store_path, monkeypatch):
    (r,) = tuning.tune(gpu, ["matmul"], SHAPE, reps=1, target_s=0.0)
    assert r.label == CLASS and r.stored and r.method in ("gpu-timestamp", "wall-clock")
    assert [c.setting for c in r.candidates] == [DEFAULT, OTHER]
    assert all(c.ok and c.time_s > 0 for c in r.candidates)
    assert r.winner in (DEFAULT, OTHER)
    doc = json.loads(store_path.read_text())
    (slot,) = doc["adapters"].values()
    assert slot["adapter"]["device"] == gpu.adapter_info["device"]
    stored = S.TuningStore(store_path).get(S.adapter_key(S.adapter_of(gpu)), "matmul", CLASS, tuning.TUNER_VERSION)
    assert Setting.from_json(stored["setting"]) == r.winner
    # a call that names no tile param runs the stored winner; naming one opts out
    seen = _spy_params(monkeypatch)
    a, b = _mats()
    np.testing.assert_allclose(vyre.ops.matmul(gpu, a, b), a.astype(np.float64) @ b, atol=1e-5)
    assert {k: seen[-1][1][k] for k in dict(r.winner.params)} == dict(r.winner.params)
    vyre.ops.matmul(gpu, a, b, tile_m=64)
    assert seen[-1][1]["tile_m"] == 64 and "tile_n" not in seen[-1][1]


def test_a_candidate_failing_validation_is_never_stored(gpu, store_path, caplog):
    caplog.set_level(logging.WARNING, logger="vyre.tuning")
    bad = _Corrupting(gpu, 64)  # 32x32 tiles with 4x4 blocks: 64 invocations
    (r,) = tuning.tune(bad, ["matmul"], SHAPE, reps=1, target_s=0.0)
    ok = {c.setting: c for c in r.candidates}
    assert ok[DEFAULT].ok and not ok[OTHER].ok and ok[OTHER].error.startswith("output 0: max abs err")
    assert ok[OTHER].time_s is None and r.winner == DEFAULT
    assert "fails validation" in caplog.text
    (r,) = tuning.tune(_Corrupting(gpu, "all"), ["matmul"], {"matmul": [(M, K, 28)]}, reps=1, target_s=0.0)
    assert r.winner is None and not r.stored and "no candidate passed" in r.note
    entries = S.TuningStore(store_path).entries(S.adapter_key(S.adapter_of(gpu)))
    assert [e["setting"] for e in entries.values()] == [DEFAULT.to_json()]


def test_stored_winner_is_used_without_measuring(store_path, monkeypatch, reference):
    ident = S.adapter_of(reference)
    S.TuningStore(store_path).put(ident, "matmul", CLASS, tuning.TUNER_VERSION, _entry(OTHER))
    monkeypatch.setattr(tuning, "_measure_all", lambda *a, **k: pytest.fail("measured at call time"))
    seen = _spy_params(monkeypatch)
    before = tuning.counters()
    a, b = _mats(1)
    np.testing.assert_allclose(vyre.ops.matmul(reference, a, b), a.astype(np.float64) @ b, atol=1e-5)
    assert seen[-1][1] == {"m": M, "k": K, "n": N, **dict(OTHER.params)}
    assert tuning.counters()["hits"] == before["hits"] + 1


def test_another_process_uses_the_stored_winner(store_path, reference):
    S.TuningStore(store_path).put(S.adapter_of(reference), "matmul", CLASS, tuning.TUNER_VERSION, _entry(OTHER))
    code = textwrap.dedent(f"""
        import numpy as np, vyre, vyre.ops
        from vyre.ops import api, tuning
        tuning._measure_all = None  # calling it would fail: nothing may be measured
        seen = []
        real = api.pipeline_for
        api.pipeline_for = lambda op, p, v="generic": seen.append(dict(p)) or real(op, p, v)
        a, b = np.ones(({M}, {K}), np.float32), np.ones(({K}, {N}), np.float32)
        assert (vyre.ops.matmul(vyre.ReferenceBackend(), a, b) == {K}).all()
        assert seen[-1]["tile_n"] == 32 and tuning.counters() == {{"hits": 1, "misses": 0}}, (seen, tuning.counters())
    """)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       env={**child_env(), S.ENV_VAR: str(store_path)}, timeout=120)
    assert r.returncode == 0, r.stderr


def test_entries_are_isolated_by_adapter(gpu, store_path, monkeypatch, reference):
    store = S.TuningStore(store_path)
    store.put(S.adapter_of(gpu), "matmul", CLASS, tuning.TUNER_VERSION, _entry(OTHER))
    foreign = {**S.adapter_of(gpu), "driver": "another driver"}
    assert S.adapter_key(foreign) != S.adapter_key(S.adapter_of(gpu)) != S.adapter_key(S.adapter_of(reference))
    store.put(foreign, "matmul.batched", "x", tuning.TUNER_VERSION, _entry(OTHER))
    seen = _spy_params(monkeypatch)
    a, b = _mats(2)
    vyre.ops.matmul(reference, a, b)  # the reference interpreter is another adapter: no entry
    assert "tile_m" not in seen[-1][1]
    vyre.ops.matmul(gpu, a, b)
    assert seen[-1][1]["tile_n"] == 32
    section = gpu.stats()["tuning"]
    assert section["store"] == str(store_path) and section["entries"] == 1
    assert section["classes"] == [f"matmul {CLASS}: 32x32x16/4x4"] and section["hits"] >= 1


@pytest.mark.parametrize("content", [b"{not json", b'{"format": "vyre-tuning", "version": 99, "adapters": {}}',
                                     b'["a list"]', b'{"format": "vyre-tuning", "version": 1, "adapters": '
                                     b'{"k": {"adapter": {}, "entries": {"e": {"setting": {"variant": 3}}}}}}'])
def test_corrupt_or_foreign_files_are_ignored(store_path, reference, caplog, content):
    caplog.set_level(logging.WARNING, logger="vyre.tuning")
    store_path.write_bytes(content)
    a, b = _mats(3)
    params = {"m": M, "k": K, "n": N}
    assert tuning.apply("matmul", reference, params, {}, lambda: api.facts(reference)) == (params, None)
    np.testing.assert_allclose(vyre.ops.matmul(reference, a, b), a.astype(np.float64) @ b, atol=1e-5)
    assert "ignoring the tuning file" in caplog.text
    S.current().put(S.adapter_of(reference), "matmul", CLASS, tuning.TUNER_VERSION, _entry(OTHER))  # replaced
    assert json.loads(store_path.read_text())["version"] == S.VERSION


def test_invalid_stored_settings_fall_back_to_the_default(store_path, reference, caplog):
    caplog.set_level(logging.WARNING, logger="vyre.tuning")
    bad = Setting.of("generic", {"tile_m": 3, "tile_n": 32, "tile_k": 16, "reg_m": 4, "reg_n": 4})
    S.current().put(S.adapter_of(reference), "matmul", CLASS, tuning.TUNER_VERSION, _entry(bad))
    params = {"m": M, "k": K, "n": N}
    assert tuning.apply("matmul", reference, params, {}, lambda: api.facts(reference)) == (params, None)
    assert "ignoring the stored matmul setting" in caplog.text


def test_no_store_changes_nothing(monkeypatch, reference, tmp_path):
    params = {"m": M, "k": K, "n": N}
    for value in ("off", str(tmp_path / "missing.json")):
        monkeypatch.setenv(S.ENV_VAR, value)
        got, variant = tuning.apply("matmul", reference, params, {}, lambda: api.facts(reference))
        assert got is params and variant is None
    with pytest.raises(vyre.errors.DispatchError, match="not tunable"):
        tuning.tune(reference, ["sort.topk"])


def test_variant_tuning_stores_a_kernel_variant(gpu, store_path, monkeypatch):
    n = 1 << 16  # the cpu-x4 variant applies from 2^16 elements
    x = np.arange(n, dtype=np.float32)
    untuned = api.variant_for("zip.add", gpu, x, x)  # cpu-x4 on lavapipe, generic on a GPU: measured first
    (r,) = tuning.tune(gpu, ["zip.add"], {"zip.add": [(n,)]}, reps=1, target_s=0.0)
    assert [c.setting.variant for c in r.candidates] == [untuned, ({"generic", "cpu-x4"} - {untuned}).pop()]
    assert r.stored
    np.testing.assert_array_equal(vyre.ops.zip_add(gpu, x, x), x + x)
    assert api.last_variant("zip.add") == r.winner.variant
    # a class where only one kernel applies is reported, not stored
    (r,) = tuning.tune(gpu, ["zip.add"], {"zip.add": [(1000,)]}, reps=1, target_s=0.0)
    assert not r.stored and "nothing to choose" in r.note


def test_concurrent_calls_share_the_stored_winner(store_path, reference):
    from concurrent.futures import ThreadPoolExecutor

    S.TuningStore(store_path).put(S.adapter_of(reference), "matmul", CLASS, tuning.TUNER_VERSION, _entry(OTHER))
    params = {"m": M, "k": K, "n": N}

    def one(_):
        return tuning.apply("matmul", reference, params, {}, lambda: api.facts(reference))

    with ThreadPoolExecutor(4) as pool:
        got = list(pool.map(one, range(16)))
    assert all(g == ({**params, **dict(OTHER.params)}, "generic") for g in got)
