"""The 64-bit types (f64, i64, u64) through the IR, the lowering, the reference interpreter and the GPU.

Integers are compared bit-exactly (wrapping, division by 0 and -1, shifts by the low 6 bits); f64
arithmetic (+ - * / sqrt fma floor ...) exactly against numpy; the software elementary functions of the
lowering (templates/wide.wgsl.j2) within stated ulps of numpy: exp, exp2, log, log2 1 ulp; sin, cos 2 ulp
(|x| < 1e5); tan 3; tanh 6; pow (2 + 1.5 |y ln x|) ulp. The reference interpreter computes them with numpy.
"""

from __future__ import annotations

import numpy as np
import pytest
from extras import require_adapter

from vyre import ProgramBuilder
from vyre.errors import UnsupportedFeatureError, ValidationError
from vyre.ir.types import WIDE_TYPES, DataType
from vyre.lower import NONSTANDARD_FEATURES, lower, refuse_nonstandard
from vyre.lower.literals import literal
from vyre.lower.wgsl import NONSTANDARD_MARK


def _map(dt, fn, out=None, name="m64"):
    """z[i] = fn(b, x[i], y[i]) over two inputs of type ``dt``."""
    b = ProgramBuilder(name, workgroup_size=64)
    x, y = b.buffer("x", dt), b.buffer("y", dt)
    z = b.buffer("z", out or dt, access="write")
    i = b.global_index()
    with b.if_(i < z.len()):
        z[i] = fn(b, x[i], y[i])
    return b.build()


def _run(backend, program, *inputs):
    return backend.dispatch(program, list(inputs))[0]


# --------------------------------------------------------------------------- types and typing
def test_types_layout_and_features():
    assert [d.value for d in WIDE_TYPES] == ["f64", "i64", "u64"]
    for d, np_name, feature in ((DataType.F64, "float64", "shader-f64"), (DataType.I64, "int64", "shader-int64"),
                                (DataType.U64, "uint64", "shader-int64")):
        assert d.bits == 64 and d.is_64bit and d.element_nbytes == 8 and d.feature == feature
        assert d.numpy_dtype == np.dtype(np_name) and DataType.parse(np_name) is d
        assert DataType.parse(np.dtype(np_name)) is d
    assert DataType.F64.is_float and DataType.I64.is_signed and not DataType.U64.is_signed and DataType.U64.is_int
    assert DataType.F32.feature is None and DataType.F16.feature == "shader-f16" and not DataType.F32.is_64bit


def test_numpy_64bit_scalars_keep_their_old_literal_types():
    """b.lit(np.float64(x)) / b.lit(np.int64(n)) stay f32 as before the 64-bit types existed (no program changes)."""
    b = ProgramBuilder("lits")
    assert b.lit(np.float64(1.5)).node.dtype is DataType.F32
    assert b.lit(np.int64(3)).node.dtype is DataType.F32  # as before (not a Python int)
    assert b.lit(3, "i64").node.dtype is DataType.I64


@pytest.mark.parametrize("dt, value, ok", [("i64", -(2**63), True), ("i64", 2**63, False), ("u64", 2**64 - 1, True),
                                           ("u64", -1, False), ("i64", 2**40, True)])
def test_literal_ranges(dt, value, ok):
    def build():
        return _map(dt, lambda b, a, c: a + b.lit(value, dt))

    if ok:
        build()
    else:
        with pytest.raises(ValidationError, match=f"does not fit in {dt}"):
            build()


@pytest.mark.parametrize("make, match", [
    (lambda b, a, c: a.count_ones(), "32-bit integer operand"),
    (lambda b, a, c: b.subgroup_add(a), "32-bit"),
])
def test_refused_operations_are_located(make, match):
    with pytest.raises(ValidationError, match=match) as info:
        _map("u64", make)
    assert "z" in str(info.value) or "body" in str(info.value)


def test_f16_to_64bit_cast_is_refused():
    with pytest.raises(ValidationError, match="through f32"):
        _map("f64", lambda b, a, c: a.cast("f16"), out="f16")


def test_literal_spellings():
    assert literal(DataType.I64, -(2**63)) == "(-9223372036854775807li - 1li)"
    assert literal(DataType.I64, -5) == "(-5li)" and literal(DataType.U64, 2**64 - 1) == "18446744073709551615lu"
    assert literal(DataType.F64, 0.1) == "0.1lf" and literal(DataType.F64, 1e300) == "1e+300lf"
    assert literal(DataType.F64, 2.0) == "2.0lf" and literal(DataType.F64, -2.5) == "(-2.5lf)"
    assert literal(DataType.F64, -0.0) == "bitcast<f64>(0x8000000000000000lu)"
    assert literal(DataType.F64, float("inf")) == "_nonfinite_f64(0x7ff0000000000000lu)"


def test_lowering_reports_features_and_marks_the_shader():
    low = lower(_map("f64", lambda b, a, c: a * c))
    assert low.features == {"shader-f64"} and low.wgsl.split("\n")[1].startswith(NONSTANDARD_MARK)
    low = lower(_map("i64", lambda b, a, c: (a + c).cast("f64"), out="f64"))
    assert low.features == {"shader-f64", "shader-int64"} == NONSTANDARD_FEATURES
    low32 = lower(_map("f32", lambda b, a, c: a * c))
    assert low32.features == frozenset() and NONSTANDARD_MARK not in low32.wgsl
    with pytest.raises(UnsupportedFeatureError, match="not standard WebGPU"):
        refuse_nonstandard(low, "export")
    refuse_nonstandard(low32, "export")


def test_export_refuses_64bit_programs(tmp_path):
    from vyre.export import export_program

    with pytest.raises(UnsupportedFeatureError, match="not standard WebGPU"):
        export_program(_map("u64", lambda b, a, c: a ^ c), tmp_path)
    assert not list(tmp_path.iterdir())


def test_tint_check_leaves_out_nonstandard_sources():
    import tint_check

    report = tint_check.check([("wide", lower(_map("i64", lambda b, a, c: a - c)).wgsl)])
    assert report.checked == 0 and "shader-int64" in report.nonstandard["wide"]
    assert "not standard WebGPU" in report.describe_nonstandard()


# --------------------------------------------------------------------------- semantics on both backends
@pytest.fixture(params=["reference", "wgpu"])
def backend(request, ref_backend):
    b = ref_backend if request.param == "reference" else request.getfixturevalue("gpu")
    caps = b.capabilities()
    require_adapter(caps.f64 and caps.int64, "shader-f64 / shader-int64")
    return b


I64 = np.array([5, -7, -(2**63), 2**62, 3, -1, 0, 123456789012345, 2**63 - 1, -(2**53 + 1)], dtype=np.int64)
I64B = np.array([2, 2, -1, 3, 0, -1, 5, -7, 2, 65], dtype=np.int64)

INT_CASES = {
    "add": (lambda b, a, c: a + c, lambda a, c: a + c),
    "mul": (lambda b, a, c: a * c, lambda a, c: a * c),
    "sub_min": (lambda b, a, c: a - c + b.lit(-(2**63), "i64"), None),
    "div": (lambda b, a, c: a / c, None),
    "rem": (lambda b, a, c: a % c, None),
    "shl": (lambda b, a, c: a << c.cast("u32"), None),
    "shr": (lambda b, a, c: a >> c.cast("u32"), None),
    "max": (lambda b, a, c: b.max(a, c), lambda a, c: np.maximum(a, c)),
    "min": (lambda b, a, c: b.min(a, c), lambda a, c: np.minimum(a, c)),
    "xor": (lambda b, a, c: a ^ c, lambda a, c: a ^ c),
}


def _int_expect(name, a, c):
    """numpy (Python ints for the cases numpy cannot do) with vyre's rules: wrapping, x / 0 = x, x % 0 = 0,
    shifts by the low 6 bits, truncating division."""
    bits = 64
    mod = 2**bits
    signed = a.dtype.kind == "i"
    out = []
    for x, y in zip(a.tolist(), c.tolist()):
        if name == "sub_min":
            v = x - y - 2**63
        elif name == "div":
            v = x if y == 0 else (abs(x) // abs(y)) * (1 if (x < 0) == (y < 0) else -1)
        elif name == "rem":
            v = 0 if y == 0 else abs(x) % abs(y) * (1 if x >= 0 else -1)
        elif name == "shl":
            v = x << (y % 2**32 & 63)
        else:  # shr
            v = x >> (y % 2**32 & 63)
        v %= mod
        out.append(v - mod if signed and v >= 2**63 else v)
    return np.array(out, dtype=a.dtype)


@pytest.mark.parametrize("dt", ["i64", "u64"])
@pytest.mark.parametrize("case", sorted(INT_CASES))
def test_integer_ops_bit_exact(backend, dt, case):
    build, ref = INT_CASES[case]
    a, c = (I64, I64B) if dt == "i64" else (I64.view(np.uint64), I64B.view(np.uint64))
    if dt == "u64" and case == "sub_min":
        build = lambda b, x, y: x - y + b.lit(2**63, "u64")  # noqa: E731
    got = _run(backend, _map(dt, build), a, c)
    with np.errstate(over="ignore"):
        want = ref(a, c) if ref is not None else _int_expect(case, a, c)
    assert got.dtype == a.dtype and np.array_equal(got, want), (got, want)


@pytest.mark.parametrize("dt", ["i64", "u64"])
def test_integer_unary(backend, dt):
    a = I64 if dt == "i64" else I64.view(np.uint64)
    got = _run(backend, _map(dt, lambda b, x, y: ~x + (abs(x) if dt == "i64" else x)), a, a)
    with np.errstate(over="ignore"):
        want = ~a + (np.abs(a) if dt == "i64" else a)
    assert np.array_equal(got, want)


def _FMA(b, a, c):  # noqa: N802 - a named case
    return b.fma(a, c, c)


F64 = np.array([1.5, -2.25, 1e300, -0.0, np.inf, 3.0, 7.0, 1e-310, np.nan, 0.1, 2.0**-1074, -1e-300])
F64B = np.array([0.5, 3.0, 1e-300, 2.0, 1.0, 0.0, -3.0, 2.0, 1.0, 0.3, 0.5, 1e300])


@pytest.mark.parametrize("build, ref", [
    (lambda b, a, c: a / c - b.lit(0.1, "f64"), lambda a, c: a / c - 0.1),  # no product: a GPU may fuse a*c+d
    (lambda b, a, c: a * c, lambda a, c: a * c),
    (_FMA, lambda a, c: a * c + c),
    (lambda b, a, c: abs(a).sqrt() + a.floor() - c.ceil(), lambda a, c: np.sqrt(np.abs(a)) + np.floor(a) - np.ceil(c)),
    (lambda b, a, c: (a * 10).round() + (a * 10).trunc(), lambda a, c: np.rint(a * 10) + np.trunc(a * 10)),
    (lambda b, a, c: b.max(a, c) - b.min(a, c), lambda a, c: np.maximum(a, c) - np.minimum(a, c)),
    (lambda b, a, c: a % c, np.fmod),
    (lambda b, a, c: b.select(a < c, a, -c), lambda a, c: np.where(a < c, a, -c)),
])
def test_f64_arithmetic_exact(backend, build, ref):
    a, c = F64[[0, 1, 2, 3, 5, 6, 7, 9, 10, 11]], F64B[[0, 1, 2, 3, 5, 6, 7, 9, 10, 11]]  # finite operands
    got = _run(backend, _map("f64", build), a, c)
    with np.errstate(all="ignore"):
        want = ref(a, c)
    if build is _FMA:  # the reference rounds the product first; a GPU may fuse (the H200 does): 1 ulp
        assert (np.abs(got - want) <= np.spacing(np.abs(want))).all(), (got, want)
        return
    assert np.array_equal(got, want, equal_nan=True), (got, want)


def test_f64_remainder_is_exact_for_large_quotients(backend):
    a = np.array([1e300, 5e-324 * 7, -1e18 + 3.0, 2.0**1000 + 2.0**948])
    c = np.array([3.0, 5e-324 * 2, 7.0, 0.1])
    assert np.array_equal(_run(backend, _map("f64", lambda b, x, y: x % y), a, c), np.fmod(a, c))


CAST_VALUES = {
    "f64": np.array([1.5, -2.7, 1e300, -1e300, np.inf, -0.0, 9.3e18, -9.3e18, 2.0**63, 4294967295.7,
                     -2147483648.9, 1.8e19, 5e-324, -np.inf]),
    "f32": np.array([1.5, -2.7, 3e38, -3e38, np.inf, -0.0, 9.3e18, -9.3e18, 2.0**63, 4294967295.7, -2147483648.9,
                     1.8e19, 1e-45, -np.inf], dtype=np.float32),
    "i64": np.array([0, -1, 2**63 - 1, -(2**63), 2**53 + 1, -(2**53 + 1), 2**32, 2**31, -(2**31) - 1, 7,
                     123456789123, -5, 1, 2**40], dtype=np.int64),
    "i32": np.array([0, -1, 2**31 - 1, -(2**31), 5, -5, 7, 8, 9, 10, 11, 12, 13, 14], dtype=np.int32),
    "u32": np.array([0, 1, 2**32 - 1, 2**31, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14], dtype=np.uint32),
    "bool": np.array([True, False] * 7),
}
CAST_VALUES["u64"] = CAST_VALUES["i64"].view(np.uint64)


@pytest.mark.parametrize("src", sorted(CAST_VALUES))
def test_casts_to_and_from_64bit(backend, ref_backend, src):
    """Every cast between a 64-bit type and the others (NaN left out: lavapipe's x != 0.0 is false for NaN,
    f32 alike): float -> int truncates and saturates; int -> int wraps (sign-extends signed sources)."""
    a = CAST_VALUES[src]
    for dst in ("f64", "i64", "u64", "f32", "i32", "u32", "bool"):
        if dst == src or not ({src, dst} & {"f64", "i64", "u64"}):
            continue
        got = _run(backend, _map(src, lambda b, x, y, d=dst: x.cast(d), out=dst), a, a)
        want = np.asarray(a)
        with np.errstate(all="ignore"):
            if dst == "bool":
                want = want != 0
            elif np.dtype(DataType(dst).numpy_dtype).kind in "iu" and want.dtype.kind == "f":
                info = np.iinfo(DataType(dst).numpy_dtype)
                t = np.trunc(want.astype(np.float64))
                want = np.array([info.max if v >= info.max + 1.0 else info.min if v <= info.min else int(v)
                                 for v in t.tolist()], dtype=DataType(dst).numpy_dtype)
            else:
                want = want.astype(DataType(dst).numpy_dtype)
        assert np.array_equal(got, want), (src, dst, got, want)


@pytest.mark.parametrize("src, dst", [("f64", "u64"), ("i64", "f64"), ("f64", "vec2<u32>"), ("u64", "vec2<f32>"),
                                      ("vec2<u32>", "f64"), ("vec2<i32>", "i64")])
def test_bitcasts_keep_the_bits(backend, src, dst):
    raw = CAST_VALUES["f64"].view(np.uint64)
    a = raw.view(np.uint32).reshape(-1, 2) if src.startswith("vec") else raw.view(DataType(src).numpy_dtype)
    if src == "vec2<i32>":
        a = a.view(np.int32)
    got = _run(backend, _map(src, lambda b, x, y: x.bitcast(dst), out=dst), a, a)
    assert np.array_equal(np.asarray(got).view(np.uint64).reshape(-1), raw)


def test_literals_reach_the_shader_exactly(backend):
    vals = [("f64", -0.0), ("f64", float("nan")), ("f64", float("-inf")), ("f64", 5e-324),
            ("f64", 1.7976931348623157e308), ("f64", 0.1), ("i64", -(2**63)), ("u64", 2**64 - 1)]
    for dt, v in vals:
        program = _map("f64", lambda b, a, c, dt=dt, v=v: a * 0 + b.lit(v, dt).cast("f64") if dt != "f64"
                       else b.lit(v, dt), name=f"lit_{dt}")
        got = _run(backend, program, F64[:2], F64[:2])
        want = np.float64(float(v) if dt == "f64" else np.array(v, dtype=DataType(dt).numpy_dtype).astype(np.float64))
        assert got[0].tobytes() == np.float64(want).tobytes(), (dt, v, got)


def _ulps(got, want):
    got, want = np.asarray(got), np.asarray(want)
    same = (got == want) | (np.isnan(got) & np.isnan(want))
    fin = np.isfinite(got) & np.isfinite(want) & ~same
    assert (same | fin).all(), (got[~(same | fin)], want[~(same | fin)])
    d = np.abs(got[fin] - want[fin]) / np.spacing(np.maximum(np.abs(want[fin]), 2.0**-1022))
    return float(d.max()) if d.size else 0.0


_rng = np.random.default_rng(64)
_X = np.concatenate([_rng.uniform(-700, 700, 512), _rng.standard_normal(512), _rng.uniform(-1e-5, 1e-5, 32),
                     [0.0, -0.0, np.inf, -np.inf, np.nan, 709.7, -745.0, -740.0, 1e-320]])
_POS = np.concatenate([np.abs(_X), np.exp(_rng.uniform(-700, 700, 512)), [5e-324, 1.0, 0.5, 2.0, 1e308]])
_TRIG = np.concatenate([_rng.uniform(-1e5, 1e5, 512), _rng.uniform(-4, 4, 512),
                        [0.0, -0.0, np.pi, np.pi / 2, np.inf, np.nan, 1e-300]])


@pytest.mark.parametrize("name, data, ulps", [("exp", _X, 1), ("exp2", _X * 1.44, 1), ("log", _POS, 1),
                                              ("log2", _POS, 1), ("sin", _TRIG, 2), ("cos", _TRIG, 2),
                                              ("tan", _TRIG, 3), ("tanh", _X / 20, 6)])
def test_f64_elementary_functions(backend, name, data, ulps):
    got = _run(backend, _map("f64", lambda b, a, c: getattr(a, name)(), name=f"f64_{name}"), data, data)
    with np.errstate(all="ignore"):
        want = getattr(np, name)(data)
    assert _ulps(got, want) <= ulps


def test_f64_pow(backend):
    x = np.concatenate([_POS[:600], [-2.0, -2.0, -8.0, 0.0, 0.0, np.inf, 1.0, 1.0]])
    y = np.concatenate([_rng.uniform(-3, 3, 600), [3.0, 0.5, 1 / 3, -1.0, 2.0, -1.0, np.nan, 1e300]])
    got = _run(backend, _map("f64", lambda b, a, c: a ** c), x, y)
    with np.errstate(all="ignore"):
        want = np.power(x, y)
        bound = 2 + 1.5 * np.abs(y * np.log(np.abs(x)))
    ok = np.isfinite(want) & np.isfinite(got)
    err = np.abs(got[ok] - want[ok]) / np.spacing(np.abs(want[ok]))
    lim = np.where(np.isfinite(bound[ok]), bound[ok], 2)
    assert (err <= lim).all(), (x[ok][err > lim], y[ok][err > lim], err[err > lim])
    assert np.array_equal(got[~ok], want[~ok], equal_nan=True)
