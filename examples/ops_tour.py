"""A tour of the op library (vyre.ops): ready-made GPU ops on numpy arrays, each checked against numpy.

``vyre.ops.<name>(backend, *arrays, **params)`` builds the op's programs (cached), runs them and returns
numpy arrays; ``vyre.ReferenceBackend()`` runs the same ops on the CPU. docs/ops.md lists every op.
"""

import sys

import numpy as np

import vyre
import vyre.ops

gpu = vyre.WgpuBackend.acquire()
rng = np.random.default_rng(3)
x = rng.standard_normal(10_000, dtype=np.float32)
m = rng.standard_normal((64, 32), dtype=np.float32)
k = rng.standard_normal((32, 16), dtype=np.float32)
keys = rng.integers(0, 2**32, 5_000, dtype=np.uint32)

checks = {
    # elementwise, with numpy broadcasting
    "zip.add": (vyre.ops.zip_add(gpu, m, np.float32(1)), m + 1),
    "map.exp": (vyre.ops.map_exp(gpu, x), np.exp(x)),
    # reductions and scans
    "reduce.sum": (vyre.ops.reduce_sum(gpu, x), x.sum(dtype=np.float64)),
    "reduce.max": (vyre.ops.reduce_max(gpu, x), x.max()),
    "scan.inclusive": (vyre.ops.scan_inclusive(gpu, keys % 100), np.cumsum(keys % 100, dtype=np.uint32)),
    # sorting and linear algebra
    "sort.radix": (vyre.ops.sort_radix(gpu, keys), np.sort(keys)),
    "matmul": (vyre.ops.matmul(gpu, m, k), m @ k),
    "softmax": (vyre.ops.softmax(gpu, m), np.exp(m - m.max(-1, keepdims=True))
                / np.exp(m - m.max(-1, keepdims=True)).sum(-1, keepdims=True)),
    # hashing bytes
    "hash.crc32": (vyre.ops.hash_crc32(gpu, np.frombuffer(b"123456789", np.uint8)), np.uint32(0xCBF43926)),
}

failed = []
for name, (got, want) in checks.items():
    got = np.asarray(got)
    ok = got.shape == np.shape(want) and np.allclose(got, want, rtol=1e-3, atol=1e-3)
    failed += [] if ok else [name]
    print(f"{name:15} shape {str(got.shape):10} {'OK' if ok else 'MISMATCH'}")
print("all ops match numpy" if not failed else f"MISMATCH: {', '.join(failed)}")
sys.exit(1 if failed else 0)
