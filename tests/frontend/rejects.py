"""Kernels that vyre rejects, one construct each (test_errors.py). The offending line of each carries a
`# E` comment naming the kernel; the test checks that the KernelError points at exactly that line.
Not decorated here: the test applies @vyre.kernel (some errors are raised by the decorator)."""
# ruff: noqa
from __future__ import annotations

import numpy as np

import vyre
from vyre import In, InOut, Out, f32, i32, tid, u32

TABLE = [1, 2, 3]


def int_division(x: In[f32], k: InOut[i32], out: Out[u32], n: u32):
    i = tid()
    out[i] = i / 2  # E int_division


def mixed_types(x: In[f32], k: InOut[i32], out: Out[u32], n: u32):
    i = tid()
    v = x[i] + k[i]  # E mixed_types


def float_literal_with_int(x: In[f32], k: InOut[i32], out: Out[u32], n: u32):
    i = tid()
    out[i] = i + 1.5  # E float_literal_with_int


def numpy_call(x: In[f32], k: InOut[i32], out: Out[u32], n: u32):
    i = tid()
    out[i] = np.sum(i)  # E numpy_call


def mutable_global(x: In[f32], k: InOut[i32], out: Out[u32], n: u32):
    i = tid()
    out[i] = TABLE[0]  # E mutable_global


@vyre.func
def forever(a):
    return forever(a)  # E recursion


def recursion(x: In[f32], k: InOut[i32], out: Out[u32], n: u32):
    out[tid()] = forever(n)


def lambda_(x: In[f32], k: InOut[i32], out: Out[u32], n: u32):
    f = lambda a: a  # E lambda_


def comprehension(x: In[f32], k: InOut[i32], out: Out[u32], n: u32):
    v = [a for a in range(3)]  # E comprehension


def string(x: In[f32], k: InOut[i32], out: Out[u32], n: u32):
    s = "abc"  # E string


def try_(x: In[f32], k: InOut[i32], out: Out[u32], n: u32):
    try:  # E try_
        out[tid()] = 1
    except ValueError:
        pass


def global_(x: In[f32], k: InOut[i32], out: Out[u32], n: u32):
    global TABLE  # E global_


def retyped_local(x: In[f32], k: InOut[i32], out: Out[u32], n: u32):
    v = 0
    v = x[0]  # E retyped_local


def assign_loop_var(x: In[f32], k: InOut[i32], out: Out[u32], n: u32):
    for j in range(3):
        j = 2  # E assign_loop_var


def used_after_block(x: In[f32], k: InOut[i32], out: Out[u32], n: u32):
    if n > 0:
        w = 1
    out[tid()] = u32(w)  # E used_after_block


def store_to_input(x: In[f32], k: InOut[i32], out: Out[u32], n: u32):
    x[tid()] = 1.0  # E store_to_input


def return_value(x: In[f32], k: InOut[i32], out: Out[u32], n: u32):
    return 1  # E return_value


def loop_over_array(x: In[f32], k: InOut[i32], out: Out[u32], n: u32):
    for a in k:  # E loop_over_array
        pass


def truthy_int(x: In[f32], k: InOut[i32], out: Out[u32], n: u32):
    if n and tid() > 2:  # E truthy_int
        out[0] = 1


def keyword_call(x: In[f32], k: InOut[i32], out: Out[u32], n: u32):
    out[tid()] = u32(vyre.sqrt(x=x[0]))  # E keyword_call


def wrong_ndim(x: In[f32], k: InOut[i32], out: Out[u32], n: u32):
    i = tid()
    out[i, i] = 1  # E wrong_ndim


def divergent_barrier(x: In[f32], k: InOut[i32], out: Out[u32], n: u32):
    i = tid()
    if x[i] > 0.0:
        vyre.barrier()  # E divergent_barrier


def atomic_on_input(x: In[f32], k: InOut[i32], out: Out[u32], n: u32):
    vyre.atomic_add(x, 0, 1.0)  # E atomic_on_input


def while_else(x: In[f32], k: InOut[i32], out: Out[u32], n: u32):
    while n > 0:  # E while_else
        break
    else:
        pass


def undefined_name(x: In[f32], k: InOut[i32], out: Out[u32], n: u32):
    out[tid()] = nothing_here  # E undefined_name


def default_argument(x: In[f32], k: InOut[i32], out: Out[u32], n: u32 = 3):  # E default_argument
    pass


def unannotated(x: In[f32], k: InOut[i32], out: Out[u32], n):  # E unannotated
    pass


def assign_scalar_param(x: In[f32], k: InOut[i32], out: Out[u32], n: u32):
    n = 3  # E assign_scalar_param


@vyre.func
def bad_helper(a):
    return a / 2  # E helper_error


def helper_error(x: In[f32], k: InOut[i32], out: Out[u32], n: u32):
    out[tid()] = bad_helper(n)


def python_float_cast(x: In[f32], k: InOut[i32], out: Out[u32], n: u32):
    out[tid()] = u32(float(n))  # E python_float_cast


WEIGHTS = np.ones(8, np.float32)  # a module-level array: kernels cannot read it (issue 27)
GRID = np.ones((2, 4), np.int32)


def global_array(x: In[f32], k: InOut[i32], out: Out[u32], n: u32):
    i = tid()
    x2 = WEIGHTS[i]  # E global_array


def global_array_call(x: In[f32], k: InOut[i32], out: Out[u32], n: u32):
    k[tid()] = GRID(0)  # E global_array_call


def global_array_in_math(x: In[f32], k: InOut[i32], out: Out[u32], n: u32):
    v = vyre.sqrt(WEIGHTS)  # E global_array_in_math


def countdown_range(x: In[f32], k: InOut[i32], out: Out[u32], n: u32):
    for i in range(len(x) - 1, -1, -1):  # E countdown_range
        out[i] = 1


def countdown_range_shape(x: In[f32], k: InOut[i32], out: Out[u32], n: u32):
    for i in range(x.shape[0], -2, -2):  # E countdown_range_shape
        out[i] = 1


def negative_with_u32(x: In[f32], k: InOut[i32], out: Out[u32], n: u32):
    out[tid()] = n + -1  # E negative_with_u32
