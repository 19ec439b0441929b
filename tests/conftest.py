"""Shared test configuration.

Fixtures:
    gpu                       the session's ``vyre.WgpuBackend``, acquired once. Without an
                              adapter the test is skipped, except under ``CI=true``, where it
                              fails: CI must exercise the GPU path. Under CI the adapter must
                              also be lavapipe (Vulkan, device name containing "llvmpipe";
                              set ``VYRE_EXPECT_ADAPTER`` to expect another device name).
    reference                 a ``vyre.ReferenceBackend()``.
    assert_parity             ``assert_parity(program, inputs, *, rtol=None, atol=None, config=None)``:
                              runs both backends, compares every output (see tests/parity.py),
                              returns the GPU outputs.

Hypothesis profiles: "ci" (deterministic, 50 examples, no deadline; loaded when CI=true)
and "dev" (the default otherwise).
"""

from __future__ import annotations

import functools
import os
import tempfile

# wgpu/Vulkan loaders warn without a runtime dir; set it before anything loads them.
os.environ.setdefault("XDG_RUNTIME_DIR", "/tmp")
# Keep the tests' disk-cache entries out of the user's cache dir (tests that need their own set it).
os.environ.setdefault("VYRE_CACHE_DIR", tempfile.mkdtemp(prefix="vyre-test-cache-"))

import pytest  # noqa: E402
from hypothesis import HealthCheck, settings  # noqa: E402

import vyre  # noqa: E402

from parity import assert_parity as _assert_parity  # noqa: E402

# Every WGSL lowered in the session is compiled by Tint at its end (tests/wgsl_record.py).
pytest_plugins = ["wgsl_record"]

IN_CI = os.environ.get("CI") == "true"

settings.register_profile(
    "ci", deadline=None, derandomize=True, max_examples=50, print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile("dev", deadline=None, max_examples=25, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("ci" if IN_CI else os.environ.get("VYRE_HYPOTHESIS_PROFILE", "dev"))


def pytest_report_header(config):
    expect = os.environ.get("VYRE_EXPECT_ADAPTER", "llvmpipe")
    return f"vyre: CI={IN_CI} (GPU tests {'fail' if IN_CI else 'skip'} without an adapter; CI expects {expect!r})"


@pytest.fixture(scope="session")
def gpu():
    from vyre.errors import NoAdapterError

    try:
        backend = vyre.WgpuBackend.acquire()
    except NoAdapterError as exc:
        if IN_CI:
            pytest.fail(f"CI=true but no GPU adapter was found: {exc}", pytrace=False)
        pytest.skip(f"no GPU adapter: {exc}")
    if IN_CI:
        info = backend.adapter_info
        expect = os.environ.get("VYRE_EXPECT_ADAPTER", "llvmpipe")
        backend_type = str(info.get("backend_type", ""))
        device = str(info.get("device", ""))
        if backend_type.lower() != "vulkan" or expect.lower() not in device.lower():
            pytest.fail(f"CI expects a Vulkan adapter whose device name contains {expect!r} "
                        f"(set VYRE_EXPECT_ADAPTER to change), got {info}", pytrace=False)
    return backend


@pytest.fixture(scope="session")
def reference():
    return vyre.ReferenceBackend()


@pytest.fixture(scope="session")
def ref_backend(reference):
    """The session's reference backend (the name the array-level tests use)."""
    return reference


@pytest.fixture(params=["reference", "wgpu"])
def xb(request, ref_backend):
    """Array-level tests run once per backend, arrays created inside ``vyre.use(backend)``: the reference
    interpreter, then the GPU (lavapipe here; skipped locally without an adapter, failed under CI)."""
    backend = ref_backend if request.param == "reference" else request.getfixturevalue("gpu")
    with vyre.use(backend):
        yield backend


@pytest.fixture(scope="session")
def assert_parity(gpu, reference):
    """``assert_parity(program, inputs, *, rtol=None, atol=None, config=None) -> gpu outputs``."""
    return functools.partial(_assert_parity, gpu, reference)
