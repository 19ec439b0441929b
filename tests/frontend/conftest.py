"""Every kernel test runs on the reference interpreter and on the GPU (WgpuBackend; skipped locally,
failed under CI=true, when there is no adapter: see tests/conftest.py's ``gpu`` fixture)."""

from __future__ import annotations

import pytest


@pytest.fixture(params=["reference", "gpu"])
def backend(request):
    return request.getfixturevalue(request.param)
