"""saxpy: y = a * x + y on the GPU, checked against numpy.

Run from anywhere with the project's venv: ``.venv/bin/python examples/saxpy.py``.
"""

import sys

import numpy as np

from vyre import ProgramBuilder, WgpuBackend

b = ProgramBuilder("saxpy", workgroup_size=64)
a = b.buffer("a", "f32", access="uniform", count=1)  # a scalar parameter
x = b.buffer("x", "f32")                               # input
y = b.buffer("y", "f32", access="read_write")          # input and output
i = b.global_index()
with b.if_(i < y.len()):                               # the last workgroup may overhang the data
    y[i] = a[0] * x[i] + y[i]
program = b.build()

n = 1_000_000
rng = np.random.default_rng(0)
xs = rng.standard_normal(n, dtype=np.float32)
ys = rng.standard_normal(n, dtype=np.float32)

gpu = WgpuBackend.acquire()  # the best adapter, or the one VYRE_ADAPTER names
(out,) = gpu.dispatch(program, [np.float32(2.5), xs, ys])  # one grid invocation per element of y

expected = np.float32(2.5) * xs + ys
ok = np.allclose(out, expected, rtol=1e-6, atol=1e-6)
print(f"saxpy on {gpu.adapter_info['device']}: {n} elements, y[:3] = {out[:3]}: {'OK' if ok else 'MISMATCH'}")
sys.exit(0 if ok else 1)
