"""When a GPU test may skip: never under CI=true, where the GPU path (lavapipe) must run."""

from __future__ import annotations

import os

import pytest

IN_CI = os.environ.get("CI") == "true"


def skip_or_fail(reason: str) -> None:
    """Skip the test locally; fail it under CI=true (CI must exercise every GPU test)."""
    if IN_CI:
        pytest.fail(f"CI=true: this GPU test cannot be skipped: {reason}", pytrace=False)
    pytest.skip(reason)
