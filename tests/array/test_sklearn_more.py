"""scikit-learn, SciPy and array-api-extra on vyre arrays (array API dispatch on), against the numpy path:
StandardScaler (a zero-variance column: its masked assignment), MinMaxScaler, accuracy_score, r2_score
(a constant output: masked assignments with arrays), Ridge(solver="svd") (x[mask] = array in its svd
filter), SciPy's logsumexp and array-api-extra's cov. Float32 within rtol 1e-4 of numpy's float32 result,
float64 (where the device has it) within 1e-10; every result a vyre array of the numpy path's dtype
(accuracy_score: a Python float).
Modelled on tests/array/test_linalg_sklearn.py: one subprocess, since SciPy reads SCIPY_ARRAY_API when first
imported."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from extras import require

SCRIPT = r"""
import json, numpy as np
import array_api_extra as xpx
import scipy.special
from sklearn import config_context
from sklearn.linear_model import Ridge
from sklearn.metrics import accuracy_score, r2_score
from sklearn.preprocessing import MinMaxScaler, StandardScaler
import vyre.array as xp
rng = np.random.default_rng(0)
X = rng.standard_normal((60, 5)) * [1, 10, 0.1, 3, 1] + [0, 5, -2, 0, 1]
X[:, 4] = 2.0  # a constant column: StandardScaler's zero-variance mask
y = X[:, :4] @ [1.0, -2.0, 0.5, 3.0] + 0.1 * rng.standard_normal(60)
Y2 = np.stack([y, np.ones(60)], axis=1)  # a constant second output: r2_score's masked branches
lab, pred = (X[:, 0] > 0).astype(np.int32), (X[:, 1] > 5).astype(np.int32)
out = {}

def rel(a, b):
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    return float(np.max(np.abs(a - b)) / max(float(np.max(np.abs(b))), 1e-30))

for dt in ("float32", "float64"):
    if dt not in xp.__array_namespace_info__().dtypes():
        continue
    Xd, yd, Yd = X.astype(dt), y.astype(dt), Y2.astype(dt)
    Xv, yv, Yv = xp.asarray(Xd), xp.asarray(yd), xp.asarray(Yd)
    cases = {
        "StandardScaler": (lambda: StandardScaler().fit_transform(Xv), lambda: StandardScaler().fit_transform(Xd)),
        "MinMaxScaler": (lambda: MinMaxScaler().fit_transform(Xv), lambda: MinMaxScaler().fit_transform(Xd)),
        "accuracy_score": (lambda: accuracy_score(xp.asarray(lab.astype(dt)), xp.asarray(pred.astype(dt))),
                           lambda: accuracy_score(lab.astype(dt), pred.astype(dt))),
        "r2_score": (lambda: r2_score(Yv, Yv * 0.9 + 0.05, multioutput="raw_values"),
                     lambda: r2_score(Yd, Yd * 0.9 + 0.05, multioutput="raw_values")),
        "Ridge": (lambda: Ridge(alpha=0.5, solver="svd").fit(Xv, yv).predict(Xv),
                  lambda: Ridge(alpha=0.5, solver="svd").fit(Xd, yd).predict(Xd)),
        "logsumexp": (lambda: scipy.special.logsumexp(Xv, axis=0), lambda: scipy.special.logsumexp(Xd, axis=0)),
        "cov": (lambda: xpx.cov(Xv.mT), lambda: np.cov(Xd.T)),
    }
    for name, (on_vyre, on_numpy) in cases.items():
        with config_context(array_api_dispatch=True):
            got = on_vyre()
        want = on_numpy()
        out[f"{name} {dt}"] = [rel(got, want), type(got).__module__.split(".")[0],
                               str(getattr(got, "dtype", "")), str(getattr(want, "dtype", ""))]
with config_context(array_api_dispatch=True):
    acc = accuracy_score(xp.asarray(lab), xp.asarray(pred))
out["accuracy_score int32"] = [rel(acc, accuracy_score(lab, pred)), type(acc).__module__, "", ""]
print(json.dumps(out))
"""


def test_sklearn_scipy_and_extra_on_vyre_arrays(gpu):
    for module in ("sklearn", "scipy", "array_api_extra"):
        require(module, "scikit-learn / SciPy / array-api-extra on vyre arrays")
    env = {**os.environ, "SCIPY_ARRAY_API": "1", "XDG_RUNTIME_DIR": os.environ.get("XDG_RUNTIME_DIR", "/tmp")}
    r = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    got = json.loads(r.stdout.strip().splitlines()[-1])
    for name in ("StandardScaler", "MinMaxScaler", "accuracy_score", "r2_score", "Ridge", "logsumexp", "cov"):
        assert f"{name} float32" in got, sorted(got)
    for name, (err, module, dtype, numpy_dtype) in got.items():
        # accuracy_score is the mean of a bool array in the namespace's default float dtype: float32 on vyre
        # (its __array_namespace_info__ says so), float64 on numpy, whatever the labels' dtype
        tol = 1e-7 if name.startswith("accuracy_score") else {"float32": 1e-4, "float64": 1e-10}[name.split()[-1]]
        assert err <= tol, (name, err)
        if name.startswith("accuracy_score"):
            assert module == "builtins", (name, module)  # a Python float, as on numpy
        else:
            # computed on the device, in the numpy path's dtype (cov promotes float32 to float64 on both)
            assert module == "vyre" and dtype == numpy_dtype, (name, module, dtype, numpy_dtype)
