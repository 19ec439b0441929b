"""``vyre tune`` through the installed console script (and ``python -m vyre.tune``), with the store in a
temporary directory."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from vyre.ops import _tuning_store as S
from vyre.ops._tunables import Setting

IN_CI = os.environ.get("CI") == "true"
VYRE = str(Path(sys.executable).parent / "vyre") if (Path(sys.executable).parent / "vyre").exists() \
    else shutil.which("vyre")
pytestmark = pytest.mark.skipif(VYRE is None and not IN_CI, reason="the vyre console script is not installed")

ADAPTER = {"backend": "reference"}
TILES = {"tile_m": 32, "tile_n": 32, "tile_k": 16, "reg_m": 4, "reg_n": 4}


@pytest.fixture
def tune(tmp_path):
    """``tune(*args, exe=None)`` runs ``vyre tune args`` with the store at tmp_path/tuning.json."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.update(VYRE_CACHE_DIR=str(tmp_path / "cache"), **{S.ENV_VAR: str(tmp_path / "tuning.json")})

    def run(*args: str, exe: list[str] | None = None) -> subprocess.CompletedProcess:
        cmd = [*(exe or [VYRE, "tune"]), *args]
        return subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)

    run.path = tmp_path / "tuning.json"  # type: ignore[attr-defined]
    return run


def test_show_and_clear(tune):
    r = tune("--show")
    assert r.returncode == 0 and "no entries" in r.stdout, r.stderr
    S.TuningStore(tune.path).put(ADAPTER, "matmul", "m5-n5-k4-v4", 1, {
        "op": "matmul", "class": "m5-n5-k4-v4", "tuner": 1, "setting": Setting.of("generic", TILES).to_json(),
        "time_s": 2.5e-4, "method": "gpu-timestamp", "shape": [20, 12, 24]})
    r = tune("--show")
    assert r.returncode == 0, r.stderr
    assert "adapter" in r.stdout and "matmul m5-n5-k4-v4: 32x32x16/4x4 (0.25 ms, gpu-timestamp" in r.stdout
    doc = json.loads(tune("--show", "--json").stdout)
    assert doc["store"] == str(tune.path) and len(doc["adapters"]) == 1
    r = tune("--clear")
    assert r.returncode == 0 and "removed 1 tuned entries" in r.stdout
    assert "no entries" in tune("--show", exe=[sys.executable, "-m", "vyre.tune"]).stdout


def test_bad_arguments_are_usage_errors(tune):
    r = tune("--ops", "sort.topk")
    assert r.returncode == 2 and "not tunable: sort.topk" in r.stderr and "Traceback" not in r.stderr
    r = tune("--shape", "matmul=12xx")
    assert r.returncode == 2 and "OP=DIMS" in r.stderr


def test_tune_prints_candidates_and_stores_the_winner(tune, gpu):  # gpu: skips without an adapter
    r = tune("--shape", "matmul=20x12x24")
    assert r.returncode == 0, r.stderr
    assert "32x64x16/4x4" in r.stdout and "32x32x16/4x4" in r.stdout and "winner:" in r.stdout
    assert "1 of 1 classes stored" in r.stdout
    (slot,) = json.loads(tune.path.read_text())["adapters"].values()
    assert list(slot["entries"]) == ["matmul|m5-n5-k4-v4|t1"]
