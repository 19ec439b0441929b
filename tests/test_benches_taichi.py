"""benches/_taichi.py without a GPU: the Taichi baseline is reported unavailable, with the reason, when
taichi cannot be imported, when ti.init falls back from Vulkan to another arch or fails, and when it is
turned off; every row then carries that reason instead of a time. (The kernels themselves run in the
quick benchmark run of tests/test_benches.py wherever taichi is installed.)"""

from __future__ import annotations

import sys
import types
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benches import _taichi  # noqa: E402
from benches._baselines import Baselines  # noqa: E402


@pytest.fixture
def fresh(monkeypatch):
    """A process state in which Taichi was never initialised, and the default (Vulkan) arch."""
    monkeypatch.setattr(_taichi, "_STATE", {})
    monkeypatch.delenv(_taichi.ARCH_ENV, raising=False)


def _fake_taichi(lands_on: str, fail: str | None = None) -> types.ModuleType:
    """A stand-in taichi module whose ti.init lands on ``lands_on`` (or raises ``fail``)."""
    ti = types.ModuleType("taichi")
    ti.__version__ = (1, 7, 4)
    ti.vulkan, ti.cpu, ti.TRACE, ti.WARN = "vulkan", "cpu", "trace", "warn"
    cfg = types.SimpleNamespace(arch=None)
    calls: list[str] = []

    def init(arch, **_):
        calls.append(arch)
        if fail:
            raise RuntimeError(fail)
        cfg.arch = lands_on

    ti.init = init
    ti.set_logging_level = lambda level: None
    ti.lang = types.SimpleNamespace(impl=types.SimpleNamespace(current_cfg=lambda: cfg))
    ti.calls = calls
    return ti


def test_not_importable_is_a_reason(fresh, monkeypatch):
    monkeypatch.setitem(sys.modules, "taichi", None)  # import taichi raises (ModuleNotFoundError)
    mod, why = _taichi._try_taichi()
    assert mod is None and why.startswith("taichi not importable (ModuleNotFoundError: ") and "taichi" in why[30:]
    base = Baselines(0, use={"taichi"})
    assert base.taichi is None and base.taichi_note == why
    assert base.describe()["taichi"] == {"available": False, "note": why}


def test_fallback_from_vulkan_is_unavailable(fresh, monkeypatch):
    ti = _fake_taichi(lands_on="cpu")
    monkeypatch.setitem(sys.modules, "taichi", ti)
    mod, note = _taichi._try_taichi()
    assert mod is None and "fell back to cpu" in note and "1.7.4" in note
    assert _taichi._try_taichi() == (None, note) and ti.calls == ["vulkan"]  # ti.init once per process


def test_init_failure_is_unavailable(fresh, monkeypatch):
    monkeypatch.setitem(sys.modules, "taichi", _fake_taichi(lands_on="vulkan", fail="no Vulkan ICD"))
    mod, note = _taichi._try_taichi()
    assert mod is None and note.endswith("failed: RuntimeError: no Vulkan ICD")


def test_vulkan_init_is_available_and_the_arch_switch(fresh, monkeypatch):
    ti = _fake_taichi(lands_on="vulkan")
    monkeypatch.setitem(sys.modules, "taichi", ti)
    assert _taichi._try_taichi() == (ti, "")
    assert _taichi.describe(ti)["arch"] == "vulkan" and "Taichi vulkan" in _taichi.method()
    monkeypatch.setattr(_taichi, "_STATE", {})
    monkeypatch.setenv(_taichi.ARCH_ENV, "cpu")  # the local-only switch
    ti_cpu = _fake_taichi(lands_on="cpu")
    monkeypatch.setitem(sys.modules, "taichi", ti_cpu)
    assert _taichi._try_taichi() == (ti_cpu, "") and ti_cpu.calls == ["cpu"]
    assert "Taichi cpu" in _taichi.method()


def test_disabled_never_imports(fresh, monkeypatch):
    monkeypatch.setitem(sys.modules, "taichi", _fake_taichi(lands_on="vulkan", fail="must not be called"))
    base = Baselines(0, use=set())
    assert base.taichi is None and base.taichi_note == "disabled" and "result" not in _taichi._STATE


def test_rows_carry_the_reason():
    why = "taichi not importable (ModuleNotFoundError: No module named 'taichi')"
    ctx = types.SimpleNamespace(base=types.SimpleNamespace(taichi=None, taichi_note=why), reps=1, target_s=0.01)
    a = np.ones(8, np.float32)
    m = np.ones((4, 4), np.float32)
    outs = [_taichi.elementwise_add(ctx, a, a), *_taichi.reduce_sum(ctx, a, None).values(),
            _taichi.sequence(ctx, a, a, 10, 1), _taichi.round_trip(ctx, a[:1], a, a, 1),
            *_taichi.matmul(ctx, m, m, naive_max_n=4096, reps=1, check=lambda c: {"ok": True}).values()]
    assert len(outs) == 7 and all(o.timing is None and o.note == why for o in outs)
    big = _taichi.matmul(ctx, m, m, naive_max_n=2, reps=1, check=lambda c: {"ok": True})
    assert "skipped above 2" in big["taichi"].note and big["taichi_tiled"].note == why


def test_a_failing_kernel_is_a_reason_not_an_error():
    ctx = types.SimpleNamespace(base=types.SimpleNamespace(taichi=object(), taichi_note=""), reps=1, target_s=0.01)

    def body(ti):
        raise RuntimeError("[spirv] shared array\n not supported")

    out = _taichi._guarded("tiled matmul", body, ctx)
    assert out.timing is None
    assert out.note == "taichi tiled matmul failed: RuntimeError: [spirv] shared array not supported"
