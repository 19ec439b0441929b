"""Kernels that ask for a buffer with ``zeroed=False`` (fused results, reductions and their partials) write
every element: run them on backends whose unzeroed allocations hold garbage (0xFF bytes, a NaN pattern) and
compare with numpy. A kernel that skipped an element would return that garbage."""

from __future__ import annotations

import numpy as np
import pytest

import vyre
import vyre.array as xp


def _poisoning(backend):
    real = backend.allocate_resident

    def allocate_resident(nbytes, label=None, *, zeroed=True):
        h = real(nbytes, label, zeroed=zeroed)
        if not zeroed:
            backend.upload_resident(h, np.full(nbytes, 0xFF, np.uint8))
        return h

    backend.allocate_resident = allocate_resident
    return backend


@pytest.fixture(params=["reference", "wgpu"])
def dirty(request):
    if request.param == "reference":
        yield _poisoning(vyre.ReferenceBackend())
        return
    request.getfixturevalue("gpu")  # skips (or fails under CI) without an adapter
    be = vyre.WgpuBackend.new()
    yield _poisoning(be)
    be.shutdown()


@pytest.mark.parametrize("shape,axis", [((1000,), None), ((37, 129), 1), ((37, 129), 0), ((5, 300, 7), (0, 2)),
                                         ((3000, 5), 0), ((70000,), None)])
def test_reductions_and_fused_results_write_every_element(dirty, shape, axis):
    rng = np.random.default_rng(1)
    a = rng.standard_normal(shape).astype(np.float32)
    b = rng.standard_normal(shape).astype(np.float32)
    with xp.use(dirty):
        x, y = xp.asarray(a), xp.asarray(b)
        z = (x * 2 + y) * (y - 0.5)
        want_z = (a * 2 + b) * (b - 0.5)
        np.testing.assert_allclose(np.asarray(z), want_z, rtol=1e-6, atol=1e-6)
        for name, tol in (("sum", 1e-4), ("max", 0), ("min", 0), ("mean", 1e-5), ("prod", 2e-3)):
            src = z if name != "prod" else (x * 0 + 1.0001)
            host = want_z if name != "prod" else np.full(shape, 1.0001, np.float32)
            got = np.asarray(getattr(xp, name)(src, axis=axis))
            want = getattr(np, name)(host.astype(np.float64), axis=axis)
            np.testing.assert_allclose(got, want, rtol=tol, atol=tol * max(1.0, float(np.abs(want).max())),
                                       err_msg=f"{name} over {axis}")
        i = xp.asarray(rng.integers(-50, 50, shape).astype(np.int32))
        np.testing.assert_array_equal(np.asarray(xp.sum(i * 3 - 1, axis=axis)),
                                      np.sum(np.asarray(i).astype(np.int64) * 3 - 1, axis=axis).astype(np.int32))


@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_matmul_writes_every_element(dirty, dtype):
    rng = np.random.default_rng(2)
    a = rng.integers(-4, 5, (3, 37, 29)).astype(dtype)
    b = rng.integers(-4, 5, (29, 41)).astype(dtype)
    with xp.use(dirty):
        got = np.asarray(xp.asarray(a) @ xp.asarray(b))
    np.testing.assert_array_equal(got, a @ b)  # small integers: exact in f32 too
