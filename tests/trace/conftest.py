"""Fixtures of the vyre.compile tests: ``xb`` runs a test on the reference backend and on the GPU (lavapipe
here; failed under CI without it)."""

from __future__ import annotations

import pytest

import vyre


@pytest.fixture(scope="session")
def ref_backend():
    return vyre.ReferenceBackend()


@pytest.fixture(params=["reference", "wgpu"])
def xb(request, ref_backend):
    backend = ref_backend if request.param == "reference" else request.getfixturevalue("gpu")
    with vyre.use(backend):
        yield backend
