"""A 256-bin histogram of 1M bytes with atomics, checked against numpy.

Every invocation adds 1 to its value's bin with ``atomic_add``; the grid follows the input (``grid_from``),
not the 256-element output. A workgroup first counts into its own ``var<workgroup>`` array (fast shared
memory), then adds its 256 counts to the global histogram: far fewer global atomics.
"""

import sys

import numpy as np

from vyre import ProgramBuilder, WgpuBackend

BINS, WG = 256, 256
b = ProgramBuilder("histogram", workgroup_size=WG)
data = b.buffer("data", "u32")
hist = b.buffer("hist", "u32", access="read_write", count=BINS)
b.set_grid_from(data)  # one invocation per input value
local = b.workgroup_array("local_hist", "u32", BINS)
i, t = b.global_index(), b.local_index()
local[t] = 0  # WG == BINS: each invocation clears one bin
b.barrier()
with b.if_(i < data.len()):
    local.atomic_add(data[i] % BINS, 1, discard=True)
b.barrier()
hist.atomic_add(t, local.atomic_load(t), discard=True)
program = b.build()

values = np.random.default_rng(2).integers(0, BINS, 1_000_000, dtype=np.uint32)
gpu = WgpuBackend.acquire()
(counts,) = gpu.dispatch(program, [values, np.zeros(BINS, np.uint32)])

expected = np.bincount(values, minlength=BINS).astype(np.uint32)
ok = np.array_equal(counts, expected)
print(f"histogram of {values.size} values: {counts.sum()} counted, bins[:4] = {counts[:4]}: "
      f"{'OK' if ok else 'MISMATCH'}")
sys.exit(0 if ok else 1)
