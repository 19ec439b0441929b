"""Kernel twins of the parity catalogue's workgroup-memory, atomics and type cases (see twins.py)."""

from __future__ import annotations

import numpy as np

import vyre
from vyre import In, InOut, Out, bool_, f16, f32, i32, tid, u32
from vyre.ops.registry import EXACT

from .twins import Pairs, case_run, case_tol, twin, zeros

# ---- workgroup memory and barriers ------------------------------------------------------------
TREE_WG = 128


@vyre.kernel(workgroup_size=TREE_WG)
def tree_reduce(x: In[u32], out: Out[u32]):
    sh = vyre.shared(u32, TREE_WG)
    lid, g = vyre.local_id(), tid()
    sh[lid] = x[g] if g < len(x) else 0
    vyre.barrier()
    stride = u32(TREE_WG // 2)
    while stride > 0:
        if lid < stride:
            sh[lid] = sh[lid] + sh[lid + stride]
        vyre.barrier()
        stride >>= 1
    if lid == 0:
        out[vyre.group_id()] = sh[0]


@twin("workgroup_tree_reduction")
def _tree(backend) -> Pairs:
    want, (x,) = case_run(backend, "workgroup_tree_reduction")
    (out,) = tree_reduce[len(x)](x, zeros(8, np.uint32), backend=backend)  # 1000 threads: 8 workgroups
    return [("out", out, want["out"], EXACT)]


SCAN_WG = 64


@vyre.kernel(workgroup_size=SCAN_WG)
def wg_scan(x: In[i32], out: Out[i32]):
    sh = vyre.shared(i32, SCAN_WG)
    lid, g = vyre.local_id(), tid()
    sh[lid] = x[g] if g < len(x) else 0
    vyre.barrier()
    for k in range(6):
        off = u32(1) << u32(k)
        t = 0
        if lid >= off:
            t = sh[lid - off]
        vyre.barrier()
        sh[lid] += t
        vyre.barrier()
    if g < len(x):  # a barrier kernel gets no automatic guard
        out[g] = sh[lid]


@twin("workgroup_scan_hillis_steele")
def _scan(backend) -> Pairs:
    want, (x,) = case_run(backend, "workgroup_scan_hillis_steele")
    (out,) = wg_scan[len(x)](x, zeros(len(x), np.int32), backend=backend)
    return [("out", out, want["out"], EXACT)]


# ---- atomics -----------------------------------------------------------------------------------
@vyre.kernel
def histogram(x: In[u32], hist: InOut[u32]):
    vyre.atomic_add(hist, x[tid()] % u32(len(hist)), 1)


@twin("histogram_atomic_add")
def _hist(backend) -> Pairs:
    want, (x, hist) = case_run(backend, "histogram_atomic_add")
    (got,) = histogram[len(x)](x, hist.copy(), backend=backend)
    return [("hist", got, want["hist"], EXACT)]


@vyre.kernel
def atomics(x: In[i32], acc: InOut[i32], cas: InOut[i32], cas2: InOut[i32], old: Out[i32], xchg: Out[i32]):
    i = tid()
    v = x[i]
    vyre.atomic_add(acc, 0, v)
    vyre.atomic_sub(acc, 1, v)
    vyre.atomic_min(acc, 2, v)
    vyre.atomic_max(acc, 3, v)
    vyre.atomic_and(acc, 4, v | 0x10)
    vyre.atomic_or(acc, 5, v & 0x0F0F)
    vyre.atomic_xor(acc, 6, v)
    old[i] = vyre.atomic_cas(cas, i, i32(i % 3), v)  # each lane swaps its own slot: deterministic
    xchg[i] = vyre.atomic_exchange(cas2, i, v)


@twin("atomics_all_ops")
def _atomics(backend) -> Pairs:
    want, (x, acc, cas, cas2) = case_run(backend, "atomics_all_ops")
    n = len(x)
    got = atomics[n](x, acc.copy(), cas.copy(), cas2.copy(), zeros(n, np.int32), zeros(n, np.int32),
                     backend=backend)
    return [(name, g, want[name], EXACT) for name, g in zip(("acc", "cas", "cas2", "old", "xchg"), got)]


@vyre.kernel
def tickets(x: In[u32], counter: InOut[u32], seen: InOut[u32]):
    t = vyre.atomic_add(counter, 0, 1)
    vyre.atomic_exchange(seen, t, 1)


@twin("atomic_old_values_unique_slots")
def _tickets(backend) -> Pairs:
    want, (x, counter, seen) = case_run(backend, "atomic_old_values_unique_slots")
    c, s = tickets[len(x)](x, counter.copy(), seen.copy(), backend=backend)
    return [("counter", c, want["counter"], EXACT), ("seen", s, want["seen"], EXACT)]


ATOM_WG = 64


@vyre.kernel(workgroup_size=ATOM_WG)
def wg_atomics(x: In[u32], out: Out[u32]):
    cnt = vyre.shared(u32, 3)
    lid, g = vyre.local_id(), tid()
    if lid < 3:
        cnt[lid] = 0
    vyre.barrier()
    if g < len(x):
        vyre.atomic_add(cnt, x[g] & 1, 1)
        vyre.atomic_max(cnt, 2, x[g] >> 4)
    vyre.barrier()
    if lid < 3:
        out[vyre.group_id() * 3 + lid] = vyre.atomic_load(cnt, lid)


@twin("workgroup_atomics")
def _wg_atomics(backend) -> Pairs:
    want, (x,) = case_run(backend, "workgroup_atomics")
    (out,) = wg_atomics[len(x)](x, zeros(15, np.uint32), backend=backend)
    return [("out", out, want["out"], EXACT)]


# ---- types -------------------------------------------------------------------------------------
@vyre.kernel
def half(x: In[f16], y: In[f16], o: Out[f16], o32: Out[f32]):
    i = tid()
    v = x[i]
    h = v * y[i, 0] + y[i, 1] - 0.5  # y: the case's vec2<f16> as an (n, 2) array
    o[i] = h
    o32[i] = f32(h) + f32(vyre.sqrt(abs(v)))


@twin("f16_arith", f16=True)
def _f16(backend) -> Pairs:
    want, (x, y) = case_run(backend, "f16_arith")
    o, o32 = half[len(x)](x, y, zeros(len(x), np.float16), zeros(len(x), np.float32), backend=backend)
    return [("o", o, want["o"], EXACT), ("o32", o32, want["o32"], case_tol("f16_arith"))]


@vyre.kernel
def bools(m: In[bool_], x: In[u32], o: Out[bool_], cnt: Out[u32]):
    i = tid()
    o[i] = m[i] != ((x[i] & 1) == 1)
    cnt[i] = x[i] if m[i] else 0


@twin("bool_buffers")
def _bools(backend) -> Pairs:
    want, (m, x) = case_run(backend, "bool_buffers")
    o, cnt = bools[len(m)](m, x, zeros(len(m), np.bool_), zeros(len(m), np.uint32), backend=backend)
    return [("o", o, want["o"], EXACT), ("cnt", cnt, want["cnt"], EXACT)]
