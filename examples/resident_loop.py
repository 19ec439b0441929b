"""Heat diffusion on a rod, 1000 steps with the data resident on the GPU, checked against numpy.

``dispatch`` uploads every input and reads every output back; a loop of many small steps would spend
its time on transfers. Resident buffers stay on the device: upload once, run the steps (a sequence is
one command encoder and one submit), read back once. Two handles ping-pong: each step reads one and
writes the other.
"""

import sys

import numpy as np

from vyre import ProgramBuilder, WgpuBackend

b = ProgramBuilder("heat_step", workgroup_size=64)
src = b.buffer("src", "f32")
dst = b.buffer("dst", "f32", access="write")
i = b.global_index()
n = src.len()
with b.if_(i < n):
    with b.if_((i == 0) | (i == n - 1)):
        dst[i] = src[i]  # the ends hold their temperature
    with b.else_():
        dst[i] = src[i] + 0.25 * (src[i - 1] - 2.0 * src[i] + src[i + 1])
step = b.build()

N, STEPS = 4096, 1000
rod = np.zeros(N, np.float32)
rod[0], rod[-1] = 100.0, 50.0

gpu = WgpuBackend.acquire()
a, c = gpu.allocate_resident(rod.nbytes), gpu.allocate_resident(rod.nbytes)
gpu.upload_resident(a, rod)  # c needs no upload: every step writes every cell of its output
# STEPS // 2 rounds of a -> c -> a: one submit, one readback of a at the end
(result,) = gpu.dispatch_resident_sequence([(step, [a, c]), (step, [c, a])] * (STEPS // 2), read=[a])
result = result.view(np.float32)
gpu.free_resident(a)
gpu.free_resident(c)

expected = rod.copy()
for _ in range(STEPS):
    nxt = expected.copy()
    nxt[1:-1] = expected[1:-1] + np.float32(0.25) * (expected[:-2] - np.float32(2) * expected[1:-1] + expected[2:])
    expected = nxt
ok = np.allclose(result, expected, rtol=1e-4, atol=1e-4)
print(f"{STEPS} resident steps over {N} cells: rod[:4] = {result[:4]}: {'OK' if ok else 'MISMATCH'}")
sys.exit(0 if ok else 1)
