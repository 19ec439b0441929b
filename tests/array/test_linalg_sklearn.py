"""scikit-learn on vyre arrays through the device decompositions (array API dispatch on): PCA with both
solvers ('full': svd, 'covariance_eigh': eigh) and LinearDiscriminantAnalysis (svd) give the numpy path's
results, float32 (transformed values within 1e-4 of numpy's, up to each component's sign) and float64
where the device has it (1e-10). Run in a subprocess: SciPy reads SCIPY_ARRAY_API when first imported."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from extras import require

SCRIPT = r"""
import json, numpy as np
from sklearn import config_context
from sklearn.decomposition import PCA
from sklearn.discriminant_analysis import LinearDiscriminantAnalysis
import vyre.array as xp
rng = np.random.default_rng(0)
X = rng.standard_normal((120, 9)) @ rng.standard_normal((9, 9))
cls = (X[:, 0] + X[:, 1] > 0).astype(np.int64)
out = {}
for dt in ("float32", "float64"):
    if not hasattr(xp, dt) or dt not in xp.__array_namespace_info__().dtypes():
        continue
    Xd = X.astype(dt)
    Xv = xp.asarray(Xd)
    for solver in ("full", "covariance_eigh"):
        with config_context(array_api_dispatch=True):
            t = np.asarray(PCA(n_components=4, svd_solver=solver).fit(Xv).transform(Xv))
        t0 = PCA(n_components=4, svd_solver=solver).fit(Xd).transform(Xd)
        scale = np.abs(t0).max()
        out[f"pca {solver} {dt}"] = [float(np.abs(np.abs(t) - np.abs(t0)).max() / scale), str(t.dtype)]
    with config_context(array_api_dispatch=True):
        pr = np.asarray(LinearDiscriminantAnalysis(solver="svd").fit(Xv, xp.asarray(cls)).predict(Xv))
    pr0 = LinearDiscriminantAnalysis(solver="svd").fit(Xd, cls).predict(Xd)
    out[f"lda {dt}"] = [float((pr != pr0).mean()), str(pr.dtype)]
print(json.dumps(out))
"""


def test_pca_and_lda_on_vyre_arrays(gpu):
    require("sklearn", "scikit-learn's PCA/LDA on vyre arrays")
    env = {**os.environ, "SCIPY_ARRAY_API": "1", "XDG_RUNTIME_DIR": os.environ.get("XDG_RUNTIME_DIR", "/tmp")}
    r = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    got = json.loads(r.stdout.strip().splitlines()[-1])
    assert "pca full float32" in got and "lda float32" in got
    for name, (err, dtype) in got.items():
        assert dtype == name.split()[-1] or name.startswith("lda"), (name, dtype)
        tol = 0.0 if name.startswith("lda") else 1e-4 if name.endswith("float32") else 1e-10
        assert err <= tol, (name, err)
