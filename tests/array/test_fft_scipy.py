"""SciPy's FFT on vyre arrays (array API dispatch: SCIPY_ARRAY_API=1, so scipy.fft calls the namespace's
``fft`` extension): rfft, irfft, fft, ifftn, fftshift and fftfreq give vyre arrays with numpy's results
(float32/complex64: rtol 1e-4 of the largest magnitude; rfft/irfft of float64 too, where the device has
it: complex128/float64, 1e-12). Run in a subprocess: SciPy reads SCIPY_ARRAY_API
when first imported."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from extras import require

SCRIPT = r"""
import json, numpy as np
import scipy.fft as sf
import vyre.array as xp
rng = np.random.default_rng(0)
x = rng.standard_normal((3, 20)).astype(np.float32)
z = (rng.standard_normal((4, 16)) + 1j * rng.standard_normal((4, 16))).astype(np.complex64)
out = {}

def rel(got, want):
    assert isinstance(got, xp.Array), type(got)
    g = np.asarray(got)
    return [float(np.abs(g - want).max() / np.abs(want).max()), str(g.dtype)]

X = sf.rfft(xp.asarray(x))
out["rfft"] = rel(X, np.fft.rfft(x.astype(np.float64)))
out["irfft"] = rel(sf.irfft(X, n=20), x)
out["rfft axis0 n8"] = rel(sf.rfft(xp.asarray(x), n=8, axis=0), np.fft.rfft(x.astype(np.float64), n=8, axis=0))
out["irfft ortho"] = rel(sf.irfft(xp.asarray(np.fft.rfft(x).astype(np.complex64)), norm="ortho"),
                         np.fft.irfft(np.fft.rfft(x), norm="ortho"))
out["fft"] = rel(sf.fft(xp.asarray(z)), np.fft.fft(z.astype(np.complex128)))
out["ifftn"] = rel(sf.ifftn(xp.asarray(z)), np.fft.ifftn(z.astype(np.complex128)))
out["fftshift"] = rel(sf.fftshift(xp.asarray(x)), np.fft.fftshift(x))
if "float64" in xp.__array_namespace_info__().dtypes():  # float64 in, complex128 out (vyre/array/_fft64.py)
    x64 = x.astype(np.float64)
    X64 = sf.rfft(xp.asarray(x64))
    out["rfft f64"] = rel(X64, np.fft.rfft(x64))
    out["irfft f64"] = rel(sf.irfft(X64, n=20), x64)
print(json.dumps(out))
"""


def test_scipy_fft_on_vyre_arrays(gpu):
    require("scipy", "scipy.fft on vyre arrays")
    env = {**os.environ, "SCIPY_ARRAY_API": "1", "XDG_RUNTIME_DIR": os.environ.get("XDG_RUNTIME_DIR", "/tmp")}
    r = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    got = json.loads(r.stdout.strip().splitlines()[-1])
    assert set(got) >= {"rfft", "irfft", "rfft axis0 n8", "irfft ortho", "fft", "ifftn", "fftshift"}
    for name, (err, dtype) in got.items():
        wide, real_out = name.endswith("f64"), name.startswith(("irfft", "fftshift"))
        want = {(False, True): "float32", (True, True): "float64", (False, False): "complex64",
                (True, False): "complex128"}[wide, real_out]
        assert dtype == want, (name, dtype)
        assert err <= (1e-12 if wide else 1e-4), (name, err)
