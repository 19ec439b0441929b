"""The per-user cache directory vyre's on-disk stores share, the file lock they write under, and the
adapter identity fields that key per-adapter data: a backend-neutral layer below both the wgpu
backend's lowering cache (:mod:`vyre.backends.wgpu.disk_cache`, :mod:`vyre.backends.wgpu.keys`) and
the op layer's tuning store (:mod:`vyre.ops._tuning_store`), so neither reaches into the other.

Where: ``VYRE_CACHE_DIR`` if set (``off``: no cache directory, every store is off), else
``platformdirs.user_cache_dir("vyre")``. Importing this module imports neither platformdirs nor
filelock (they load on first use).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import filelock

#: The environment variable naming the cache root (``off`` disables every on-disk store under it).
ENV_VAR = "VYRE_CACHE_DIR"

#: Seconds a writer waits for another process's lock before giving up (filelock.Timeout).
LOCK_TIMEOUT_S = 10.0

#: ``adapter_info`` fields that identify an adapter: the lowering cache refuses a recovered device whose
#: fields changed, the tuning store keys its per-adapter entries by them.
IDENTITY_FIELDS: tuple[str, ...] = ("vendor", "vendor_id", "device", "device_id", "backend_type", "adapter_type",
                                    "driver")


def env_path(var: str, default: Callable[[], Path | None]) -> Path | None:
    """The path environment variable ``var`` names (None when it is ``off``), else ``default()``."""
    env = os.environ.get(var, "").strip()
    if env.lower() == "off":
        return None
    return Path(env).expanduser() if env else default()


def default_root() -> Path | None:
    """The cache root from ``VYRE_CACHE_DIR`` (None when it is ``off``) or the user cache dir."""
    return env_path(ENV_VAR, _user_cache_dir)


def _user_cache_dir() -> Path:
    import platformdirs  # why: import time (on first use: importing vyre stays light)

    return Path(platformdirs.user_cache_dir("vyre"))


def file_lock(path: Path | str, timeout: float = LOCK_TIMEOUT_S) -> filelock.FileLock:
    """An inter-process lock on the lock file ``path`` (``with file_lock(p): ...``; waits up to ``timeout`` s)."""
    import filelock  # on first use: importing vyre stays light

    return filelock.FileLock(str(path), timeout=timeout)


def identity_fields(info: Mapping[str, Any]) -> dict[str, Any]:
    """The :data:`IDENTITY_FIELDS` of an ``adapter_info`` mapping (missing ones as None), in that order."""
    return {k: info.get(k) for k in IDENTITY_FIELDS}


__all__ = ["ENV_VAR", "LOCK_TIMEOUT_S", "IDENTITY_FIELDS", "default_root", "env_path", "file_lock", "identity_fields"]
