"""The parity catalogue: programs run on the reference interpreter and on wgpu, compared.

Each case builds (program, inputs, config). Together they cover every Expr and Stmt kind,
every operator, workgroup memory with barriers, atomics, loops with break/continue, f16,
vectors, bools and a grid folded past 65535 workgroups.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from vyre.backends.config import DispatchConfig
from vyre.ir.builder import ProgramBuilder
from vyre.ir.nodes import BinOp, UnOp
from vyre.ir.program import Program

I32_MIN, I32_MAX = -(2**31), 2**31 - 1


@dataclass
class Case:
    name: str
    build: Callable[[], tuple]
    rtol: float = 0.0
    atol: float = 0.0
    needs: frozenset = field(default_factory=frozenset)


CASES: list[Case] = []


def scale_program(name: str = "scale") -> Program:
    """``y = k * x`` (k a one-value uniform): the small program of the distributed and pickling tests."""
    b = ProgramBuilder(name, workgroup_size=64)
    x = b.buffer("x", "f32")
    k = b.buffer("k", "f32", access="uniform", count=1)
    y = b.buffer("y", "f32", access="write")
    i = b.global_index()
    with b.if_(i < y.len()):
        y[i] = k[0] * x[i]
    return b.build()


def case(name: str, rtol: float = 0.0, atol: float = 0.0, needs=()):
    def deco(fn):
        CASES.append(Case(name, fn, rtol, atol, frozenset(needs)))
        return fn

    return deco


def rng(seed: int = 0):
    return np.random.default_rng(seed)


U32_EDGES = np.array([0, 1, 2, 3, 7, 31, 32, 33, 255, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFE, 0xFFFFFFFF], np.uint32)
I32_EDGES = np.array([0, 1, -1, 2, -2, 7, -7, 31, 32, 33, I32_MAX, I32_MIN, I32_MIN + 1, 100000, -100000], np.int32)


def _pairs(values: np.ndarray, extra: int, seed: int, dtype) -> tuple[np.ndarray, np.ndarray]:
    a, b = np.meshgrid(values, values)
    a, b = a.ravel(), b.ravel()
    r = rng(seed)
    if np.dtype(dtype).kind == "u":
        ra = r.integers(0, 2**32, extra, dtype=np.uint64).astype(dtype)
        rb = r.integers(0, 2**32, extra, dtype=np.uint64).astype(dtype)
    else:
        ra = r.integers(I32_MIN, I32_MAX, extra, dtype=np.int64).astype(dtype)
        rb = r.integers(-40, 40, extra, dtype=np.int64).astype(dtype)
    return np.concatenate([a, ra]).astype(dtype), np.concatenate([b, rb]).astype(dtype)


# ----------------------------------------------------------------------------- basics
@case("saxpy", rtol=1e-6, atol=1e-6)
def _saxpy():
    b = ProgramBuilder("saxpy", 64)
    a = b.buffer("a", "f32", access="uniform", count=1)
    x = b.buffer("x", "f32")
    y = b.buffer("y", "f32", access="read_write")
    i = b.global_index()
    with b.if_(i < y.len()):
        y[i] = a[0] * x[i] + y[i]
    r = rng(1)
    n = 1000
    return b.build(), [np.array([2.5], np.float32), r.standard_normal(n, dtype=np.float32),
                       r.standard_normal(n, dtype=np.float32)], None


def _binary_program(name, dtype, ops):
    b = ProgramBuilder(name, 64)
    x = b.buffer("x", dtype)
    y = b.buffer("y", dtype)
    outs = []
    for op in ops:
        res_t = "u32" if op in (BinOp.EQ, BinOp.NE, BinOp.LT, BinOp.LE, BinOp.GT, BinOp.GE) else dtype
        outs.append((op, b.buffer(f"o_{op.value}", res_t, access="write"), res_t))
    i = b.global_index()
    with b.if_(i < x.len()):
        xv = b.let(x[i], "xv")
        yv = b.let(y[i], "yv")
        for op, o, res_t in outs:
            if op in (BinOp.SHL, BinOp.SHR):
                v = xv._bin(op, yv.cast("u32") if dtype != "u32" else yv)
            else:
                v = xv._bin(op, yv)
            if res_t == "u32" and dtype != "u32":
                v = v.cast("u32")
            elif res_t == "u32" and op in (BinOp.EQ, BinOp.NE, BinOp.LT, BinOp.LE, BinOp.GT, BinOp.GE):
                v = v.cast("u32")
            o[i] = v
    return b.build()


INT_OPS = [BinOp.ADD, BinOp.SUB, BinOp.MUL, BinOp.DIV, BinOp.REM, BinOp.MIN, BinOp.MAX, BinOp.BIT_AND,
           BinOp.BIT_OR, BinOp.BIT_XOR, BinOp.SHL, BinOp.SHR, BinOp.EQ, BinOp.NE, BinOp.LT, BinOp.LE,
           BinOp.GT, BinOp.GE]


@case("u32_binary_ops")
def _u32_ops():
    a, c = _pairs(U32_EDGES, 500, 2, np.uint32)
    return _binary_program("u32_ops", "u32", INT_OPS), [a, c], None


@case("i32_binary_ops")
def _i32_ops():
    a, c = _pairs(I32_EDGES, 500, 3, np.int32)
    return _binary_program("i32_ops", "i32", INT_OPS), [a, c], None


@case("f32_binary_ops", rtol=1e-6, atol=1e-30)
def _f32_ops():
    r = rng(4)
    a = np.concatenate([r.uniform(-100, 100, 400), [0.0, -0.0, 1.0, -3.5, 7.25, 1e30]]).astype(np.float32)
    c = np.concatenate([r.uniform(-100, 100, 400), [1.0, 2.0, -0.0, 2.0, -0.5, 1e-30]]).astype(np.float32)
    c[np.abs(c) < 1e-3] = 0.5
    ops = [BinOp.ADD, BinOp.SUB, BinOp.MUL, BinOp.DIV, BinOp.MIN, BinOp.MAX, BinOp.EQ, BinOp.NE,
           BinOp.LT, BinOp.LE, BinOp.GT, BinOp.GE]
    return _binary_program("f32_ops", "f32", ops), [a, c], None


@case("f32_rem")
def _f32_rem():
    # C's fmod, bit-exact on every adapter: also for quotients far beyond 2^24, where WGSL's own
    # x - y * trunc(x / y) keeps no correct digit
    r = rng(20)
    a = np.concatenate([r.uniform(-100, 100, 400), [0.0, -0.0, 7.25, -7.25, 1.0, 3.0e9, -3.0e38, 1e-30, 5.5]])
    c = np.concatenate([r.uniform(0.5, 50, 400) * r.choice([-1, 1], 400), [1.0, 2.0, 2.0, 2.0, 3.0, 0.7, 1.1e-3,
                                                                          3e-31, -1e30]])
    return _binary_program("f32_rem", "f32", [BinOp.REM]), [a.astype(np.float32), c.astype(np.float32)], None


@case("f32_pow", rtol=2e-5, atol=1e-6)
def _pow():
    b = ProgramBuilder("pow", 64)
    x = b.buffer("x", "f32")
    y = b.buffer("y", "f32")
    o = b.buffer("o", "f32", access="write")
    i = b.global_index()
    with b.if_(i < o.len()):
        o[i] = x[i].pow(y[i])
    r = rng(5)
    return b.build(), [r.uniform(0.1, 10, 300).astype(np.float32), r.uniform(-3, 3, 300).astype(np.float32)], None


def _unary_case(op: UnOp, lo: float, hi: float, rtol: float, atol: float, specials=()):
    @case(f"f32_unary_{op.value}", rtol=rtol, atol=atol)
    def _build():
        b = ProgramBuilder(f"unary_{op.value}", 64)
        x = b.buffer("x", "f32")
        o = b.buffer("o", "f32", access="write")
        i = b.global_index()
        with b.if_(i < x.len()):
            o[i] = getattr(x[i], op.value)() if op not in (UnOp.NEG, UnOp.ABS) else (
                -x[i] if op is UnOp.NEG else abs(x[i]))
        r = rng(6)
        vals = np.concatenate([r.uniform(lo, hi, 500), np.array(specials, dtype=np.float64)]).astype(np.float32)
        return b.build(), [vals], None


_unary_case(UnOp.NEG, -100, 100, 0, 0, [0.0, -0.0])
_unary_case(UnOp.ABS, -100, 100, 0, 0, [0.0, -0.0])
_unary_case(UnOp.SQRT, 0, 1000, 1e-6, 0, [0.0, 1.0, 4.0])
_unary_case(UnOp.INVERSE_SQRT, 0.01, 1000, 1e-5, 0, [1.0, 4.0])
_unary_case(UnOp.EXP, -20, 20, 2e-6, 0, [0.0, 1.0])
_unary_case(UnOp.EXP2, -20, 20, 2e-6, 0, [0.0, 1.0, 10.0])
_unary_case(UnOp.LOG, 0.01, 1000, 1e-6, 2e-6, [1.0, 2.0])
_unary_case(UnOp.LOG2, 0.01, 1000, 1e-6, 2e-6, [1.0, 2.0, 1024.0])
_unary_case(UnOp.SIN, -10, 10, 0, 2e-6, [0.0])
_unary_case(UnOp.COS, -10, 10, 0, 2e-6, [0.0])
_unary_case(UnOp.TAN, -1.5, 1.5, 1e-5, 1e-6, [0.0])
_unary_case(UnOp.TANH, -10, 10, 1e-5, 1e-6, [0.0, 20.0, -20.0])
_unary_case(UnOp.FLOOR, -100, 100, 0, 0, [-0.5, 0.5, -1.0, 2.0])
_unary_case(UnOp.CEIL, -100, 100, 0, 0, [-0.5, 0.5, -1.0, 2.0])
_unary_case(UnOp.ROUND, -100, 100, 0, 0, [0.5, 1.5, 2.5, -0.5, -1.5, -2.5])
_unary_case(UnOp.TRUNC, -100, 100, 0, 0, [-0.5, 0.5, -1.7, 1.7])
_unary_case(UnOp.FRACT, -100, 100, 1e-6, 1e-6, [0.5, -0.25, 3.0])
_unary_case(UnOp.SIGN, -100, 100, 0, 0, [0.0, -0.0, -3.0, 3.0])


@case("int_unary_ops")
def _int_unary():
    b = ProgramBuilder("int_unary", 64)
    u = b.buffer("u", "u32")
    s = b.buffer("s", "i32")
    outs = {n: b.buffer(n, t, access="write") for n, t in [
        ("u_not", "u32"), ("u_ones", "u32"), ("u_rev", "u32"), ("u_clz", "u32"), ("u_ctz", "u32"),
        ("u_abs", "u32"), ("s_neg", "i32"), ("s_abs", "i32"), ("s_sign", "i32"), ("s_not", "i32"),
        ("s_ones", "i32"), ("s_clz", "i32"), ("s_ctz", "i32"), ("s_rev", "i32")]}
    i = b.global_index()
    with b.if_(i < u.len()):
        uv = b.let(u[i])
        sv = b.let(s[i])
        outs["u_not"][i] = ~uv
        outs["u_ones"][i] = uv.count_ones()
        outs["u_rev"][i] = uv.reverse_bits()
        outs["u_clz"][i] = uv.count_leading_zeros()
        outs["u_ctz"][i] = uv.count_trailing_zeros()
        outs["u_abs"][i] = abs(uv)
        outs["s_neg"][i] = -sv
        outs["s_abs"][i] = abs(sv)
        outs["s_sign"][i] = sv.sign()
        outs["s_not"][i] = ~sv
        outs["s_ones"][i] = sv.count_ones()
        outs["s_clz"][i] = sv.count_leading_zeros()
        outs["s_ctz"][i] = sv.count_trailing_zeros()
        outs["s_rev"][i] = sv.reverse_bits()
    r = rng(7)
    n = 300
    uu = np.concatenate([U32_EDGES, r.integers(0, 2**32, n - len(U32_EDGES), dtype=np.uint64)]).astype(np.uint32)
    ss = np.concatenate([I32_EDGES, r.integers(I32_MIN, I32_MAX, n - len(I32_EDGES))]).astype(np.int32)
    return b.build(), [uu, ss], None


@case("casts_and_bitcasts")
def _casts():
    b = ProgramBuilder("casts", 64)
    f = b.buffer("f", "f32")
    s = b.buffer("s", "i32")
    u = b.buffer("u", "u32")
    names = [("f_to_i", "i32"), ("f_to_u", "u32"), ("i_to_f", "f32"), ("u_to_f", "f32"), ("i_to_u", "u32"),
             ("u_to_i", "i32"), ("f_bits", "u32"), ("u_as_f", "f32"), ("i_as_u", "u32"), ("f_to_b", "bool"),
             ("b_to_u", "u32"), ("b_to_f", "f32")]
    outs = {n: b.buffer(n, t, access="write") for n, t in names}
    i = b.global_index()
    with b.if_(i < f.len()):
        fv, sv, uv = b.let(f[i]), b.let(s[i]), b.let(u[i])
        outs["f_to_i"][i] = fv.cast("i32")
        outs["f_to_u"][i] = fv.cast("u32")
        outs["i_to_f"][i] = sv.cast("f32")
        outs["u_to_f"][i] = uv.cast("f32")
        outs["i_to_u"][i] = sv.cast("u32")
        outs["u_to_i"][i] = uv.cast("i32")
        outs["f_bits"][i] = fv.bitcast("u32")
        outs["u_as_f"][i] = (uv & 0x3FFFFFFF).bitcast("f32")
        outs["i_as_u"][i] = sv.bitcast("u32")
        bv = b.let(fv.cast("bool"))
        outs["f_to_b"][i] = bv
        outs["b_to_u"][i] = bv.cast("u32")
        outs["b_to_f"][i] = bv.cast("f32")
    r = rng(8)
    fv = np.concatenate([[0.0, -0.0, 0.5, -0.5, 1.5, -1.5, 3e9, -3e9, 5e9, 2.2e9, -2.2e9, 1e-30],
                         r.uniform(-1e5, 1e5, 200)]).astype(np.float32)
    n = fv.size
    sv = np.resize(I32_EDGES, n).astype(np.int32)
    uv = np.resize(U32_EDGES, n).astype(np.uint32)
    return b.build(), [fv, sv, uv], None


@case("select_logic_compare")
def _select_logic():
    b = ProgramBuilder("select_logic", 64)
    x = b.buffer("x", "i32")
    o = b.buffer("o", "i32", access="write")
    flags = b.buffer("flags", "bool", access="write")
    i = b.global_index()
    with b.if_(i < x.len()):
        v = b.let(x[i])
        pos = b.let(v > 0)
        even = b.let((v & 1) == 0)
        both = b.let(pos & even)
        either = b.let(pos | even)
        o[i] = b.select(both, v * 2, b.select(either, v + 100, b.select(~pos, -v, 7)))
        flags[i] = (both | ~either) & (v != 5)
    return b.build(), [np.arange(-50, 50, dtype=np.int32)], None


@case("fma_f32", rtol=1e-6, atol=1e-5)
def _fma():
    b = ProgramBuilder("fma", 64)
    x = b.buffer("x", "f32")
    y = b.buffer("y", "f32")
    z = b.buffer("z", "f32")
    o = b.buffer("o", "f32", access="write")
    i = b.global_index()
    with b.if_(i < o.len()):
        o[i] = b.fma(x[i], y[i], z[i])
    r = rng(9)
    return b.build(), [r.uniform(-10, 10, 256).astype(np.float32) for _ in range(3)], None


@case("vectors", rtol=1e-6, atol=1e-6)
def _vectors():
    b = ProgramBuilder("vectors", 64)
    v4 = b.buffer("v4", "vec4<f32>")
    v3 = b.buffer("v3", "vec3<f32>")
    v2 = b.buffer("v2", "vec2<u32>")
    o4 = b.buffer("o4", "vec4<f32>", access="write")
    o3 = b.buffer("o3", "vec3<f32>", access="write")
    o2 = b.buffer("o2", "vec2<i32>", access="write")
    dots = b.buffer("dots", "f32", access="write")
    i = b.global_index()
    with b.if_(i < v4.len()):
        a = b.let(v4[i])
        c = b.let(v3[i])
        o4[i] = a * 2.0 + b.vec("vec4<f32>", c.x, c.y, c.z, 1.0)
        o3[i] = c * b.vec("vec3<f32>", a.w) - c
        u = b.let(v2[i])
        o2[i] = b.vec("vec2<i32>", (u.x + u.y).cast("i32"), u[1].cast("i32") - 3)
        dots[i] = a.x * c.x + a.y * c.y + a.z * c.z
    r = rng(10)
    n = 130
    return b.build(), [r.uniform(-5, 5, (n, 4)).astype(np.float32), r.uniform(-5, 5, (n, 3)).astype(np.float32),
                       r.integers(0, 1000, (n, 2)).astype(np.uint32)], None


@case("builtins_3d")
def _builtins():
    b = ProgramBuilder("builtins", (4, 2, 2))
    o = b.buffer("o", "u32", access="write", count=24 * 16 * 16)
    g = b.global_index()
    base = b.let(g * 16)
    for k, val in enumerate([b.global_id(0), b.global_id(1), b.global_id(2), b.local_id(0), b.local_id(1),
                             b.local_id(2), b.workgroup_id(0), b.workgroup_id(1), b.workgroup_id(2),
                             b.num_workgroups(0), b.num_workgroups(1), b.num_workgroups(2), b.local_index(),
                             g]):
        o[base + k] = val
    return b.build(), [], DispatchConfig(grid=(3, 2, 4))


@case("subgroup_size_independent", needs=("subgroup",))
def _subgroup_ops():
    # results that do not depend on the subgroup size (the reference simulates 32, lavapipe has 8, the H200 32);
    # size-dependent ones are in tests/backends/test_subgroup_backends.py
    b = ProgramBuilder("subgroup_ops", 48)
    x = b.buffer("x", "u32")
    o = b.buffer("o", "u32", access="write")
    tot = b.buffer("tot", "u32", access="read_write")
    i = b.global_index()
    v = b.let(b.select(i < x.len(), x[i % b.max(x.len(), 1)], 0))
    lane = b.subgroup_invocation_id()
    t = b.let(b.subgroup_add(v))
    with b.if_(lane == 0):
        b.eval(tot.atomic_add(b.workgroup_id(0), t))
    ballot = b.let(b.subgroup_ballot(b.lit(True)))
    ones = ballot[0].count_ones() + ballot[1].count_ones() + ballot[2].count_ones() + ballot[3].count_ones()
    o[i * 4] = b.subgroup_inclusive_add(v) - b.subgroup_exclusive_add(v)
    o[i * 4 + 1] = b.subgroup_shuffle(v, lane) ^ b.subgroup_max(b.workgroup_id(0))
    o[i * 4 + 2] = (ones == b.subgroup_add(b.lit(1, "u32"))).cast("u32") + b.subgroup_all(v == v).cast("u32")
    o[i * 4 + 3] = b.subgroup_broadcast_first(b.workgroup_id(0)) + b.subgroup_and(b.lit(0xF0F0, "u32"))
    x_in = rng(21).integers(0, 2**32, 4 * 48, dtype=np.uint64).astype(np.uint32)
    return b.build(), [x_in, np.zeros(4, np.uint32)], DispatchConfig(grid=(4, 1, 1), counts={"o": 4 * 48 * 4})


# ----------------------------------------------------------------------------- control flow
@case("for_break_continue")
def _for_loops():
    b = ProgramBuilder("for_loops", 32)
    n = b.buffer("n", "u32")
    o = b.buffer("o", "u32", access="write")
    i = b.global_index()
    with b.if_(i < n.len()):
        acc = b.var("u32", 0)
        with b.for_range(0, n[i]) as k:
            with b.if_(k % 3 == 1):
                b.continue_()
            with b.if_(k > 40):
                b.break_()
            acc += k * k
        down = b.var("i32", 0)
        with b.for_range(b.lit(10, "i32"), -5, step=-3) as j:
            down += j
        o[i] = acc + down.cast("u32")
    return b.build(), [np.arange(0, 70, dtype=np.uint32)], None


@case("while_collatz")
def _collatz():
    b = ProgramBuilder("collatz", 64)
    x = b.buffer("x", "u32")
    steps = b.buffer("steps", "u32", access="write")
    i = b.global_index()
    with b.if_(i < x.len()):
        v = b.var("u32", x[i])
        c = b.var("u32", 0)
        with b.while_(v != 1):
            with b.if_(v % 2 == 0):
                v.set(v / 2)
            with b.else_():
                v.set(3 * v + 1)
            c += 1
            with b.if_(c >= 500):
                b.break_()
        steps[i] = c
    return b.build(), [np.arange(1, 400, dtype=np.uint32)], None


@case("early_return")
def _early_return():
    b = ProgramBuilder("early_return", 64)
    x = b.buffer("x", "i32", access="read_write")
    i = b.global_index()
    with b.if_(i >= x.len()):
        b.return_()
    with b.if_(x[i] < 0):
        x[i] = 0
        b.return_()
    x[i] = x[i] * 3
    return b.build(), [np.arange(-100, 101, dtype=np.int32)], None


@case("nested_loops_matmul", rtol=1e-5, atol=1e-5)
def _naive_matmul():
    M, K, N = 17, 23, 9
    b = ProgramBuilder("naive_matmul", (8, 8, 1))
    a = b.buffer("a", "f32", count=M * K)
    bb = b.buffer("b", "f32", count=K * N)
    c = b.buffer("c", "f32", access="write", count=M * N)
    row = b.global_id(1)
    col = b.global_id(0)
    with b.if_((row < M) & (col < N)):
        acc = b.var("f32", 0.0)
        with b.for_range(0, K) as k:
            acc.set(b.fma(a[row * K + k], bb[k * N + col], acc))
        c[row * N + col] = acc
    r = rng(11)
    return b.build(), [r.standard_normal(M * K).astype(np.float32), r.standard_normal(K * N).astype(np.float32)], \
        DispatchConfig(grid=(2, 3, 1))


# ----------------------------------------------------------------------------- workgroup memory
@case("workgroup_tree_reduction")
def _tree_reduce():
    WG = 128
    b = ProgramBuilder("tree_reduce", WG)
    x = b.buffer("x", "u32")
    out = b.buffer("out", "u32", access="write")
    sh = b.workgroup_array("sh", "u32", WG)
    lid = b.local_index()
    g = b.global_index()
    sh[lid] = b.select(g < x.len(), x[g], 0)
    b.barrier()
    stride = b.var("u32", WG // 2)
    with b.while_(stride > 0):
        with b.if_(lid < stride):
            sh[lid] = sh[lid] + sh[lid + stride]
        b.barrier()
        stride.set(stride >> 1)
    with b.if_(lid == 0):
        out[b.workgroup_id(0)] = sh[0]
    r = rng(12)
    n = 1000
    return b.build(), [r.integers(0, 1 << 20, n).astype(np.uint32)], \
        DispatchConfig(grid=(8, 1, 1), counts={"out": 8})


@case("workgroup_scan_hillis_steele")
def _wg_scan():
    WG = 64
    b = ProgramBuilder("wg_scan", WG)
    x = b.buffer("x", "i32")
    out = b.buffer("out", "i32", access="write")
    sh = b.workgroup_array("sh", "i32", WG)
    lid = b.local_index()
    g = b.global_index()
    sh[lid] = b.select(g < x.len(), x[g], 0)
    b.barrier()
    with b.for_range(0, 6) as k:
        off = b.let(b.lit(1) << k)
        t = b.var("i32", 0)
        with b.if_(lid >= off):
            t.set(sh[lid - off])
        b.barrier()
        sh[lid] = sh[lid] + t
        b.barrier()
    with b.if_(g < x.len()):
        out[g] = sh[lid]
    r = rng(13)
    return b.build(), [r.integers(-1000, 1000, 200).astype(np.int32)], None


@case("storage_barrier_two_phase")
def _storage_barrier():
    WG = 64
    b = ProgramBuilder("storage_barrier", WG)
    x = b.buffer("x", "u32")
    tmp = b.buffer("tmp", "u32", access="read_write")
    out = b.buffer("out", "u32", access="write")
    g = b.global_index()
    lid = b.local_index()
    base = b.let(b.workgroup_id(0) * WG)
    tmp[g] = x[g] * 2
    b.barrier("storage")
    b.barrier()
    out[g] = tmp[base + (WG - 1 - lid)]
    n = 256
    return b.build(), [np.arange(n, dtype=np.uint32), np.zeros(n, np.uint32)], None


# ----------------------------------------------------------------------------- atomics
@case("histogram_atomic_add")
def _histogram():
    b = ProgramBuilder("histogram", 64)
    x = b.buffer("x", "u32")
    hist = b.buffer("hist", "u32", access="read_write")
    i = b.global_index()
    with b.if_(i < x.len()):
        hist.atomic_add(x[i] % hist.len(), 1, discard=True)
    r = rng(14)
    # the first writable buffer is the 37-bin histogram: size the grid from the input instead
    return b.build(), [r.integers(0, 10000, 5000).astype(np.uint32), np.zeros(37, np.uint32)], \
        DispatchConfig(grid=(-(-5000 // 64), 1, 1))


@case("atomics_all_ops")
def _atomics():
    b = ProgramBuilder("atomics", 64)
    x = b.buffer("x", "i32")
    acc = b.buffer("acc", "i32", access="read_write", count=7)
    cas = b.buffer("cas", "i32", access="read_write")
    cas2 = b.buffer("cas2", "i32", access="read_write")
    old = b.buffer("old", "i32", access="write")
    xchg = b.buffer("xchg", "i32", access="write")
    i = b.global_index()
    with b.if_(i < x.len()):
        v = b.let(x[i])
        acc.atomic_add(0, v)
        acc.atomic_sub(1, v)
        acc.atomic_min(2, v)
        acc.atomic_max(3, v)
        acc.atomic_and(4, v | 0x10)
        acc.atomic_or(5, v & 0x0F0F)
        acc.atomic_xor(6, v)
        # each lane swaps its own slot when it holds i % 3: deterministic old values
        old[i] = cas.atomic_compare_exchange(i, (i % 3).cast("i32"), v)
        xchg[i] = cas2.atomic_exchange(i, v)
    r = rng(15)
    n = 777
    init = np.array([5, 5, 1000, -1000, -1, 0, 0], np.int32)
    return b.build(), [r.integers(-5000, 5000, n).astype(np.int32), init,
                       (np.arange(n) % 5).astype(np.int32), np.arange(n, dtype=np.int32)], \
        DispatchConfig(grid=(-(-n // 64), 1, 1))


@case("atomic_old_values_unique_slots")
def _atomic_unique():
    # a lane-order-independent use of old values: a ticket counter gives every lane a distinct slot
    b = ProgramBuilder("tickets", 64)
    x = b.buffer("x", "u32")
    counter = b.buffer("counter", "u32", access="read_write", count=1)
    seen = b.buffer("seen", "u32", access="read_write")
    i = b.global_index()
    with b.if_(i < x.len()):
        t = counter.atomic_add(0, 1)
        seen.atomic_exchange(t, 1)
    n = 500
    return b.build(), [np.zeros(n, np.uint32), np.zeros(1, np.uint32), np.zeros(n, np.uint32)], \
        DispatchConfig(grid=(-(-n // 64), 1, 1))


@case("workgroup_atomics")
def _wg_atomics():
    WG = 64
    b = ProgramBuilder("wg_atomics", WG)
    x = b.buffer("x", "u32")
    out = b.buffer("out", "u32", access="write")
    cnt = b.workgroup_array("cnt", "u32", 3)
    lid = b.local_index()
    g = b.global_index()
    with b.if_(lid < 3):
        cnt[lid] = 0
    b.barrier()
    with b.if_(g < x.len()):
        cnt.atomic_add(x[g] & 1, 1)
        cnt.atomic_max(2, x[g] >> 4)
    b.barrier()
    with b.if_(lid < 3):
        out[b.workgroup_id(0) * 3 + lid] = cnt.atomic_load(lid)
    r = rng(16)
    n = 64 * 5
    return b.build(), [r.integers(0, 1 << 16, n).astype(np.uint32)], DispatchConfig(grid=(5, 1, 1), counts={"out": 15})


# ----------------------------------------------------------------------------- types
@case("f16_arith", rtol=2e-3, atol=2e-3, needs=("shader-f16",))
def _f16():
    b = ProgramBuilder("f16", 64)
    x = b.buffer("x", "f16")
    y = b.buffer("y", "vec2<f16>")
    o = b.buffer("o", "f16", access="write")
    o32 = b.buffer("o32", "f32", access="write")
    i = b.global_index()
    with b.if_(i < x.len()):
        v = b.let(x[i])
        w = b.let(y[i])
        h = b.let(v * w.x + w.y - b.lit(0.5, "f16"))
        o[i] = h
        o32[i] = h.cast("f32") + v.abs().sqrt().cast("f32")
    r = rng(17)
    n = 101
    return b.build(), [r.uniform(-4, 4, n).astype(np.float16), r.uniform(-4, 4, (n, 2)).astype(np.float16)], None


@case("bool_buffers")
def _bools():
    b = ProgramBuilder("bools", 64)
    m = b.buffer("m", "bool")
    x = b.buffer("x", "u32")
    o = b.buffer("o", "bool", access="write")
    cnt = b.buffer("cnt", "u32", access="write")
    i = b.global_index()
    with b.if_(i < m.len()):
        o[i] = m[i] != ((x[i] & 1) == 1)
        cnt[i] = b.select(m[i], x[i], 0)
    r = rng(18)
    n = 99
    return b.build(), [r.integers(0, 2, n).astype(bool), r.integers(0, 100, n).astype(np.uint32)], None


@case("lengths_and_counts")
def _lengths():
    b = ProgramBuilder("lengths", 1)
    a = b.buffer("a", "f32")
    c = b.buffer("c", "vec3<u32>")
    o = b.buffer("o", "u32", access="write")
    sh = b.workgroup_array("sh", "u32", 17)
    with b.if_(b.global_index() == 0):
        o[0] = a.len()
        o[1] = c.len()
        o[2] = o.len()
        o[3] = sh.len()
    return b.build(), [np.zeros(13, np.float32), np.zeros((6, 3), np.uint32)], DispatchConfig(grid=1, counts={"o": 4})


@case("grid_fold_past_65535")
def _fold():
    b = ProgramBuilder("fold", 1)
    o = b.buffer("o", "u32", access="write")
    wid = b.workgroup_id(0)
    i = b.global_index()
    with b.if_(i < o.len()):
        o[i] = i * 3 + wid
    n = 70000
    return b.build(), [], DispatchConfig(grid=(n, 1, 1), counts={"o": n})


@case("literal_edge_values")
def _literals():
    b = ProgramBuilder("literals", 1)
    o = b.buffer("o", "u32", access="write", count=9)
    f = b.buffer("f", "f32", access="write", count=5)
    s = b.buffer("s", "i32", access="write", count=2)
    with b.if_(b.global_index() == 0):
        o[0] = b.lit(0xFFFFFFFF, "u32")
        o[1] = b.lit(float("inf")).bitcast("u32")
        o[2] = b.lit(-0.0).bitcast("u32")
        o[3] = b.lit(float("-inf")).bitcast("u32")
        o[4] = b.lit(1.0000001).bitcast("u32")
        o[5] = b.lit(3.4028234663852886e38).bitcast("u32")
        o[6] = b.lit(1e-45).bitcast("u32")
        o[7] = b.lit(0.1).bitcast("u32")
        o[8] = b.lit(I32_MIN, "i32").bitcast("u32")
        f[0] = b.lit(0.1)
        f[1] = b.lit(-0.0)
        f[2] = b.lit(float("inf"))
        f[3] = b.lit(16777217.0)
        f[4] = b.lit(2.5e-38)
        s[0] = b.lit(I32_MIN, "i32")
        s[1] = b.lit(I32_MAX, "i32")
    return b.build(), [], DispatchConfig(grid=(1, 1, 1))


@case("i32_vector_divrem")
def _vec_divrem():
    # NVIDIA's Vulkan driver returns x for x % -1: the lowering must never divide by 0 or -1
    b = ProgramBuilder("vec_divrem", 64)
    x = b.buffer("x", "vec2<i32>")
    y = b.buffer("y", "vec2<i32>")
    q = b.buffer("q", "vec2<i32>", access="write")
    r = b.buffer("r", "vec2<i32>", access="write")
    s = b.buffer("s", "vec2<i32>", access="write")
    i = b.global_index()
    with b.if_(i < x.len()):
        q[i] = x[i] / y[i]
        r[i] = x[i] % y[i]
        s[i] = x[i] % -1
    a, c = _pairs(I32_EDGES, 200, 19, np.int32)
    n = a.size // 2 * 2
    return b.build(), [a[:n].reshape(-1, 2), c[:n].reshape(-1, 2)], None
