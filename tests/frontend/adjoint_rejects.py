"""Kernels the adjoint transform refuses (tests/frontend/test_adjoint.py checks each KernelError names the
line marked ``# HERE``)."""

from __future__ import annotations

import vyre
from vyre import In, InOut, Out, f32, i32, tid, u32


@vyre.kernel(differentiable=True)
def uses_while(x: In[f32], out: Out[f32]):
    v = x[tid()]
    while v > 1.0:  # HERE
        v = v * 0.5
    out[tid()] = v


@vyre.kernel(differentiable=True)
def uses_break(x: In[f32], out: Out[f32]):
    v = x[tid()]
    for _k in range(4):
        if v > 1.0:
            break  # HERE
        v = v * 2.0
    out[tid()] = v


@vyre.kernel(differentiable=True)
def uses_atomic(x: In[f32], hist: InOut[u32], out: Out[f32]):
    out[tid()] = x[tid()]
    vyre.atomic_add(hist, 0, 1)  # HERE


@vyre.kernel(differentiable=True)
def int_path(x: In[f32], out: Out[f32]):
    k = i32(x[tid()] * 4.0)  # HERE
    out[tid()] = f32(k)


@vyre.kernel(differentiable=True)
def in_out(x: InOut[f32]):  # HERE
    x[tid()] = x[tid()] * 2.0


@vyre.kernel(differentiable=True)
def late_return(x: In[f32], out: Out[f32], out2: Out[f32]):
    out[tid()] = x[tid()]
    if x[tid()] > 0.0:
        return  # HERE
    out2[tid()] = x[tid()]


@vyre.kernel(differentiable=True)
def moving_bound(x: In[f32], out: Out[f32]):
    n = 3
    acc = 0.0
    for _k in range(n):  # HERE
        n = 2
        acc += x[tid()]
    out[tid()] = acc


@vyre.kernel(workgroup_size=64, differentiable=True)
def shared_tile(x: In[f32], out: Out[f32]):
    tile = vyre.shared(f32, 64)
    tile[vyre.local_id()] = x[tid()]
    vyre.barrier()  # HERE
    out[tid()] = tile[0]


REJECTS = [uses_while, uses_break, uses_atomic, int_path, in_out, late_return, moving_bound, shared_tile]
__all__ = ["REJECTS"]
