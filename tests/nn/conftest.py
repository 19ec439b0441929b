"""Fixtures: ``xb`` runs a test on the reference backend and on the GPU (wgpu, lavapipe here; skipped
locally without an adapter, failed under CI), as tests/array/conftest.py does."""

from __future__ import annotations

import pytest

import vyre


@pytest.fixture(scope="session")
def ref_backend():
    return vyre.ReferenceBackend()


@pytest.fixture(params=["reference", "wgpu"])
def xb(request, ref_backend):
    """The backend of one run: arrays are created inside ``vyre.use(backend)``."""
    if request.param == "reference":
        backend = ref_backend
    else:
        backend = request.getfixturevalue("gpu")
    with vyre.use(backend):
        yield backend
