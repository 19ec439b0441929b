"""The decomposition kernels are dtype-generic: built for the IR's f64 (where the IR has it and, on the GPU,
the adapter has ``shader-f64``), each program reaches float64 accuracy against numpy on both backends
(solution, factor and eigenvalue errors <= 1e-12). Through vyre.array once float64 arrays exist there."""

from __future__ import annotations

import numpy as np
import pytest
from extras import require_adapter

import vyre
from vyre.array._kernels.linalg_jacobi import eigh_program, svd_program, sweeps_for
from vyre.array._kernels.linalg_lu import cholesky_program, eliminate_program
from vyre.array._kernels.linalg_qr import qr_program

N = 6
TOL = 1e-12


@pytest.fixture(params=["reference", "wgpu"])
def f64_backend(request, ref_backend):
    if request.param == "reference":
        return ref_backend
    gpu = request.getfixturevalue("gpu")
    require_adapter(gpu.capabilities().f64, "shader-f64")
    return gpu


def _run(be, prog, arrays, steps):
    rng = np.array([0, steps, 0, 0], np.uint32)
    return be.dispatch(prog, [*arrays, rng], vyre.DispatchConfig(grid=(1, 1, 1)))


def test_f64_kernels(f64_backend):
    be = f64_backend
    rng = np.random.default_rng(3)
    a = rng.standard_normal((N, N))
    b = rng.standard_normal((N, 2))
    w, info = _run(be, eliminate_program("f64", 1, N, 2), [np.concatenate([a, b], 1).ravel(), np.zeros(2)], 2 * N)
    assert np.abs(w.reshape(N, N + 2)[:, N:] - np.linalg.solve(a, b)).max() <= TOL * np.linalg.cond(a)
    spd = a @ a.T + np.eye(N)
    (low, info) = _run(be, cholesky_program("f64", 1, N), [spd.ravel(), np.zeros(1)], N)
    assert info[0] == 0
    assert np.abs(np.tril(low.reshape(N, N)) - np.linalg.cholesky(spd)).max() <= TOL
    m = rng.standard_normal((N + 2, N))
    wq, tau, q = _run(be, qr_program("f64", 1, N + 2, N, N), [m.ravel(), np.zeros(N), np.zeros((N + 2) * N)], 2 * N)
    q, r = q.reshape(N + 2, N), np.triu(wq.reshape(N + 2, N)[:N])
    assert np.abs(q @ r - m).max() <= TOL and np.abs(q.T @ q - np.eye(N)).max() <= TOL
    s = a + a.T
    rounds = N - 1 + (N & 1)
    (ae, v) = _run(be, eigh_program("f64", 1, N, True), [s.ravel(), np.zeros(N * N)], sweeps_for(N, "f64") * rounds)
    ev, v = np.diag(ae.reshape(N, N)), v.reshape(N, N)
    assert np.abs(np.sort(ev) - np.linalg.eigvalsh(s)).max() <= TOL * np.abs(ev).max()
    assert np.abs(s @ v - v * ev).max() <= TOL * np.abs(ev).max()
    (ws, vs) = _run(be, svd_program("f64", 1, N + 2, N, True), [m.ravel(), np.zeros(N * N)],
                    sweeps_for(N, "f64") * rounds)
    ws, vs = ws.reshape(N + 2, N), vs.reshape(N, N)
    sv = np.sqrt((ws ** 2).sum(0))
    assert np.abs(np.sort(sv)[::-1] - np.linalg.svd(m, compute_uv=False)).max() <= TOL * sv.max()
    assert np.abs(ws - m @ vs).max() <= TOL * sv.max()


def test_f64_arrays(f64_backend):
    """Through vyre.array's float64 arrays: every decomposition in float64, residuals <= 1e-12."""
    import vyre.array as xp

    L = xp.linalg
    rng = np.random.default_rng(4)
    a = rng.standard_normal((2, N, N))
    t = rng.standard_normal((2, N + 1, N - 1))
    sym = a + np.swapaxes(a, -1, -2)
    spd = a @ np.swapaxes(a, -1, -2) + np.eye(N)
    with vyre.use(f64_backend):
        x, tall = xp.asarray(a), xp.asarray(t)
        assert x.dtype == xp.float64
        got = {
            "solve": L.solve(x, xp.asarray(sym)), "inv": L.inv(x), "det": L.det(x),
            "logdet": L.slogdet(x).logabsdet, "chol": L.cholesky(xp.asarray(spd)), "eigh": L.eigh(xp.asarray(sym)),
            "qr": L.qr(tall, mode="complete"), "svd": L.svd(tall, full_matrices=False), "pinv": L.pinv(tall),
        }
        got = {k: tuple(np.asarray(u) for u in v) if isinstance(v, tuple) else np.asarray(v) for k, v in got.items()}
    assert all(v.dtype == np.float64 for g in got.values() for v in (g if isinstance(g, tuple) else (g,)))
    np.testing.assert_allclose(got["solve"], np.linalg.solve(a, sym), rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(got["inv"], np.linalg.inv(a), rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(got["det"], np.linalg.det(a), rtol=1e-11)
    np.testing.assert_allclose(got["logdet"], np.linalg.slogdet(a).logabsdet, atol=1e-11)
    np.testing.assert_allclose(got["chol"], np.linalg.cholesky(spd), atol=1e-12)
    w, v = got["eigh"]
    np.testing.assert_allclose(w, np.linalg.eigvalsh(sym), atol=1e-12)
    assert np.abs(sym @ v - v * w[..., None, :]).max() <= 1e-12
    q, r = got["qr"]
    assert np.abs(q @ r - t).max() <= TOL and np.abs(np.swapaxes(q, -1, -2) @ q - np.eye(N + 1)).max() <= TOL
    u, sv, vh = got["svd"]
    np.testing.assert_allclose(sv, np.linalg.svd(t, compute_uv=False), atol=1e-12)
    assert np.abs((u * sv[..., None, :]) @ vh - t).max() <= TOL
    np.testing.assert_allclose(got["pinv"], np.linalg.pinv(t), atol=1e-11)
