"""A valid ``XDG_RUNTIME_DIR`` for the Vulkan loader, set before wgpu first touches an adapter.

Without one (a script run outside ``make``, ``ssh`` as root, a container), the Wayland client code
that the Vulkan loader and Mesa load prints ``error: XDG_RUNTIME_DIR is invalid or not set in the
environment.`` once per probe (four times when enumerating adapters on lavapipe). Nothing is wrong
with the GPU work, so :func:`ensure_runtime_dir` quietly gives the process a private one: when the
variable is unset, empty, not an absolute path or not an accessible directory, it is set to
``<tempdir>/vyre-runtime-<uid>`` (created with mode 0700, refused when another user owns it or it
is a symbolic link, then a fresh ``mkdtemp`` directory instead). A valid value is left alone.

It changes only this process's environment (and its children's) and runs once, from
:func:`vyre.backends.wgpu.adapter.enumerate_adapters`, which every adapter request goes through.
"""

from __future__ import annotations

import os
import stat
import tempfile

ENV_VAR = "XDG_RUNTIME_DIR"


def _valid(value: str | None) -> bool:
    if not value or not os.path.isabs(value):
        return False
    return os.path.isdir(value) and os.access(value, os.R_OK | os.W_OK | os.X_OK)


def _private_dir() -> str:
    uid = os.getuid() if hasattr(os, "getuid") else 0
    path = os.path.join(tempfile.gettempdir(), f"vyre-runtime-{uid}")
    try:
        os.mkdir(path, 0o700)
    except FileExistsError:
        pass
    except OSError:
        return tempfile.mkdtemp(prefix="vyre-runtime-")
    try:
        st = os.lstat(path)
    except OSError:
        return tempfile.mkdtemp(prefix="vyre-runtime-")
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != uid or stat.S_IMODE(st.st_mode) & 0o077:
        return tempfile.mkdtemp(prefix="vyre-runtime-")  # someone else's, a link, or too open
    return path


def ensure_runtime_dir() -> str | None:
    """Set ``XDG_RUNTIME_DIR`` to a private directory when it is missing or invalid; returns the
    directory set, or None when the environment already had a valid one (or on Windows/macOS,
    whose loaders do not read it)."""
    if os.name != "posix" or os.uname().sysname == "Darwin":
        return None
    if _valid(os.environ.get(ENV_VAR)):
        return None
    path = _private_dir()
    os.environ[ENV_VAR] = path
    return path


__all__ = ["ensure_runtime_dir", "ENV_VAR"]
