"""Focused tests of the fft ops beyond the witnesses: round trips, linearity, Parseval, rfft/irfft
against numpy for even and odd n, batch shapes through the complex64 convenience layer, twiddle
accuracy, typed errors before any GPU work, and the benchmark family's quick run."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import vyre
import vyre.ops
from vyre.backends.config import DispatchConfig
from vyre.errors import DispatchError
from vyre.ops.fft import _io, _plan, _regs, _twiddle
from vyre.ops.registry import get

ROOT = Path(__file__).resolve().parents[2]
BACKENDS = ["reference", "gpu"]
LENGTHS = [1, 2, 3, 8, 12, 64, 100, 256, 1000, 2048, 4096]


@pytest.fixture(params=BACKENDS)
def backend(request):
    return request.getfixturevalue(request.param)


def signal(shape, seed=0) -> np.ndarray:
    r = np.random.default_rng(seed)
    return (r.uniform(-1, 1, shape) + 1j * r.uniform(-1, 1, shape)).astype(np.complex64)


def atol(n: int, inverse: bool = False) -> float:
    return get("fft.ifft" if inverse else "fft.fft").tolerance_of({"n": n, "batch": 1}).atol


@pytest.mark.parametrize("n", LENGTHS)
def test_fft_against_numpy_and_round_trip(backend, n):
    x = signal((2, n), seed=n)
    got = vyre.ops.fft_fft(backend, x)
    assert got.dtype == np.complex64 and got.shape == x.shape
    want = np.fft.fft(x.astype(np.complex128))
    assert np.max(np.abs(got - want)) <= atol(n)
    back = vyre.ops.fft_ifft(backend, got)
    assert back.dtype == np.complex64 and back.shape == x.shape
    # ifft's bound for inputs of magnitude sqrt(n) (the spectrum's scale): atol(n) / n * sqrt(n) * 2
    assert np.max(np.abs(back - x)) <= 2 * atol(n, True) * np.sqrt(n) + atol(n, True)


@pytest.mark.parametrize("n", [16, 17, 1024])
def test_linearity(backend, n):
    x, y = signal((n,), 1), signal((n,), 2)
    a, b = np.complex64(0.5 - 0.25j), np.complex64(-0.75 + 0.5j)
    lhs = vyre.ops.fft_fft(backend, (a * x + b * y).astype(np.complex64))
    rhs = a * vyre.ops.fft_fft(backend, x) + b * vyre.ops.fft_fft(backend, y)
    assert np.max(np.abs(lhs - rhs)) <= 3 * atol(n)


@pytest.mark.parametrize("n", [7, 256, 4096])
def test_parseval(backend, n):
    x = signal((3, n), 3)
    spec = vyre.ops.fft_fft(backend, x).astype(np.complex128)
    energy = np.sum(np.abs(x.astype(np.complex128)) ** 2, axis=-1)
    assert np.allclose(np.sum(np.abs(spec) ** 2, axis=-1) / n, energy, rtol=1e-5)


def test_special_inputs_are_exact_on_powers_of_two(backend):
    n = 1024
    impulse = np.zeros(n, np.complex64)
    impulse[0] = 1
    assert np.array_equal(vyre.ops.fft_fft(backend, impulse), np.ones(n, np.complex64))
    const = np.full(n, 1 + 1j, np.complex64)
    want = np.zeros(n, np.complex64)
    want[0] = n * (1 + 1j)
    assert np.max(np.abs(vyre.ops.fft_fft(backend, const) - want)) <= atol(n)
    alt = np.where(np.arange(n) % 2 == 0, 1, -1).astype(np.complex64)
    want = np.zeros(n, np.complex64)
    want[n // 2] = n
    assert np.max(np.abs(vyre.ops.fft_fft(backend, alt) - want)) <= atol(n)


@pytest.mark.parametrize("n", [1, 2, 5, 8, 9, 100, 101, 1024, 1025])
def test_rfft_irfft_against_numpy(backend, n):
    x = np.random.default_rng(n).uniform(-1, 1, (2, n)).astype(np.float32)
    spec = vyre.ops.fft_rfft(backend, x)
    assert spec.dtype == np.complex64 and spec.shape == (2, n // 2 + 1)
    assert np.max(np.abs(spec - np.fft.rfft(x.astype(np.float64)))) <= atol(n)
    back = vyre.ops.fft_irfft(backend, spec, n=n)
    assert back.dtype == np.float32 and back.shape == x.shape
    np.testing.assert_allclose(back, np.fft.irfft(spec.astype(np.complex128), n), rtol=0, atol=atol(n, True) * 4)
    np.testing.assert_allclose(back, x, rtol=0, atol=4 * atol(n, True) * np.sqrt(n) + 1e-6)


def test_irfft_ignores_imaginary_dc_and_nyquist(backend):
    bins = signal((5,), 4)
    got = vyre.ops.fft_irfft(backend, bins)  # n = 8: bin 4 is Nyquist
    np.testing.assert_allclose(got, np.fft.irfft(bins.astype(np.complex128)), atol=1e-6)


def test_batch_shapes(backend):
    x = signal((2, 3, 24), 5)
    got = vyre.ops.fft_fft(backend, x)
    assert got.shape == (2, 3, 24)
    assert np.max(np.abs(got - np.fft.fft(x.astype(np.complex128)))) <= atol(24)
    assert vyre.ops.fft_rfft(backend, x.real.copy()).shape == (2, 3, 13)
    img = signal((2, 6, 10), 6)
    got2 = vyre.ops.fft_fft2(backend, img)
    assert got2.shape == img.shape and got2.dtype == np.complex64
    assert np.max(np.abs(got2 - np.fft.fft2(img.astype(np.complex128)))) <= 1e-4
    back = vyre.ops.fft_ifft2(backend, got2)
    assert np.max(np.abs(back - img)) <= 1e-5


def test_large_power_of_two_uses_four_step(gpu):
    n = 1 << 16
    # the root table (256 x 256), the four-step twiddle table, then two passes
    assert len(get("fft.fft").build(n=n, batch=1).steps) == 4
    x = signal((n,), 7)
    got = vyre.ops.fft_fft(gpu, x)
    assert np.max(np.abs(got - np.fft.fft(x.astype(np.complex128)))) <= atol(n)


def roots_table(m: int) -> np.ndarray:
    """rt[L + e] = exp(-2 pi i e / L) for powers of two L <= m, e < L; rt[0] = 1 (float64)."""
    i = np.arange(2 * m)
    big = np.where(i == 0, 1, 2 ** np.floor(np.log2(np.maximum(i, 1))))
    return np.where(i == 0, 1.0, np.exp(-2j * np.pi * (i - big) / big))


def post_table(post: int) -> np.ndarray:
    """w_post^lo for lo < S, then w_post^(hi S) (the two-level four-step twiddle, float64)."""
    lo, total = _regs.post_split(post)
    e = np.where(np.arange(total) < lo, np.arange(total), (np.arange(total) - lo) * lo)
    return np.exp(-2j * np.pi * e / post)


@pytest.mark.parametrize("m", [2, 16, 2048])
def test_root_tables_accuracy(reference, m):
    (t,) = reference.dispatch(_regs.roots_program(m), [], DispatchConfig(grid=(-(-2 * m // 256), 1, 1)))
    assert np.max(np.abs(t[:, 0] + 1j * t[:, 1] - roots_table(m))) <= 2.0 ** -23  # measured 9.0e-8 (m = 2048)
    total = _regs.post_split(1 << 20)[1]
    (p,) = reference.dispatch(_regs.post_program(1 << 20), [], DispatchConfig(grid=(-(-total // 256), 1, 1)))
    assert np.max(np.abs(p[:, 0] + 1j * p[:, 1] - post_table(1 << 20))) <= 2.0 ** -23


@pytest.mark.parametrize("m,post", [(8, 1 << 6), (2048, 1 << 22)])
def test_root_tables_accuracy_gpu(gpu, m, post):
    (t,) = gpu.dispatch(_regs.roots_program(m), [], DispatchConfig(grid=(-(-2 * m // 256), 1, 1)))
    assert np.max(np.abs(t[:, 0] + 1j * t[:, 1] - roots_table(m))) <= 2.0 ** -23
    total = _regs.post_split(post)[1]
    (p,) = gpu.dispatch(_regs.post_program(post), [], DispatchConfig(grid=(-(-total // 256), 1, 1)))
    assert np.max(np.abs(p[:, 0] + 1j * p[:, 1] - post_table(post))) <= 2.0 ** -23


def test_chirp_accuracy(reference):
    n = 1000
    (c,) = reference.dispatch(_twiddle.chirp_program(n, False), [], DispatchConfig(grid=(4, 1, 1)))
    k = np.arange(n)
    want = np.exp(-1j * np.pi * (k * k % (2 * n)) / n)
    assert np.max(np.abs(c[:, 0] + 1j * c[:, 1] - want)) <= 2.0 ** -23


class NoGpu:
    """A backend that fails on any use: errors must come before any GPU work."""

    def __getattr__(self, name):
        raise AssertionError(f"the backend was used ({name}) before the input was checked")


@pytest.mark.parametrize("op,x,kwargs,words", [
    ("fft_fft", np.zeros(8, np.float32), {}, "complex64"),
    ("fft_fft", np.zeros(8, np.complex128), {}, "complex64"),
    ("fft_fft", np.zeros(8, np.int32), {}, "complex64"),
    ("fft_fft", np.zeros((3, 0), np.complex64), {}, "empty"),
    ("fft_fft", np.array(1 + 1j, np.complex64), {}, "0-d"),
    ("fft_ifft", np.zeros(4, np.float64), {}, "complex64"),
    ("fft_rfft", np.zeros(8, np.complex64), {}, "f32"),
    ("fft_rfft", np.array(1.0, np.float32), {}, "0-d"),
    ("fft_irfft", np.zeros(5, np.complex64), {"n": 5}, "bins"),
    ("fft_irfft", np.zeros(1, np.complex64), {}, "bins"),
    ("fft_fft2", np.zeros(8, np.complex64), {}, "1-d"),
    ("fft_fft2", np.zeros((2, 2), np.float32), {}, "complex64"),
])
def test_bad_input_is_a_typed_error_before_gpu_work(op, x, kwargs, words):
    with pytest.raises(DispatchError) as err:
        getattr(vyre.ops, op)(NoGpu(), x, **kwargs)
    assert words in str(err.value) and err.value.fix


def test_length_limits():
    with pytest.raises(DispatchError, match="not supported") as err:
        _io.check_length("fft.fft", _plan.max_length() + 1)
    assert err.value.fix
    _io.check_length("fft.fft", _plan.MAX_POW2)  # a power of two goes further
    with pytest.raises(ValueError):
        get("fft.fft").build(n=0, batch=1)


def test_bench_family_quick_run(gpu, tmp_path):
    out = tmp_path / "fft.json"
    env = {**os.environ, "XDG_RUNTIME_DIR": os.environ.get("XDG_RUNTIME_DIR", "/tmp")}
    r = subprocess.run([sys.executable, "-m", "benches", "--quick", "--only", "fft", "--json", str(out),
                        "--no-baselines", "torch,cupy"], capture_output=True, text=True, cwd=ROOT, env=env,
                       timeout=300)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    doc = json.loads(out.read_text())
    rows = [rec for rec in doc["results"] if rec["metric"] == "fft.gflops"]
    assert len(rows) == 2 and doc["failures"] == []
    assert all(rec["check"]["ok"] and rec["value"] > 0 for rec in rows)
