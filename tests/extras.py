"""Optional test dependencies that ``make test`` installs (the test extras): skipped locally when missing,
a failure under CI=true, where a skip would hide the test."""

from __future__ import annotations

import importlib
import os
from types import ModuleType

import pytest


def require(module: str, reason: str) -> ModuleType:
    """``module`` imported; without it: pytest.skip locally, pytest.fail under CI=true."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        if os.environ.get("CI") == "true":  # as tests/conftest.py reads it
            pytest.fail(f"CI=true but {module} is missing ({reason}): {exc}", pytrace=False)
        pytest.skip(f"{module} is not installed ({reason})", allow_module_level=True)
        raise  # unreachable: skip raises


def require_adapter(ok: bool, what: str) -> None:
    """The adapter has ``what`` (a feature a GPU test needs); without it: pytest.skip locally, pytest.fail
    under CI=true (CI's lavapipe has every feature the tests ask for)."""
    if ok:
        return
    if os.environ.get("CI") == "true":
        pytest.fail(f"CI=true but the adapter lacks {what}", pytrace=False)
    pytest.skip(f"the adapter lacks {what}")
