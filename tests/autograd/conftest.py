"""Fixtures of the autograd tests: ``be`` is the reference backend, then the GPU (wgpu: lavapipe here;
skipped locally without an adapter, failed under CI=true by tests/conftest.py's ``gpu``)."""

from __future__ import annotations

import pytest

import vyre


@pytest.fixture(scope="session")
def ref_backend():
    return vyre.ReferenceBackend()


@pytest.fixture(params=["reference", "wgpu"])
def be(request, ref_backend):
    return ref_backend if request.param == "reference" else request.getfixturevalue("gpu")
