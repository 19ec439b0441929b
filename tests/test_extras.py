"""A missing test extra skips locally and fails under CI=true (tests/extras.py)."""

from __future__ import annotations

import pytest
from extras import require


def test_a_missing_extra_skips_locally_and_fails_in_ci(monkeypatch):
    assert require("json", "stdlib").dumps([1]) == "[1]"
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception):
        require("vyre_no_such_module", "a test")
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="CI=true but vyre_no_such_module is missing"):
        require("vyre_no_such_module", "a test")
