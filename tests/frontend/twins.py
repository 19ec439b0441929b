"""Kernel twins of the parity catalogue (tests/programs.py): each builder program written again with
``@vyre.kernel``, run on the same inputs, its outputs paired with the builder's (test_twins.py runs and
compares them on both backends). Also the harness: :func:`twin` registers a twin, :func:`case_run` and
:func:`op_run` run the builder version.

A twin function takes the backend and returns ``[(label, kernel output, builder output, tolerance)]``.
Integers and bools are compared bit-exact; floats bit-exact too where the kernel does the same operations
in the same order as the builder, else within the case's / op's stated tolerance."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

import vyre
from vyre import In, InOut, Out, bool_, f16, f32, i32, tid, u32
from vyre.ops import registry
from vyre.ops.registry import EXACT, Tolerance, rel

from programs import CASES

Pairs = list[tuple[str, np.ndarray, np.ndarray, Tolerance]]


@dataclass(frozen=True)
class Twin:
    name: str
    run: Callable[[Any], Pairs]
    f16: bool = False  # needs shader-f16


TWINS: list[Twin] = []
_CASES = {c.name: c for c in CASES}


def twin(name: str, f16: bool = False) -> Callable[[Callable[[Any], Pairs]], Callable[[Any], Pairs]]:
    def deco(fn: Callable[[Any], Pairs]) -> Callable[[Any], Pairs]:
        TWINS.append(Twin(name, fn, f16))
        return fn
    return deco


def case_run(backend, name: str) -> tuple[dict[str, np.ndarray], list[np.ndarray]]:
    """The parity case's program on ``backend``: ({output name: array}, its inputs)."""
    program, inputs, config = _CASES[name].build()
    outs = backend.dispatch(program, [np.array(x, copy=True) for x in inputs], config)
    return {d.name: o for d, o in zip(program.output_buffers, outs)}, inputs


def op_run(backend, op_id: str, params: dict, *inputs: np.ndarray) -> list[np.ndarray]:
    """The registered op's (generic) builder pipeline on ``backend``."""
    pipeline = registry.get(op_id).build(**params)
    return list(backend.run_pipeline(pipeline, [np.array(x, copy=True) for x in inputs]))


def zeros(shape, dtype) -> np.ndarray:
    return np.zeros(shape, dtype)


def case_tol(name: str) -> Tolerance:
    c = _CASES[name]
    return rel(c.rtol, c.atol)


# ---- basics ------------------------------------------------------------------------------------
@vyre.kernel
def saxpy(a: f32, x: In[f32], y: InOut[f32]):
    i = tid()
    y[i] = a * x[i] + y[i]


@twin("saxpy")
def _saxpy(backend) -> Pairs:
    want, (a, x, y) = case_run(backend, "saxpy")
    (got,) = saxpy[len(x)](float(a[0]), x, y.copy(), backend=backend)
    return [("y", got, want["y"], EXACT)]


@vyre.func
def int_ops(a, b, o, c, i):
    # the catalogue's INT_OPS, in order; o gets the arithmetic, c the comparisons (as u32)
    o[i, 0], o[i, 1], o[i, 2], o[i, 3], o[i, 4] = a + b, a - b, a * b, a // b, a % b
    o[i, 5], o[i, 6], o[i, 7], o[i, 8], o[i, 9] = min(a, b), max(a, b), a & b, a | b, a ^ b
    o[i, 10], o[i, 11] = a << b, a >> b
    c[i, 0], c[i, 1], c[i, 2] = u32(a == b), u32(a != b), u32(a < b)
    c[i, 3], c[i, 4], c[i, 5] = u32(a <= b), u32(a > b), u32(a >= b)


@vyre.kernel
def u32_ops(x: In[u32], y: In[u32], o: Out[u32], c: Out[u32]):
    i = tid()
    int_ops(x[i], y[i], o, c, i)


@vyre.kernel
def i32_ops(x: In[i32], y: In[i32], o: Out[i32], c: Out[u32]):
    i = tid()
    int_ops(x[i], y[i], o, c, i)


def _int_ops(backend, name: str, kernel, dtype) -> Pairs:
    want, (x, y) = case_run(backend, name)
    outs = list(want.values())
    o, c = kernel[len(x)](x, y, zeros((len(x), 12), dtype), zeros((len(x), 6), np.uint32), backend=backend)
    arith = np.stack(outs[:12], axis=1)
    if dtype == np.int32:  # the builder divides truncating (WGSL), the kernel's // and % floor (Python)
        q, r = arith[:, 3], arith[:, 4]
        down = (r != 0) & ((r < 0) != (y < 0))
        arith[:, 3], arith[:, 4] = q - down, r + np.where(down, y, 0)
    return [("arith", o, arith, EXACT), ("compare", c, np.stack(outs[12:], axis=1), EXACT)]


@twin("u32_binary_ops")
def _u32_ops(backend) -> Pairs:
    return _int_ops(backend, "u32_binary_ops", u32_ops, np.uint32)


@twin("i32_binary_ops")
def _i32_ops(backend) -> Pairs:
    return _int_ops(backend, "i32_binary_ops", i32_ops, np.int32)


@vyre.kernel
def f32_ops(x: In[f32], y: In[f32], o: Out[f32], c: Out[u32]):
    i = tid()
    a, b = x[i], y[i]
    o[i, 0], o[i, 1], o[i, 2], o[i, 3], o[i, 4], o[i, 5] = a + b, a - b, a * b, a / b, min(a, b), max(a, b)
    c[i, 0], c[i, 1], c[i, 2] = u32(a == b), u32(a != b), u32(a < b)
    c[i, 3], c[i, 4], c[i, 5] = u32(a <= b), u32(a > b), u32(a >= b)


@twin("f32_binary_ops")
def _f32_ops(backend) -> Pairs:
    want, (x, y) = case_run(backend, "f32_binary_ops")
    outs = list(want.values())
    o, c = f32_ops[len(x)](x, y, zeros((len(x), 6), np.float32), zeros((len(x), 6), np.uint32), backend=backend)
    return [("arith", o, np.stack(outs[:6], axis=1), EXACT), ("compare", c, np.stack(outs[6:], axis=1), EXACT)]


@vyre.kernel
def unary(x: In[f32], o: Out[f32]):
    i = tid()
    v = x[i]
    o[i, 0], o[i, 1], o[i, 2], o[i, 3], o[i, 4] = -v, abs(v), vyre.sqrt(v), vyre.floor(v), vyre.ceil(v)
    o[i, 5], o[i, 6], o[i, 7], o[i, 8] = vyre.round(v), vyre.trunc(v), vyre.fract(v), vyre.sign(v)
    o[i, 9], o[i, 10], o[i, 11], o[i, 12] = vyre.exp(v), vyre.log(v), vyre.sin(v), math_tanh(v)


@vyre.func
def math_tanh(v: f32) -> f32:
    return vyre.tanh(v)


UNARY = ["neg", "abs", "sqrt", "floor", "ceil", "round", "trunc", "fract", "sign", "exp", "log", "sin", "tanh"]


@twin("f32_unary")
def _unary(backend) -> Pairs:
    pairs = []
    for k, op in enumerate(UNARY):  # each case has its own input range; the kernel runs on each
        want, (x,) = case_run(backend, f"f32_unary_{op}")
        (o,) = unary[len(x)](x, zeros((len(x), len(UNARY)), np.float32), backend=backend)
        pairs.append((op, o[:, k], want["o"], EXACT))
    return pairs


@vyre.kernel
def int_unary(u: In[u32], s: In[i32], uo: Out[u32], so: Out[i32]):
    i = tid()
    a, b = u[i], s[i]
    uo[i, 0], uo[i, 1], uo[i, 2] = ~a, vyre.popcount(a), vyre.reverse_bits(a)
    uo[i, 3], uo[i, 4], uo[i, 5] = vyre.clz(a), vyre.ctz(a), abs(a)
    so[i, 0], so[i, 1], so[i, 2], so[i, 3] = -b, abs(b), vyre.sign(b), ~b
    so[i, 4], so[i, 5], so[i, 6], so[i, 7] = vyre.popcount(b), vyre.clz(b), vyre.ctz(b), vyre.reverse_bits(b)


@twin("int_unary_ops")
def _int_unary(backend) -> Pairs:
    want, (u, s) = case_run(backend, "int_unary_ops")
    outs = list(want.values())
    uo, so = int_unary[len(u)](u, s, zeros((len(u), 6), np.uint32), zeros((len(u), 8), np.int32), backend=backend)
    return [("u32", uo, np.stack(outs[:6], axis=1), EXACT), ("i32", so, np.stack(outs[6:], axis=1), EXACT)]


@vyre.kernel
def casts(f: In[f32], s: In[i32], u: In[u32], fo: Out[f32], io: Out[i32], uo: Out[u32], bo: Out[bool_]):
    i = tid()
    fv, sv, uv = f[i], s[i], u[i]
    b = bool_(fv)
    io[i, 0], io[i, 1] = i32(fv), i32(uv)
    uo[i, 0], uo[i, 1], uo[i, 2], uo[i, 3] = u32(fv), u32(sv), vyre.bitcast(fv, u32), vyre.bitcast(sv, u32)
    uo[i, 4] = u32(b)
    fo[i, 0], fo[i, 1], fo[i, 2] = f32(sv), f32(uv), vyre.bitcast(uv & 0x3FFFFFFF, f32)
    fo[i, 3] = f32(b)
    bo[i] = b


@twin("casts_and_bitcasts")
def _casts(backend) -> Pairs:
    w, (f, s, u) = case_run(backend, "casts_and_bitcasts")
    n = len(f)
    fo, io, uo, bo = casts[n](f, s, u, zeros((n, 4), np.float32), zeros((n, 2), np.int32),
                              zeros((n, 5), np.uint32), zeros(n, np.bool_), backend=backend)
    return [("f32", fo, np.stack([w["i_to_f"], w["u_to_f"], w["u_as_f"], w["b_to_f"]], 1), EXACT),
            ("i32", io, np.stack([w["f_to_i"], w["u_to_i"]], 1), EXACT),
            ("u32", uo, np.stack([w["f_to_u"], w["i_to_u"], w["f_bits"], w["i_as_u"], w["b_to_u"]], 1), EXACT),
            ("bool", bo, w["f_to_b"], EXACT)]


@vyre.kernel
def select_logic(x: In[i32], o: Out[i32], flags: Out[bool_]):
    i = tid()
    v = x[i]
    pos = v > 0
    even = (v & 1) == 0
    both, either = pos and even, pos or even
    r = 7
    if both:
        r = v * 2
    elif either:
        r = v + 100
    elif not pos:
        r = -v
    o[i] = r
    flags[i] = (both or not either) and v != 5


@twin("select_logic_compare")
def _select(backend) -> Pairs:
    want, (x,) = case_run(backend, "select_logic_compare")
    o, flags = select_logic[len(x)](x, zeros(len(x), np.int32), zeros(len(x), np.bool_), backend=backend)
    return [("o", o, want["o"], EXACT), ("flags", flags, want["flags"], EXACT)]


@vyre.kernel
def fma3(x: In[f32], y: In[f32], z: In[f32], o: Out[f32]):
    i = tid()
    o[i] = vyre.fma(x[i], y[i], z[i])


@twin("fma_f32")
def _fma(backend) -> Pairs:
    want, (x, y, z) = case_run(backend, "fma_f32")
    (o,) = fma3[len(x)](x, y, z, zeros(len(x), np.float32), backend=backend)
    return [("o", o, want["o"], EXACT)]


# ---- control flow ------------------------------------------------------------------------------
@vyre.kernel
def for_loops(n: In[u32], o: Out[u32]):
    i = tid()
    acc: u32 = 0
    for k in range(u32(0), n[i]):
        if k % 3 == 1:
            continue
        if k > 40:
            break
        acc += k * k
    down = 0
    for j in range(10, -5, -3):
        down += j
    o[i] = acc + u32(down)


@twin("for_break_continue")
def _for(backend) -> Pairs:
    want, (n,) = case_run(backend, "for_break_continue")
    (o,) = for_loops[len(n)](n, zeros(len(n), np.uint32), backend=backend)
    return [("o", o, want["o"], EXACT)]


@vyre.kernel
def collatz(x: In[u32], steps: Out[u32]):
    i = tid()
    v = x[i]
    c: u32 = 0
    while v != 1:
        if v % 2 == 0:
            v //= 2
        else:
            v = 3 * v + 1
        c += 1
        if c >= 500:
            break
    steps[i] = c


@twin("while_collatz")
def _collatz(backend) -> Pairs:
    want, (x,) = case_run(backend, "while_collatz")
    (steps,) = collatz[len(x)](x, zeros(len(x), np.uint32), backend=backend)
    return [("steps", steps, want["steps"], EXACT)]


@vyre.kernel
def early_return(x: InOut[i32]):
    i = tid()
    if x[i] < 0:
        x[i] = 0
        return
    x[i] = x[i] * 3


@twin("early_return")
def _early(backend) -> Pairs:
    want, (x,) = case_run(backend, "early_return")
    (got,) = early_return[len(x)](x.copy(), backend=backend)
    return [("x", got, want["x"], EXACT)]


@vyre.kernel
def matmul(a: In[f32], b: In[f32], c: Out[f32]):
    row, col = vyre.tid2()
    acc = 0.0
    for k in range(a.shape[1]):
        acc = vyre.fma(a[row, k], b[k, col], acc)
    c[row, col] = acc


@twin("nested_loops_matmul")
def _matmul(backend) -> Pairs:
    m, k, n = 17, 23, 9  # the case's sizes (flat buffers there)
    want, (a, b) = case_run(backend, "nested_loops_matmul")
    (c,) = matmul[m, n](a.reshape(m, k), b.reshape(k, n), zeros((m, n), np.float32), backend=backend)
    return [("c", c.reshape(-1), want["c"], EXACT)]


__all__ = ["TWINS", "Twin", "twin", "case_run", "op_run", "zeros", "case_tol", "f16", "In", "InOut", "Out"]
