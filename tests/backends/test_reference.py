"""Tests of the CPU reference interpreter against hand-computed numpy expectations."""

from __future__ import annotations

import math

import numpy as np
import pytest

from vyre.backends import semantics as sem
from vyre.backends.config import DispatchConfig
from vyre.backends.reference import ReferenceBackend
from vyre.errors import DispatchError
from vyre.ir.builder import ProgramBuilder
from vyre.ir.types import DataType

I32_MIN, I32_MAX = -(2**31), 2**31 - 1
REF = ReferenceBackend()


def build(b: ProgramBuilder):
    return b.build(validate=False)


def run(program, inputs=None, config=None, backend=REF):
    return backend.dispatch(program, inputs if inputs is not None else [], config)


def elementwise(name, in_dtypes, out_dtype, fn, workgroup_size=64):
    """Program: out[i] = fn(in0[i], in1[i], ...) for i < len(out)."""
    b = ProgramBuilder(name, workgroup_size=workgroup_size)
    ins = [b.buffer(f"in{k}", d) for k, d in enumerate(in_dtypes)]
    out = b.buffer("out", out_dtype, access="write")
    i = b.global_index()
    with b.if_(i < out.len()):
        out[i] = fn(b, *[x[i] for x in ins])
    return build(b)


# --------------------------------------------------------------------------- basics
def test_saxpy():
    b = ProgramBuilder("saxpy", workgroup_size=64)
    a = b.buffer("a", "f32", access="uniform", count=1)
    x = b.buffer("x", "f32")
    y = b.buffer("y", "f32", access="read_write")
    i = b.global_index()
    with b.if_(i < y.len()):
        y[i] = a[0] * x[i] + y[i]
    p = build(b)
    rng = np.random.default_rng(0)
    n = 1000  # not a multiple of 64
    x_in = rng.standard_normal(n).astype(np.float32)
    y_in = rng.standard_normal(n).astype(np.float32)
    y_copy = y_in.copy()
    (out,) = run(p, [np.array([2.5], np.float32), x_in, y_in])
    assert out.dtype == np.float32 and out.shape == (n,)
    np.testing.assert_array_equal(out, np.float32(2.5) * x_in + y_in)
    np.testing.assert_array_equal(y_in, y_copy)  # inputs are not modified
    (out2,) = run(p, {"a": np.array([2.5], np.float32), "x": x_in, "y": y_in})
    np.testing.assert_array_equal(out, out2)


def test_backend_name_and_protocol():
    from vyre.backends.base import Backend

    assert ReferenceBackend.name == "reference"
    assert isinstance(REF, Backend)


# --------------------------------------------------------------------------- integer semantics
def _trunc_div(a, b):
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


def _wrap_i32(v):
    return (v + 2**31) % 2**32 - 2**31


def _py_i32(op, a, b):
    if op == "div":
        return a if b == 0 else _wrap_i32(_trunc_div(a, b))
    if op == "rem":
        return 0 if b == 0 else a - b * _trunc_div(a, b)
    if op == "add":
        return _wrap_i32(a + b)
    if op == "sub":
        return _wrap_i32(a - b)
    if op == "mul":
        return _wrap_i32(a * b)
    raise AssertionError(op)


def _py_u32(op, a, b):
    m = 2**32
    if op == "div":
        return a if b == 0 else a // b
    if op == "rem":
        return 0 if b == 0 else a % b
    if op == "add":
        return (a + b) % m
    if op == "sub":
        return (a - b) % m
    if op == "mul":
        return (a * b) % m
    raise AssertionError(op)


I32_VALUES = [0, 1, -1, 2, -2, 7, -7, 3, -3, 31, 100000, -100000, I32_MAX, I32_MIN, I32_MIN + 1]
U32_VALUES = [0, 1, 2, 3, 7, 31, 32, 33, 255, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFE, 0xFFFFFFFF]
OPS = {"div": lambda b, x, y: x / y, "rem": lambda b, x, y: x % y, "add": lambda b, x, y: x + y,
       "sub": lambda b, x, y: x - y, "mul": lambda b, x, y: x * y}


@pytest.mark.parametrize("op", list(OPS))
def test_i32_arith(op):
    pairs = [(a, c) for a in I32_VALUES for c in I32_VALUES]
    a = np.array([p[0] for p in pairs], np.int32)
    c = np.array([p[1] for p in pairs], np.int32)
    p = elementwise(f"i32_{op}", ["i32", "i32"], "i32", OPS[op])
    (out,) = run(p, [a, c])
    expect = np.array([_py_i32(op, int(x), int(y)) for x, y in pairs], np.int32)
    np.testing.assert_array_equal(out, expect)


@pytest.mark.parametrize("op", list(OPS))
def test_u32_arith(op):
    pairs = [(a, c) for a in U32_VALUES for c in U32_VALUES]
    a = np.array([p[0] for p in pairs], np.uint32)
    c = np.array([p[1] for p in pairs], np.uint32)
    p = elementwise(f"u32_{op}", ["u32", "u32"], "u32", OPS[op])
    (out,) = run(p, [a, c])
    expect = np.array([_py_u32(op, int(x), int(y)) for x, y in pairs], np.uint32)
    np.testing.assert_array_equal(out, expect)


def test_div_rem_edge_cases_explicit():
    a = np.array([7, -7, 7, -7, I32_MIN, I32_MIN, 5, -5], np.int32)
    c = np.array([2, 2, -2, -2, -1, 0, 0, 0], np.int32)
    div, rem = (run(elementwise(n, ["i32", "i32"], "i32", OPS[n]), [a, c])[0] for n in ("div", "rem"))
    np.testing.assert_array_equal(div, [3, -3, -3, 3, I32_MIN, I32_MIN, 5, -5])
    np.testing.assert_array_equal(rem, [1, -1, 1, -1, 0, 0, 0, 0])


SHIFTS = [0, 1, 5, 31, 32, 33, 63, 100, 0xFFFFFFFF]


@pytest.mark.parametrize("dtype", ["u32", "i32"])
def test_shifts(dtype):
    values = I32_VALUES if dtype == "i32" else U32_VALUES
    pairs = [(v, s) for v in values for s in SHIFTS]
    npd = np.int32 if dtype == "i32" else np.uint32
    a = np.array([p[0] for p in pairs], npd)
    s = np.array([p[1] for p in pairs], np.uint32)
    shl = run(elementwise("shl", [dtype, "u32"], dtype, lambda b, x, y: x << y), [a, s])[0]
    shr = run(elementwise("shr", [dtype, "u32"], dtype, lambda b, x, y: x >> y), [a, s])[0]
    exp_shl, exp_shr = [], []
    for v, k in pairs:
        k &= 31
        if dtype == "i32":
            exp_shl.append(_wrap_i32(v << k))
            exp_shr.append(v >> k)  # Python >> on negative ints is arithmetic
        else:
            exp_shl.append((v << k) % 2**32)
            exp_shr.append(v >> k)
    np.testing.assert_array_equal(shl, np.array(exp_shl, npd))
    np.testing.assert_array_equal(shr, np.array(exp_shr, npd))


def test_neg_abs_not_wrap():
    a = np.array(I32_VALUES, np.int32)
    neg = run(elementwise("neg", ["i32"], "i32", lambda b, x: -x), [a])[0]
    ab = run(elementwise("abs", ["i32"], "i32", lambda b, x: abs(x)), [a])[0]
    inv = run(elementwise("inv", ["i32"], "i32", lambda b, x: ~x), [a])[0]
    sg = run(elementwise("sign", ["i32"], "i32", lambda b, x: x.sign()), [a])[0]
    np.testing.assert_array_equal(neg, [_wrap_i32(-v) for v in I32_VALUES])
    np.testing.assert_array_equal(ab, [_wrap_i32(abs(v)) for v in I32_VALUES])
    np.testing.assert_array_equal(inv, [~v for v in I32_VALUES])
    np.testing.assert_array_equal(sg, [(v > 0) - (v < 0) for v in I32_VALUES])
    assert ab[I32_VALUES.index(I32_MIN)] == I32_MIN


def test_int_min_max_and_bit_binops():
    pairs = [(a, c) for a in I32_VALUES for c in I32_VALUES]
    a = np.array([p[0] for p in pairs], np.int32)
    c = np.array([p[1] for p in pairs], np.int32)
    for fn, ref in ((lambda b, x, y: x.min(y), min), (lambda b, x, y: x.max(y), max),
                    (lambda b, x, y: x & y, lambda x, y: x & y), (lambda b, x, y: x | y, lambda x, y: x | y),
                    (lambda b, x, y: x ^ y, lambda x, y: x ^ y)):
        (out,) = run(elementwise("op", ["i32", "i32"], "i32", fn), [a, c])
        np.testing.assert_array_equal(out, [ref(x, y) for x, y in pairs])
    ua = a.view(np.uint32)
    uc = c.view(np.uint32)
    (out,) = run(elementwise("umin", ["u32", "u32"], "u32", lambda b, x, y: x.min(y)), [ua, uc])
    np.testing.assert_array_equal(out, np.minimum(ua, uc))


def test_comparisons_give_bool():
    a = np.array([1, -2, 3, I32_MIN], np.int32)
    c = np.array([1, 2, -3, I32_MAX], np.int32)
    for fn, ref in ((lambda b, x, y: x < y, np.less), (lambda b, x, y: x <= y, np.less_equal),
                    (lambda b, x, y: x > y, np.greater), (lambda b, x, y: x >= y, np.greater_equal),
                    (lambda b, x, y: x == y, np.equal), (lambda b, x, y: x != y, np.not_equal)):
        (out,) = run(elementwise("cmp", ["i32", "i32"], "bool", fn), [a, c])
        assert out.dtype == np.bool_
        np.testing.assert_array_equal(out, ref(a, c))


def _py_bits(v):
    return [(v >> k) & 1 for k in range(32)]


def test_bit_counting_ops():
    rng = np.random.default_rng(1)
    vals = np.concatenate([np.array(U32_VALUES, np.uint32),
                           rng.integers(0, 2**32, 200, dtype=np.uint64).astype(np.uint32),
                           (np.uint32(1) << np.arange(32, dtype=np.uint32))])
    ones = run(elementwise("ones", ["u32"], "u32", lambda b, x: x.count_ones()), [vals])[0]
    rev = run(elementwise("rev", ["u32"], "u32", lambda b, x: x.reverse_bits()), [vals])[0]
    clz = run(elementwise("clz", ["u32"], "u32", lambda b, x: x.count_leading_zeros()), [vals])[0]
    ctz = run(elementwise("ctz", ["u32"], "u32", lambda b, x: x.count_trailing_zeros()), [vals])[0]
    for k, v in enumerate(int(x) for x in vals):
        bits = _py_bits(v)
        assert ones[k] == sum(bits)
        assert rev[k] == sum(bit << (31 - j) for j, bit in enumerate(bits))
        assert clz[k] == (32 - v.bit_length())
        assert ctz[k] == (32 if v == 0 else (v & -v).bit_length() - 1)
    # i32 operands keep their type and see the same bits
    ivals = vals.view(np.int32)
    iones = run(elementwise("iones", ["i32"], "i32", lambda b, x: x.count_ones()), [ivals])[0]
    irev = run(elementwise("irev", ["i32"], "i32", lambda b, x: x.reverse_bits()), [ivals])[0]
    assert iones.dtype == np.int32
    np.testing.assert_array_equal(iones, ones.astype(np.int32))
    np.testing.assert_array_equal(irev.view(np.uint32), rev)


def test_saturating_float_to_int_casts():
    f = np.array([0.0, 1.9, -1.9, 2.5, -0.5, 3e9, -3e9, 5e9, np.inf, -np.inf, np.nan, 2147483520.0,
                  4294967040.0, 1e-30], np.float32)
    to_i = run(elementwise("f2i", ["f32"], "i32", lambda b, x: x.cast("i32")), [f])[0]
    to_u = run(elementwise("f2u", ["f32"], "u32", lambda b, x: x.cast("u32")), [f])[0]
    np.testing.assert_array_equal(
        to_i,
        np.array([0, 1, -1, 2, 0, I32_MAX, I32_MIN, I32_MAX, I32_MAX, I32_MIN, 0, 2147483520, I32_MAX, 0], np.int32))
    np.testing.assert_array_equal(
        to_u,
        np.array([0, 1, 0, 2, 0, 3000000000, 0, 2**32 - 1, 2**32 - 1, 0, 0, 2147483520, 4294967040, 0], np.uint32))
    with np.errstate(over="ignore"):
        h = f.astype(np.float16)
    h_to_i = run(elementwise("h2i", ["f16"], "i32", lambda b, x: x.cast("i32")), [h])[0]
    np.testing.assert_array_equal(h_to_i[:5], [0, 1, -1, 2, 0])
    assert h_to_i[8] == I32_MAX and h_to_i[9] == I32_MIN and h_to_i[10] == 0


def test_int_casts_and_bool_casts():
    i = np.array([0, 1, -1, I32_MIN, I32_MAX, 16777217], np.int32)
    to_u = run(elementwise("i2u", ["i32"], "u32", lambda b, x: x.cast("u32")), [i])[0]
    to_f = run(elementwise("i2f", ["i32"], "f32", lambda b, x: x.cast("f32")), [i])[0]
    to_b = run(elementwise("i2b", ["i32"], "bool", lambda b, x: x.cast("bool")), [i])[0]
    np.testing.assert_array_equal(to_u, i.view(np.uint32))
    np.testing.assert_array_equal(to_f, i.astype(np.float32))
    np.testing.assert_array_equal(to_b, i != 0)
    u = np.array([0, 1, 0xFFFFFFFF, 0x80000000], np.uint32)
    u_to_i = run(elementwise("u2i", ["u32"], "i32", lambda b, x: x.cast("i32")), [u])[0]
    np.testing.assert_array_equal(u_to_i, u.view(np.int32))
    bo = np.array([True, False, True])
    b_to_u = run(elementwise("b2u", ["bool"], "u32", lambda b, x: x.cast("u32")), [bo])[0]
    b_to_f = run(elementwise("b2f", ["bool"], "f32", lambda b, x: x.cast("f32")), [bo])[0]
    np.testing.assert_array_equal(b_to_u, [1, 0, 1])
    np.testing.assert_array_equal(b_to_f, np.array([1, 0, 1], np.float32))
    f = np.array([0.0, -0.0, 0.5, np.nan], np.float32)
    f_to_b = run(elementwise("f2b", ["f32"], "bool", lambda b, x: x.cast("bool")), [f])[0]
    np.testing.assert_array_equal(f_to_b, [False, False, True, True])  # NaN != 0 (IEEE; not portable to GPUs)


def test_f32_to_f16_rounds_to_nearest_even():
    # 1 + 2**-11 is halfway between two f16 values: ties go to the even one (1.0).
    f = np.array([1 + 2**-11, 1 + 3 * 2**-11, 65504.0, 1e-8, -2.5], np.float32)
    (out,) = run(elementwise("f2h", ["f32"], "f16", lambda b, x: x.cast("f16")), [f])
    np.testing.assert_array_equal(out, f.astype(np.float16))
    assert out[0] == np.float16(1.0) and out[1] == np.float16(1 + 2**-9)


def test_round_half_even_sign_fract():
    f = np.array([0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 3.7, -3.7, 0.0, -0.0], np.float32)
    rnd = run(elementwise("round", ["f32"], "f32", lambda b, x: x.round()), [f])[0]
    np.testing.assert_array_equal(rnd, np.array([0, 2, 2, -0.0, -2, -2, 4, -4, 0, 0], np.float32))
    sg = run(elementwise("sign", ["f32"], "f32", lambda b, x: x.sign()), [f])[0]
    np.testing.assert_array_equal(sg, np.array([1, 1, 1, -1, -1, -1, 1, -1, 0, 0], np.float32))
    assert not np.signbit(sg[-1])  # sign(-0) is +0
    fr = run(elementwise("fract", ["f32"], "f32", lambda b, x: x.fract()), [f])[0]
    np.testing.assert_array_equal(fr, f - np.floor(f))


def test_bitcast():
    f = np.array([1.0, -2.0, 0.1, np.inf], np.float32)
    (u,) = run(elementwise("bc", ["f32"], "u32", lambda b, x: x.bitcast("u32")), [f])
    np.testing.assert_array_equal(u, f.view(np.uint32))
    (i,) = run(elementwise("bc2", ["u32"], "i32", lambda b, x: x.bitcast("i32")), [u])
    np.testing.assert_array_equal(i, f.view(np.int32))
    (back,) = run(elementwise("bc3", ["i32"], "f32", lambda b, x: x.bitcast("f32")), [i])
    np.testing.assert_array_equal(back, f)
    h = np.array([[1.0, -2.0], [0.5, 65504.0]], np.float16)
    (w,) = run(elementwise("bc4", ["vec2<f16>"], "u32", lambda b, x: x.bitcast("u32")), [h])
    np.testing.assert_array_equal(w, h.reshape(-1).view(np.uint32))
    (h2,) = run(elementwise("bc5", ["u32"], "vec2<f16>", lambda b, x: x.bitcast("vec2<f16>")), [w])
    np.testing.assert_array_equal(h2, h)


# --------------------------------------------------------------------------- float unary ops
UNARY_CASES = [
    ("sqrt", np.sqrt, (0.0, 100.0)),
    ("inverse_sqrt", lambda x: np.float32(1) / np.sqrt(x), (0.01, 100.0)),
    ("exp", np.exp, (-20.0, 20.0)),
    ("exp2", np.exp2, (-20.0, 20.0)),
    ("log", np.log, (0.001, 1000.0)),
    ("log2", np.log2, (0.001, 1000.0)),
    ("sin", np.sin, (-10.0, 10.0)),
    ("cos", np.cos, (-10.0, 10.0)),
    ("tan", np.tan, (-1.5, 1.5)),
    ("tanh", np.tanh, (-10.0, 10.0)),
    ("floor", np.floor, (-10.0, 10.0)),
    ("ceil", np.ceil, (-10.0, 10.0)),
    ("round", np.rint, (-10.0, 10.0)),
    ("trunc", np.trunc, (-10.0, 10.0)),
    ("fract", lambda x: x - np.floor(x), (-10.0, 10.0)),
    ("sign", np.sign, (-10.0, 10.0)),
    ("abs", np.abs, (-10.0, 10.0)),
    ("neg", np.negative, (-10.0, 10.0)),
]


@pytest.mark.parametrize("name,ref,domain", UNARY_CASES, ids=[c[0] for c in UNARY_CASES])
def test_float_unary_matches_numpy_float32(name, ref, domain):
    rng = np.random.default_rng(abs(hash(name)) % 2**32)
    x = rng.uniform(*domain, 777).astype(np.float32)
    if name == "neg":
        fn = lambda b, v: -v  # noqa: E731
    elif name == "abs":
        fn = lambda b, v: abs(v)  # noqa: E731
    else:
        fn = lambda b, v: getattr(v, name)()  # noqa: E731
    (out,) = run(elementwise(name, ["f32"], "f32", fn), [x])
    assert out.dtype == np.float32
    np.testing.assert_array_equal(out, ref(x).astype(np.float32))


def test_float_binops():
    rng = np.random.default_rng(3)
    x = rng.uniform(-10, 10, 500).astype(np.float32)
    y = rng.uniform(0.5, 10, 500).astype(np.float32) * np.where(rng.random(500) < 0.5, -1, 1).astype(np.float32)
    cases = [(lambda b, p, q: p / q, x / y), (lambda b, p, q: p % q, np.fmod(x, y)),
             (lambda b, p, q: p.min(q), np.minimum(x, y)), (lambda b, p, q: p.max(q), np.maximum(x, y)),
             (lambda b, p, q: abs(p).pow(q), np.power(np.abs(x), y)), (lambda b, p, q: p * q - p, x * y - x)]
    for fn, expect in cases:
        (out,) = run(elementwise("fb", ["f32", "f32"], "f32", fn), [x, y])
        np.testing.assert_array_equal(out, expect)
    (out,) = run(elementwise("fma", ["f32", "f32"], "f32", lambda b, p, q: b.fma(p, q, p)), [x, y])
    np.testing.assert_array_equal(out, x * y + x)  # unfused, in f32


# --------------------------------------------------------------------------- control flow
def test_if_else_masks():
    b = ProgramBuilder("ifelse", workgroup_size=32)
    x = b.buffer("x", "i32")
    out = b.buffer("out", "i32", access="write")
    i = b.global_index()
    v = b.var("i32", 0)
    xi = b.let(x[i])
    with b.if_(xi > 0):
        with b.if_(xi > 10):
            v.set(xi * 2)
        with b.else_():
            v.set(xi + 100)
    with b.else_():
        v.set(-xi)
    with b.if_(i < out.len()):
        out[i] = v
    p = build(b)
    xs = np.arange(-20, 30, dtype=np.int32)
    (o,) = run(p, [xs])
    np.testing.assert_array_equal(o, np.where(xs > 0, np.where(xs > 10, xs * 2, xs + 100), -xs))


def test_select_and_logical_ops():
    b = ProgramBuilder("sel", workgroup_size=16)
    x = b.buffer("x", "i32")
    out = b.buffer("out", "i32", access="write")
    i = b.global_index()
    with b.if_(i < out.len()):
        xi = b.let(x[i])
        c = (xi > 2) & ~(xi == 5) | (xi < -3)
        out[i] = b.select(c, xi, b.lit(-1, "i32"))
    xs = np.arange(-8, 9, dtype=np.int32)
    (o,) = run(build(b), [xs])
    np.testing.assert_array_equal(o, np.where(((xs > 2) & ~(xs == 5)) | (xs < -3), xs, -1))


def test_for_break_continue():
    b = ProgramBuilder("loops", workgroup_size=8)
    lim = b.buffer("lim", "u32")
    out = b.buffer("out", "u32", access="write")
    i = b.global_index()
    acc = b.var("u32", 0)
    with b.for_range(0, 20) as k:
        with b.if_(k == lim[i]):
            b.break_()
        with b.if_(k % 3 == 0):
            b.continue_()
        acc += k
    with b.if_(i < out.len()):
        out[i] = acc
    lims = np.array([0, 1, 2, 5, 7, 19, 20, 25, 3, 11], np.uint32)
    (o,) = run(build(b), [lims])
    expect = [sum(k for k in range(20) if k < L and k % 3) for L in lims]
    np.testing.assert_array_equal(o, expect)


def test_for_with_varying_bounds_and_negative_step():
    b = ProgramBuilder("down", workgroup_size=4)
    n = b.buffer("n", "i32")
    out = b.buffer("out", "i32", access="write")
    i = b.global_index()
    acc = b.var("i32", 0)
    with b.for_range(n[i], b.lit(0, "i32"), step=-2) as k:
        acc += k
    with b.if_(i < out.len()):
        out[i] = acc
    ns = np.array([0, 1, 5, 10, -3], np.int32)
    (o,) = run(build(b), [ns])
    np.testing.assert_array_equal(o, [sum(range(v, 0, -2)) for v in ns])


def test_nested_loops_break_inner_only():
    b = ProgramBuilder("nested", workgroup_size=4)
    n = b.buffer("n", "u32")
    out = b.buffer("out", "u32", access="write")
    i = b.global_index()
    acc = b.var("u32", 0)
    with b.for_range(0, 5) as a:
        with b.for_range(0, 5) as c:
            with b.if_(c > a):
                b.break_()
            with b.if_(c == n[i]):
                b.continue_()
            acc += 10 * a + c
    with b.if_(i < out.len()):
        out[i] = acc
    ns = np.array([0, 2, 4, 9], np.uint32)
    (o,) = run(build(b), [ns])
    np.testing.assert_array_equal(o, [sum(10 * a + c for a in range(5) for c in range(a + 1) if c != v) for v in ns])


def test_while_collatz():
    b = ProgramBuilder("collatz", workgroup_size=64)
    x = b.buffer("x", "u32")
    out = b.buffer("out", "u32", access="write")
    i = b.global_index()
    with b.if_(i < out.len()):
        v = b.var("u32", x[i])
        steps = b.var("u32", 0)
        with b.while_(v != 1):
            with b.if_(v % 2 == 0):
                v.set(v / 2)
            with b.else_():
                v.set(3 * v + 1)
            steps += 1
        out[i] = steps
    xs = np.arange(1, 1001, dtype=np.uint32)

    def collatz(n):
        s = 0
        while n != 1:
            n = n // 2 if n % 2 == 0 else 3 * n + 1
            s += 1
        return s

    (o,) = run(build(b), [xs])
    np.testing.assert_array_equal(o, [collatz(int(n)) for n in xs])


def test_early_return():
    b = ProgramBuilder("ret", workgroup_size=16)
    out = b.buffer("out", "u32", access="write", count=50)
    i = b.global_index()
    with b.if_(i >= out.len()):
        b.return_()
    with b.if_(i % 3 == 0):
        out[i] = 1
        b.return_()
    with b.for_range(0, 10) as k:
        with b.if_((i % 3 == 1) & (k == 4)):
            out[i] = 100 + k
            b.return_()
    out[i] = 2
    (o,) = run(build(b))
    idx = np.arange(50)
    np.testing.assert_array_equal(o, np.select([idx % 3 == 0, idx % 3 == 1], [1, 104], 2))


def test_loop_cap_raises():
    b = ProgramBuilder("forever", workgroup_size=4)
    out = b.buffer("out", "u32", access="write", count=4)
    v = b.var("u32", 0)
    with b.while_(v < 10):
        v.set(v * 1)
    out[b.global_index()] = v
    with pytest.raises(DispatchError, match="infinite loop"):
        run(build(b), backend=ReferenceBackend(max_loop_iterations=1000))


# --------------------------------------------------------------------------- memory
def test_out_of_bounds_loads_are_zero_and_stores_dropped():
    b = ProgramBuilder("oob", workgroup_size=8)
    x = b.buffer("x", "f32")
    out = b.buffer("out", "f32", access="write")
    out2 = b.buffer("out2", "u32", access="write", count=8)
    i = b.global_index()
    with b.if_(i < out.len()):
        out[i] = x[i + 3]
    out2[i.cast("i32") - 2] = i + 1  # indices -2, -1 dropped; 8, 9 dropped
    out2[i + 1000000] = 7
    xs = np.arange(1, 11, dtype=np.float32)
    o, o2 = run(build(b), [xs], DispatchConfig(grid=(2, 1, 1)))
    np.testing.assert_array_equal(o, np.concatenate([xs[3:], np.zeros(3, np.float32)]))
    np.testing.assert_array_equal(o2, np.arange(3, 11))


def test_workgroup_tree_reduction():
    wg = 256
    b = ProgramBuilder("reduce", workgroup_size=wg)
    x = b.buffer("x", "u32")
    out = b.buffer("out", "u32", access="write")
    sh = b.workgroup_array("sh", "u32", wg)
    lid = b.local_index()
    i = b.global_index()
    sh[lid] = b.select(i < x.len(), x[i], b.lit(0, "u32"))
    b.barrier()
    s = b.var("u32", wg // 2)
    with b.while_(s > 0):
        with b.if_(lid < s):
            sh[lid] = sh[lid] + sh[lid + s]
        b.barrier()
        s.set(s >> 1)
    with b.if_(lid == 0):
        out[b.workgroup_id(0)] = sh[0]
    p = build(b)
    rng = np.random.default_rng(5)
    n = 7 * wg - 100
    xs = rng.integers(0, 2**20, n).astype(np.uint32)
    groups = math.ceil(n / wg)
    (o,) = run(p, [xs], DispatchConfig(counts={"out": groups}, grid=(groups, 1, 1)))
    padded = np.concatenate([xs, np.zeros(groups * wg - n, np.uint32)])
    np.testing.assert_array_equal(o, padded.reshape(groups, wg).sum(axis=1).astype(np.uint32))
    # small chunks (each chunk has its own workgroup arrays) give the same answer
    (o_small,) = run(p, [xs], DispatchConfig(counts={"out": groups}, grid=(groups, 1, 1)),
                     backend=ReferenceBackend(chunk_lanes=300))
    np.testing.assert_array_equal(o_small, o)


def test_workgroup_memory_is_per_workgroup():
    b = ProgramBuilder("wgmem", workgroup_size=4)
    out = b.buffer("out", "u32", access="write", count=12)
    sh = b.workgroup_array("sh", "u32", 4)
    lid = b.local_index()
    sh[3 - lid] = b.workgroup_id(0) * 10 + lid
    b.barrier()
    out[b.global_index()] = sh[lid]
    for chunk in (1, 4, 8, 1 << 20):
        (o,) = run(build(b), config=DispatchConfig(grid=(3, 1, 1)), backend=ReferenceBackend(chunk_lanes=chunk))
        np.testing.assert_array_equal(o, [w * 10 + (3 - lane) for w in range(3) for lane in range(4)])


# --------------------------------------------------------------------------- atomics
def _histogram_program(nbins):
    b = ProgramBuilder("hist", workgroup_size=64)
    x = b.buffer("x", "u32")
    hist = b.buffer("hist", "u32", access="read_write", count=nbins)
    old = b.buffer("old", "u32", access="write")
    i = b.global_index()
    with b.if_(i < x.len()):
        prev = hist.atomic_add(x[i], 1)
        old[i] = prev
    return build(b)


@pytest.mark.parametrize("chunk", [64, 1000, 1 << 20])
def test_histogram_atomic_add(chunk):
    nbins = 37
    rng = np.random.default_rng(7)
    xs = rng.integers(0, nbins, 5000).astype(np.uint32)
    start = rng.integers(0, 100, nbins).astype(np.uint32)
    hist, old = run(_histogram_program(nbins), [xs, start], config=DispatchConfig(grid=(79, 1, 1)),
                    backend=ReferenceBackend(chunk_lanes=chunk))
    np.testing.assert_array_equal(hist, start + np.bincount(xs, minlength=nbins))
    for k in range(nbins):
        lanes = np.flatnonzero(xs == k)  # in lane order, sequential execution gives start, start+1, ...
        np.testing.assert_array_equal(old[lanes], start[k] + np.arange(lanes.size))


def test_atomic_add_sub_values_and_wrap():
    b = ProgramBuilder("addsub", workgroup_size=32)
    idx = b.buffer("idx", "u32")
    val = b.buffer("val", "i32")
    acc = b.buffer("acc", "i32", access="read_write", count=3)
    old = b.buffer("old", "i32", access="write")
    i = b.global_index()
    with b.if_(i < idx.len()):
        with b.if_(i % 2 == 0):
            old[i] = acc.atomic_add(idx[i], val[i])
        with b.else_():
            old[i] = acc.atomic_sub(idx[i], val[i])
    rng = np.random.default_rng(8)
    n = 300
    ids = rng.integers(0, 3, n).astype(np.uint32)
    vals = rng.integers(I32_MIN, I32_MAX, n).astype(np.int32)
    init = np.array([5, I32_MAX, I32_MIN], np.int32)
    acc_out, old_out = run(build(b), [ids, vals, init], DispatchConfig(grid=(10, 1, 1)))
    # the reference runs the even lanes (then-branch) before the odd ones: check that order
    state = [int(v) for v in init]
    expect_old = np.zeros(n, np.int64)
    for lane in list(range(0, n, 2)) + list(range(1, n, 2)):
        k = ids[lane]
        expect_old[lane] = state[k]
        state[k] = _wrap_i32(state[k] + int(vals[lane]) * (1 if lane % 2 == 0 else -1))
    np.testing.assert_array_equal(old_out, expect_old)
    np.testing.assert_array_equal(acc_out, state)


@pytest.mark.parametrize("op", ["min", "max", "and", "or", "xor", "exchange"])
@pytest.mark.parametrize("dtype", ["u32", "i32"])
def test_atomic_rmw_sequential(op, dtype):
    npd = np.uint32 if dtype == "u32" else np.int32
    b = ProgramBuilder("rmw", workgroup_size=16)
    idx = b.buffer("idx", "u32")
    val = b.buffer("val", dtype)
    mem = b.buffer("mem", dtype, access="read_write", count=4)
    old = b.buffer("old", dtype, access="write")
    i = b.global_index()
    with b.if_(i < idx.len()):
        old[i] = getattr(mem, "atomic_" + op)(idx[i], val[i])
    rng = np.random.default_rng(9)
    n = 400
    ids = rng.integers(0, 4, n).astype(np.uint32)
    info = np.iinfo(npd)
    vals = rng.integers(info.min, info.max, n, dtype=np.int64).astype(npd)
    init = rng.integers(info.min, info.max, 4, dtype=np.int64).astype(npd)
    mem_out, old_out = run(build(b), [ids, vals, init], DispatchConfig(grid=(25, 1, 1)))
    f = {"min": min, "max": max, "and": lambda a, c: a & c, "or": lambda a, c: a | c,
         "xor": lambda a, c: a ^ c, "exchange": lambda a, c: c}[op]
    state = [int(v) for v in init]
    expect_old = []
    for lane in range(n):
        k = ids[lane]
        expect_old.append(state[k])
        state[k] = f(state[k], int(vals[lane]))
    np.testing.assert_array_equal(old_out, np.array(expect_old, npd))
    np.testing.assert_array_equal(mem_out, np.array(state, npd))


def test_atomic_compare_exchange():
    b = ProgramBuilder("cas", workgroup_size=8)
    slots = b.buffer("slots", "u32", access="read_write", count=4)
    chain = b.buffer("chain", "u32", access="read_write", count=1)
    old1 = b.buffer("old1", "u32", access="write", count=40)
    old2 = b.buffer("old2", "u32", access="write", count=40)
    i = b.global_index()
    old1[i] = slots.atomic_compare_exchange(i % 4, 0, i + 1)  # first lane per slot claims it
    old2[i] = chain.atomic_compare_exchange(0, i, i + 1)  # succeeds for every lane in order
    s, c, o1, o2 = run(build(b), [np.zeros(4, np.uint32), np.zeros(1, np.uint32)],
                       DispatchConfig(grid=(5, 1, 1)))
    np.testing.assert_array_equal(s, [1, 2, 3, 4])
    lanes = np.arange(40)
    np.testing.assert_array_equal(o1, np.where(lanes < 4, 0, lanes % 4 + 1))
    np.testing.assert_array_equal(c, [40])
    np.testing.assert_array_equal(o2, lanes)


def test_atomic_load_and_workgroup_atomics():
    b = ProgramBuilder("wgatomic", workgroup_size=64)
    x = b.buffer("x", "u32")
    out = b.buffer("out", "u32", access="write")
    total = b.buffer("total", "u32", access="read_write", count=1)
    cnt = b.workgroup_array("cnt", "u32", 1)
    i = b.global_index()
    with b.if_((i < x.len()) & (x[i] % 2 == 1)):
        b.eval(cnt.atomic_add(0, 1))
        b.eval(total.atomic_max(0, x[i]))
    b.barrier()
    with b.if_(b.local_index() == 0):
        out[b.workgroup_id(0)] = cnt.atomic_load(0)
    rng = np.random.default_rng(4)
    xs = rng.integers(0, 1000, 64 * 5).astype(np.uint32)
    o, t = run(build(b), [xs, np.zeros(1, np.uint32)], DispatchConfig(grid=(5, 1, 1), counts={"out": 5}))
    np.testing.assert_array_equal(o, (xs.reshape(5, 64) % 2 == 1).sum(axis=1))
    assert t[0] == xs[xs % 2 == 1].max()


# --------------------------------------------------------------------------- types
def test_vectors():
    b = ProgramBuilder("vecs", workgroup_size=8)
    v4 = b.buffer("v4", "vec4<f32>")
    v3 = b.buffer("v3", "vec3<f32>", access="write")
    v2 = b.buffer("v2", "vec2<u32>", access="write")
    v3i = b.buffer("v3i", "vec3<i32>", access="read_write")
    i = b.global_index()
    with b.if_(i < v4.len()):
        a = b.let(v4[i])
        v3[i] = b.vec("vec3<f32>", a.x + 1.0, a.y * 2.0, a.w) * 2.0
        v2[i] = b.vec("vec2<u32>", i, i * 2) + b.vec("vec2<u32>", 100)
        w = b.let(v3i[i])
        v3i[i] = b.vec("vec3<i32>", w.z, w.y, w.x) - b.vec("vec3<i32>", 1, 2, 3)
    rng = np.random.default_rng(2)
    n = 13
    a4 = rng.standard_normal((n, 4)).astype(np.float32)
    a3i = rng.integers(-100, 100, (n, 3)).astype(np.int32)
    o3, o2, o3i = run(build(b), [a4, a3i])
    assert o3.shape == (n, 3) and o2.shape == (n, 2) and o3i.shape == (n, 3)
    np.testing.assert_array_equal(o3, np.stack([a4[:, 0] + 1, a4[:, 1] * 2, a4[:, 3]], axis=1) * np.float32(2))
    np.testing.assert_array_equal(o2, np.stack([np.arange(n), 2 * np.arange(n)], axis=1) + 100)
    np.testing.assert_array_equal(o3i, a3i[:, ::-1] - np.array([1, 2, 3], np.int32))
    # flat input is accepted too
    o3b, _, _ = run(build(b), [a4.reshape(-1), a3i])
    np.testing.assert_array_equal(o3b, o3)


def test_vector_ops_componentwise():
    b = ProgramBuilder("vops", workgroup_size=8)
    x = b.buffer("x", "vec2<i32>")
    out = b.buffer("out", "vec2<i32>", access="write")
    f = b.buffer("f", "vec4<f16>", access="write")
    i = b.global_index()
    with b.if_(i < x.len()):
        v = b.let(x[i])
        out[i] = (v / b.vec("vec2<i32>", 3, 0)) << b.vec("vec2<u32>", 1, 33)
        f[i] = b.vec("vec4<f32>", v.x.cast("f32"), v.y.cast("f32"), 0.5, 1e6).cast("vec4<f16>")
    xs = np.array([[7, -7], [-9, 4], [I32_MIN, 1]], np.int32)
    o, h = run(build(b), [xs])
    np.testing.assert_array_equal(o, [[4, -14], [-6, 8], [_wrap_i32(_trunc_div(I32_MIN, 3) * 2), 2]])
    assert h.dtype == np.float16 and h.shape == (3, 4)
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(h[:, 0], xs[:, 0].astype(np.float16))  # i32::MIN -> -inf
    assert np.isinf(h[0, 3])


def test_bool_buffers():
    b = ProgramBuilder("bools", workgroup_size=8)
    x = b.buffer("x", "bool")
    y = b.buffer("y", "bool", access="read_write")
    out = b.buffer("out", "bool", access="write")
    i = b.global_index()
    with b.if_(i < x.len()):
        xi = b.let(x[i])
        out[i] = ~xi & (i % 2 == 0)
        y[i] = xi | y[i]
    xs = np.array([True, False, True, True, False, False, True], bool)
    ys = np.array([False, False, True, False, True, False, False], bool)
    o_y, o = run(build(b), [xs, ys])
    assert o.dtype == np.bool_ and o_y.dtype == np.bool_
    np.testing.assert_array_equal(o, ~xs & (np.arange(7) % 2 == 0))
    np.testing.assert_array_equal(o_y, xs | ys)


def test_f16_buffers():
    b = ProgramBuilder("halves", workgroup_size=8)
    x = b.buffer("x", "f16")
    out = b.buffer("out", "f16", access="write")
    out32 = b.buffer("out32", "f32", access="write")
    i = b.global_index()
    with b.if_(i < x.len()):
        xi = b.let(x[i])
        out[i] = xi * xi + 1.0
        out32[i] = (xi / 3.0).sqrt().cast("f32")
    rng = np.random.default_rng(6)
    xs = rng.uniform(0, 30, 11).astype(np.float16)  # odd count: storage is padded
    o, o32 = run(build(b), [xs])
    f32 = np.float32
    sq = (xs.astype(f32) * xs.astype(f32)).astype(np.float16)
    np.testing.assert_array_equal(o, (sq.astype(f32) + f32(1)).astype(np.float16))
    d = (xs.astype(f32) / f32(3)).astype(np.float16)
    np.testing.assert_array_equal(o32, np.sqrt(d.astype(f32)).astype(np.float16).astype(f32))


# --------------------------------------------------------------------------- grid and built-ins
def test_grid_override_3d_builtins():
    wsize = (2, 3, 1)
    grid = (3, 2, 4)
    b = ProgramBuilder("ids", workgroup_size=wsize)
    out = b.buffer("out", "u32", access="write")
    gi = b.global_index()
    names = ["global_id", "local_id", "workgroup_id", "num_workgroups"]
    for k, nm in enumerate(names):
        for ax in range(3):
            out[gi * 13 + k * 3 + ax] = getattr(b, nm)(ax)
    out[gi * 13 + 12] = b.local_index()
    total = 6 * 24
    (o,) = run(build(b), config=DispatchConfig(grid=grid, counts={"out": total * 13}))
    o = o.reshape(total, 13)
    for w in range(24):
        wid = (w % 3, (w // 3) % 2, w // 6)
        for lane in range(6):
            lid = (lane % 2, lane // 2, 0)
            g = w * 6 + lane
            gid = tuple(wid[a] * wsize[a] + lid[a] for a in range(3))
            assert tuple(o[g, 0:3]) == gid
            assert tuple(o[g, 3:6]) == lid
            assert tuple(o[g, 6:9]) == wid
            assert tuple(o[g, 9:12]) == grid
            assert o[g, 12] == lane


def test_grid_larger_than_65535_workgroups():
    b = ProgramBuilder("big", workgroup_size=1)
    out = b.buffer("out", "u32", access="write")
    wid = b.buffer("wid", "u32", access="write")
    i = b.global_index()
    with b.if_(i < out.len()):
        out[i] = i
        wid[i] = b.workgroup_id(0)
    n = 70000
    o, w = run(build(b), config=DispatchConfig(counts={"out": n, "wid": n}))
    np.testing.assert_array_equal(o, np.arange(n))
    np.testing.assert_array_equal(w, np.arange(n))


def test_default_grid_and_chunking_give_same_answer():
    b = ProgramBuilder("chunks", workgroup_size=(4, 2, 1))
    x = b.buffer("x", "f32")
    y = b.buffer("y", "f32", access="write")
    i = b.global_index()
    with b.if_(i < y.len()):
        y[i] = x[i] * 3.0 + b.workgroup_id(0).cast("f32")
    xs = np.linspace(-1, 1, 1003, dtype=np.float32)
    expect = xs * np.float32(3) + (np.arange(1003) // 8).astype(np.float32)
    for chunk in (1, 8, 100, 1 << 20):
        (o,) = run(build(b), [xs], backend=ReferenceBackend(chunk_lanes=chunk))
        np.testing.assert_array_equal(o, expect)


def test_zero_grid_is_a_dispatch_error():
    b = ProgramBuilder("zero", workgroup_size=4)
    x = b.buffer("x", "u32", access="read_write")
    out = b.buffer("out", "u32", access="write", count=3)
    x[b.global_index()] = 9
    out[b.global_index()] = 9
    xs = np.array([1, 2, 3], np.uint32)
    with pytest.raises(DispatchError, match="dimension of 0"):
        run(build(b), [xs], DispatchConfig(grid=(0, 1, 1)))


# --------------------------------------------------------------------------- bad inputs
def test_bad_inputs_raise_dispatch_error():
    b = ProgramBuilder("bad", workgroup_size=4)
    x = b.buffer("x", "f32")
    k = b.buffer("k", "u32", count=2)
    v = b.buffer("v", "vec3<f32>")
    out = b.buffer("out", "f32", access="write")
    i = b.global_index()
    with b.if_(i < out.len()):
        out[i] = x[i] + k[0].cast("f32") + v[i].x
    p = build(b)
    good = [np.zeros(5, np.float32), np.zeros(2, np.uint32), np.zeros((5, 3), np.float32)]
    (o,) = run(p, good)
    assert o.shape == (5,)
    with pytest.raises(DispatchError):
        run(p, good[:2])  # wrong number of inputs
    with pytest.raises(DispatchError):
        run(p, [good[0].astype(np.float64), good[1], good[2]])  # wrong dtype
    with pytest.raises(DispatchError):
        run(p, [good[0], np.zeros(3, np.uint32), good[2]])  # wrong size for a fixed count
    with pytest.raises(DispatchError):
        run(p, [good[0], good[1], np.zeros(7, np.float32)])  # not a whole number of vec3
    with pytest.raises(DispatchError):
        run(p, {"x": good[0], "k": good[1]})  # missing by name


def test_bad_chunk_size():
    with pytest.raises(ValueError):
        ReferenceBackend(chunk_lanes=0)


# --------------------------------------------------------------------------- semantics module
def test_semantics_helpers_directly():
    a = np.array([7, -7, I32_MIN, 5], np.int32)
    c = np.array([-2, 0, -1, 0], np.int32)
    np.testing.assert_array_equal(sem.int_div(a, c), [-3, -7, I32_MIN, 5])
    np.testing.assert_array_equal(sem.int_rem(a, c), [1, 0, 0, 0])
    assert sem.dtype_of(np.zeros((3, 2), np.float16)) is DataType.VEC2_F16
    np.testing.assert_array_equal(sem.cast(np.array([np.nan, 1e10, -1e10], np.float32), DataType.I32),
                                  [0, I32_MAX, I32_MIN])


# --------------------------------------------------------------------------- lane compaction
def _divergent_program():
    """Divergent loops touching every kind of state: vars, the loop variable, break/continue,
    return, workgroup memory, atomics and nested loops."""
    b = ProgramBuilder("divergent", workgroup_size=32)
    x = b.buffer("x", "u32")
    out = b.buffer("out", "u32", access="write")
    counts = b.buffer("counts", "u32", access="read_write", count=8)
    sh = b.workgroup_array("sh", "u32", 32)
    lid = b.local_index()
    i = b.global_index()
    sh[lid] = 0
    b.barrier()
    n = b.let(b.select(i < x.len(), x[i], b.lit(0, "u32")))
    acc = b.var("u32", 0)
    steps = b.var("u32", 0)
    with b.for_range(0, n) as k:
        with b.if_(k == 57):
            b.break_()
        with b.if_(k % 5 == 0):
            b.continue_()
        acc += k * (lid + 1)
        j = b.var("u32", k)
        with b.while_(j > 0):
            steps += 1
            j.set(j / 3)
        b.eval(counts.atomic_add(k % 8, 1))
    sh[lid] = acc
    b.barrier()
    with b.if_(n > 90):
        b.return_()
    with b.if_(i < out.len()):
        out[i] = sh[lid ^ 1] + steps * 1000
    return build(b)


def _divergent_expect(xs):
    n_lanes = len(xs)
    acc = np.zeros(n_lanes, np.int64)
    steps = np.zeros(n_lanes, np.int64)
    counts = np.zeros(8, np.int64)
    for g in range(n_lanes):
        lid = g % 32
        for k in range(int(xs[g])):
            if k == 57:
                break
            if k % 5 == 0:
                continue
            acc[g] += k * (lid + 1)
            j = k
            while j > 0:
                steps[g] += 1
                j //= 3
            counts[k % 8] += 1
    partner = np.arange(n_lanes) ^ 1
    out = np.where(xs > 90, 0, acc[partner] + steps * 1000)
    return out.astype(np.uint32), counts.astype(np.uint32)


@pytest.mark.parametrize("compact_min", [1, 64, 10**9])
@pytest.mark.parametrize("chunk", [96, 1 << 20])
def test_divergent_loops_with_and_without_compaction(compact_min, chunk):
    rng = np.random.default_rng(11)
    xs = (rng.integers(0, 100, 3000) ** 2 // 100).astype(np.uint32)  # skewed trip counts
    backend = ReferenceBackend(chunk_lanes=chunk, compact_min_lanes=compact_min)
    out, counts = run(_divergent_program(), [xs, np.zeros(8, np.uint32)],
                      DispatchConfig(grid=(94, 1, 1)), backend=backend)
    exp_out, exp_counts = _divergent_expect(xs)
    np.testing.assert_array_equal(out, exp_out)
    np.testing.assert_array_equal(counts, exp_counts)


def test_compaction_keeps_atomic_lane_order():
    b = ProgramBuilder("order", workgroup_size=64)
    x = b.buffer("x", "u32")
    slot = b.buffer("slot", "u32", access="read_write", count=1)
    old = b.buffer("old", "u32", access="write")
    i = b.global_index()
    with b.if_(i < x.len()):
        with b.for_range(0, x[i]) as k:
            with b.if_(k + 1 == x[i]):
                old[i] = slot.atomic_add(0, 1)
    xs = np.random.default_rng(12).integers(0, 30, 4096).astype(np.uint32)
    for compact_min in (1, 10**9):
        _, o = run(build(b), [xs, np.zeros(1, np.uint32)], DispatchConfig(grid=(64, 1, 1)),
                   backend=ReferenceBackend(compact_min_lanes=compact_min))
        # atomics of one trip run in lane order; trips run in order
        order = np.lexsort((np.arange(xs.size), xs))
        order = order[xs[order] > 0]
        expect = np.zeros(xs.size, np.uint32)
        expect[order] = np.arange(order.size)
        np.testing.assert_array_equal(o, expect)


def test_large_workgroup_arrays_with_tiny_workgroups():
    # 200000 workgroups of one invocation, each with a 16 KiB workgroup array: chunks are
    # limited by workgroup memory, not only by lanes.
    b = ProgramBuilder("bigshared", workgroup_size=1)
    out = b.buffer("out", "u32", access="write")
    sh = b.workgroup_array("sh", "u32", 4096)
    i = b.global_index()
    sh[4095] = i * 2
    with b.if_(i < out.len()):
        out[i] = sh[4095] + sh[7]
    n = 200000
    (o,) = run(build(b), config=DispatchConfig(counts={"out": n}))
    np.testing.assert_array_equal(o, 2 * np.arange(n, dtype=np.uint32))


def test_atomic_operands_run_in_evaluation_order():
    """index, expected, value: the order of vyre.ir.traverse.CHILD_FIELDS and of the WGSL lowering, which
    hoists atomics nested in the operands in that order (lavapipe gives the same counter and slot). The builder
    binds every atomic to a let where it is written, so only hand-built or decoded programs nest them."""
    from vyre.ir.nodes import Atomic, AtomicOp, Let, Lit
    from vyre.ir.program import BufferDecl, Program
    from vyre.ir.traverse import expr_children
    from vyre.ir.types import Access
    from vyre.ir.validate import check

    def u32(v):
        return Lit(dtype=DataType.U32, value=v)

    def bump():
        return Atomic(op=AtomicOp.ADD, buffer="counter", index=u32(0), value=u32(1))

    swap = Atomic(op=AtomicOp.COMPARE_EXCHANGE, buffer="slot", index=u32(0), expected=bump(), value=bump())
    assert [c.kind for c in expr_children(swap)] == ["lit", "atomic", "atomic"]
    p = Program(name="atomic_order", workgroup_size=(1, 1, 1), buffers=[
        BufferDecl(name="counter", binding=0, dtype=DataType.U32, access=Access.READ_WRITE),
        BufferDecl(name="slot", binding=1, dtype=DataType.U32, access=Access.READ_WRITE),
    ], body=[Let(name="old", value=swap)])
    assert check(p) == []
    counter, slot = run(p, [np.zeros(1, np.uint32), np.zeros(1, np.uint32)])
    # expected runs first (old counter 0), then value (old counter 1): slot held 0 == expected, so it takes 1.
    # Evaluating value first would compare against 1 and leave the slot at 0.
    assert counter.tolist() == [2] and slot.tolist() == [1]
