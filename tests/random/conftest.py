"""Fixtures of the random tests: ``rb`` runs a test on the reference backend and on the GPU (wgpu,
lavapipe here; through the session's ``gpu`` fixture: skipped locally without an adapter, failed under
CI=true)."""

from __future__ import annotations

import pytest

import vyre


@pytest.fixture(scope="session")
def ref_backend():
    return vyre.ReferenceBackend()


@pytest.fixture(params=["reference", "wgpu"])
def rb(request, ref_backend):
    """The backend of one run: arrays are created inside ``vyre.use(backend)``."""
    backend = ref_backend if request.param == "reference" else request.getfixturevalue("gpu")
    with vyre.use(backend):
        yield backend
