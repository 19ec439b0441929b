"""docs/runtime.md: its example runs as written, and every runtime method it documents exists."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import vyre
from vyre.errors import NoAdapterError

from gpu_policy import skip_or_fail

DOC = Path(__file__).resolve().parents[3] / "docs" / "runtime.md"


def example_code() -> str:
    section = DOC.read_text(encoding="utf-8").split("## Example", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```python\n(.*?)```", section, flags=re.S)
    assert len(blocks) == 1, "the Example section must hold exactly one python code block"
    return blocks[0]


def test_example_runs(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("VYRE_CACHE_DIR", str(tmp_path))
    try:
        vyre.WgpuBackend.new(disk_cache=False)
    except NoAdapterError as exc:
        skip_or_fail(f"no GPU adapter: {exc}")
    exec(compile(example_code(), f"{DOC}:example", "exec"), {"__name__": "__runtime_doc__"})
    out = capsys.readouterr().out
    assert "_vyre" in out and "True" in out  # the bindings and the enabled disk cache were printed
    assert list(tmp_path.glob("wgsl-*/*.json")), "the example's program went to the disk cache"


@pytest.mark.parametrize("name", [
    "compile", "compile_persistent", "dispatch_compiled", "prepare", "invalidate_pipeline_cache", "dispatch_batch",
    "shared", "new", "shutdown", "flush", "device_lost", "force_device_lost", "try_recover", "stats",
    "supports_f16", "supports_subgroup_ops", "supports_timestamps", "max_workgroup_size", "max_storage_buffer_bytes",
    "max_compute_workgroups_per_dimension", "device_profile", "dispatch_wgsl", "probe_op",
])
def test_documented_api_exists(name):
    assert f"`{name}(" in DOC.read_text(encoding="utf-8") or f".{name}(" in DOC.read_text(encoding="utf-8")
    assert callable(getattr(vyre.WgpuBackend, name))
