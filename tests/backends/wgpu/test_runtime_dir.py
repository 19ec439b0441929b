"""XDG_RUNTIME_DIR: vyre gives the process a private one when it is missing or invalid, so the Vulkan
loader does not print ``XDG_RUNTIME_DIR is invalid or not set`` (issue 12)."""

from __future__ import annotations

import os
import stat
import subprocess
import sys

import pytest

from vyre.backends.wgpu import runtime_dir

from procs import child_env

pytestmark = pytest.mark.skipif(os.name != "posix" or sys.platform == "darwin", reason="Linux/BSD only")


@pytest.mark.parametrize("value", [None, "", "relative/dir", "/no/such/vyre-dir"])
def test_missing_or_invalid_is_replaced_by_a_private_dir(monkeypatch, value):
    if value is None:
        monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)
    else:
        monkeypatch.setenv("XDG_RUNTIME_DIR", value)
    path = runtime_dir.ensure_runtime_dir()
    assert path is not None and os.environ["XDG_RUNTIME_DIR"] == path
    st = os.lstat(path)
    assert stat.S_ISDIR(st.st_mode) and st.st_uid == os.getuid() and stat.S_IMODE(st.st_mode) == 0o700


def test_a_valid_one_is_kept(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
    assert runtime_dir.ensure_runtime_dir() is None
    assert os.environ["XDG_RUNTIME_DIR"] == str(tmp_path)


def test_enumerating_adapters_without_it_prints_nothing(gpu):
    # the gpu fixture decides skip/fail without an adapter; the enumeration runs in a fresh process
    env = child_env()
    env.pop("XDG_RUNTIME_DIR", None)
    code = ("import os; from vyre.backends.wgpu.adapter import enumerate_adapters; "
            "assert enumerate_adapters(); print(os.environ['XDG_RUNTIME_DIR'])")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "XDG_RUNTIME_DIR" not in r.stderr, r.stderr
    assert r.stdout.strip().startswith("/")
