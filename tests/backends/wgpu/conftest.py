"""Fixtures of the GPU backend's tests.

Fixtures:
    backend     a ``vyre.WgpuBackend`` on a device of its own (the session's adapter, opened again), shut down
                after the test: for tests that lose, destroy or break their device. Without a second device
                the test is skipped, except under ``CI=true`` (tests/gpu_policy.py). A test module that
                defines its own ``backend`` fixture (test_wgpu_backend.py) uses that one instead.
"""

from __future__ import annotations

import pytest

import vyre
from vyre.errors import NoAdapterError

from gpu_policy import skip_or_fail


@pytest.fixture
def backend(gpu):  # gpu: the session's skip/fail policy for a missing adapter
    try:
        b = vyre.WgpuBackend.acquire_adapter(gpu.adapter_index)
    except NoAdapterError as exc:
        skip_or_fail(f"no second device: {exc}")
    yield b
    b.shutdown()
