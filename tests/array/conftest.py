"""Fixtures of the array tests."""

from __future__ import annotations

import dataclasses

import pytest


class _NoF64:
    """A backend without shader-f64 (a device lacking it; int64 kept): ``inner`` with that one capability off."""

    def __init__(self, inner):
        self._inner = inner

    def capabilities(self):
        return dataclasses.replace(self._inner.capabilities(), f64=False)

    def __getattr__(self, name):
        return getattr(self._inner, name)


@pytest.fixture
def no_f64(ref_backend, monkeypatch):
    """The reference backend as a device without shader-f64 (accepted as a device by vyre.array)."""
    from vyre.array import _device

    monkeypatch.setattr(_device, "check_backend", lambda d, what="device": d)
    return _NoF64(ref_backend)
