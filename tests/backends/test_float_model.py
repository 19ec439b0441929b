"""The float model as an oracle (vyre.backends.float_model): it accepts the deviations that
docs/architecture.md ("Float model") allows, measured on lavapipe and the H200, and nothing a real
lowering bug would produce."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from vyre.backends.float_model import check_under_model, run_model
from vyre.ir import ProgramBuilder
from vyre.ir.nodes import Binary, BinOp, Unary, UnOp

from gpu_policy import skip_or_fail
from programs import CASES

F32 = np.float32


def _unary_program(fn, dtype="f32", out="f32", n_in=1):
    b = ProgramBuilder("model_case", 64)
    ins = [b.buffer(f"x{k}", dtype) for k in range(n_in)]
    o = b.buffer("o", out, access="write")
    i = b.global_index()
    with b.if_(i < o.len()):
        o[i] = fn(b, *[x[i] for x in ins])
    return b.build()


def _check(program, inputs, got):
    return check_under_model(program, inputs, [np.asarray(got)], config=(1,))


# ---- the deviations the review measured (lavapipe and H200) are allowed ---------------------------
@pytest.mark.parametrize("name, fn, inputs, gpu_value", [
    ("0.0 / x at x = 0 gives 0 instead of NaN", lambda b, x: b.lit(0.0) / x, [[0.0]], 0.0),
    ("x % 0.0 gives x", lambda b, x: x % b.lit(0.0), [[3.0]], 3.0),
    ("1e-30 * (1e30 * x) reassociated: no overflow", lambda b, x: b.lit(1e-30) * (b.lit(1e30) * x), [[1e10]], 1e10),
    ("(a + b) - 2^32 reassociated", lambda b, x, y: (x + y) - b.lit(4294967296.0), [[4294967296.0], [129.0]],
     float(F32(4294967296.0) + (F32(129.0) - F32(4294967296.0)))),
    ("0.0 + x keeps the sign of -0.0", lambda b, x: b.lit(0.0) + x, [[-0.0]], -0.0),
    ("NaN != NaN folded to false", lambda b, x, y: (x != y).cast("f32"), [[np.nan], [np.nan]], 0.0),
    ("sign(NaN) is 0", lambda b, x: x.sign(), [[np.nan]], 0.0),
    ("sign(subnormal) is 0 (flushed)", lambda b, x: x.sign(), [[1e-45]], 0.0),
    ("1.0 % subnormal (flushed divisor)", lambda b, x: b.lit(1.0) % x, [[1e-44]], float("nan")),
    ("gelu-like 1 + tanh(z) cancellation", lambda b, x: b.lit(0.5) * x * (b.lit(1.0) + x.tanh()), [[-12.0]], -0.0),
    ("fused multiply-add", lambda b, x, y: x * y + b.lit(-1.0), [[1.0 + 2**-12], [1.0 - 2**-12]],
     float(np.float64(1.0 + 2**-12) * np.float64(1.0 - 2**-12) - 1.0)),
])
def test_measured_deviations_are_allowed(name, fn, inputs, gpu_value):
    arrays = [np.array(v, F32) for v in inputs]
    program = _unary_program(fn, n_in=len(arrays))
    report = _check(program, arrays, np.array([gpu_value], F32))
    assert report.ok, (name, report.mismatches)


def test_wrong_results_are_not_allowed():
    x = np.array([1.5, 100.0, -7.0, 3e-5], F32)
    y = np.array([2.25, -0.5, 11.0, 7.0], F32)
    program = _unary_program(lambda b, a, c: a * c + a, n_in=2)
    want = x * y + x
    assert _check(program, [x, y], want).ok
    for k in range(4):
        bad = want.copy()
        bad[k] = np.nextafter(bad[k], np.inf, dtype=F32)
        for _ in range(64):  # 64 ULPs off: far more than reassociation or fusion can explain
            bad[k] = np.nextafter(bad[k], np.inf, dtype=F32)
        report = _check(program, [x, y], bad)
        assert not report.ok and report.compared == 4, (k, report)
    nan = want.copy()
    nan[0] = np.nan  # NaN where the model expects a finite value
    assert not _check(program, [x, y], nan).ok


def test_integers_are_bit_exact():
    program = _unary_program(lambda b, a: a * b.lit(3, "u32") + b.lit(1, "u32"), dtype="u32", out="u32")
    x = np.array([0, 7, 2**31], np.uint32)
    want = x * np.uint32(3) + np.uint32(1)
    assert _check(program, [x], want).ok
    off = want.copy()
    off[1] += 1
    assert not _check(program, [x], off).ok


def test_an_unspecified_branch_poisons_the_run():
    """A branch on a comparison the bound cannot decide: the GPU may take either side."""
    b = ProgramBuilder("branchy", 64)
    x = b.buffer("x", "f32")
    o = b.buffer("o", "u32", access="write")
    i = b.global_index()
    with b.if_(i < o.len()):
        with b.if_((x[i] * b.lit(3.0)) / b.lit(3.0) < x[i]):
            o[i] = b.lit(1, "u32")
    program = b.build()
    [out] = run_model(program, [np.array([0.1, 5.0], F32)], (1,))
    assert out.unspecified.all()


# ---- the catalogue: every program's reference and GPU results satisfy the model ----------------
@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_catalogue_satisfies_the_model(case, gpu, reference):
    if "shader-f16" in case.needs and not gpu.supports_f16():
        skip_or_fail("adapter lacks shader-f16")
    program, inputs, config = case.build()
    for backend in (reference, gpu):
        got = backend.dispatch(program, inputs, config)
        report = check_under_model(program, inputs, got, config)
        assert report.ok, (type(backend).__name__, report.mismatches)
    # the model leaves little open on these inputs (sin/cos outside [-pi, pi] are WGSL-unspecified)
    assert report.compared >= 0.3 * (report.compared + report.unspecified), report


_BIN_SWAP = {BinOp.ADD: BinOp.SUB, BinOp.SUB: BinOp.ADD, BinOp.MUL: BinOp.DIV, BinOp.DIV: BinOp.MUL,
             BinOp.MIN: BinOp.MAX, BinOp.MAX: BinOp.MIN, BinOp.LT: BinOp.LE, BinOp.GT: BinOp.GE,
             BinOp.REM: BinOp.DIV, BinOp.POW: BinOp.MUL}
_UN_SWAP = {UnOp.FLOOR: UnOp.CEIL, UnOp.CEIL: UnOp.FLOOR, UnOp.SIN: UnOp.COS, UnOp.COS: UnOp.SIN,
            UnOp.EXP: UnOp.EXP2, UnOp.LOG: UnOp.LOG2, UnOp.SQRT: UnOp.INVERSE_SQRT, UnOp.TANH: UnOp.SIN,
            UnOp.ROUND: UnOp.TRUNC, UnOp.FRACT: UnOp.ABS, UnOp.NEG: UnOp.ABS}


def _mutants(program):
    """Programs with one float operator swapped for a wrong one: what a lowering bug looks like."""
    from vyre.ir.traverse import CHILD_FIELDS  # noqa: F401  (the walk below mirrors its fields)

    found = []

    def walk(node, path):
        if isinstance(node, (Binary, Unary)):
            table = _BIN_SWAP if isinstance(node, Binary) else _UN_SWAP
            if node.op in table:
                found.append((path, table[node.op]))
        for name in (f.name for f in dataclasses.fields(node)):
            v = getattr(node, name)
            items = v if isinstance(v, list) else [v]
            for k, item in enumerate(items):
                if hasattr(item, "kind"):
                    walk(item, path + ((name, k if isinstance(v, list) else None),))

    for k, s in enumerate(program.body):
        walk(s, (("body", k),))
    for path, op in found:
        yield _replace(program, path, op)


def _replace(node, path, op):
    if not path:
        return dataclasses.replace(node, op=op)
    (name, k), rest = path[0], path[1:]
    v = getattr(node, name)
    if k is None:
        return dataclasses.replace(node, **{name: _replace(v, rest, op)})
    items = list(v)
    items[k] = _replace(items[k], rest, op)
    return dataclasses.replace(node, **{name: items})


def test_operator_mutations_are_caught(reference):
    """Run each float catalogue program with one operator swapped (on the reference) and check the
    result against the model of the original: every mutant whose outputs differ must be caught."""
    caught = escaped = 0
    misses = []
    for case in CASES:
        if case.needs:
            continue
        program, inputs, config = case.build()
        if not any(d.dtype.is_float for d in program.buffers):
            continue
        original = reference.dispatch(program, inputs, config)
        for mutant in _mutants(program):
            got = reference.dispatch(mutant, inputs, config)
            if all(np.array_equal(g, w, equal_nan=True) for g, w in zip(got, original)):
                continue  # the swap makes no difference on these inputs
            if check_under_model(program, inputs, got, config).ok:
                escaped += 1
                misses.append(case.name)
            else:
                caught += 1
    assert caught >= 35, caught
    assert escaped == 0, misses


def test_sign_of_zero_is_exact_only_where_no_driver_may_differ():
    """A bitcast shows a zero's sign: exact for a selected literal (lavapipe's miscompiled select
    gives -0.0 there and must fail), open for min/max of zeros and for arithmetic."""
    def program(fn):
        b = ProgramBuilder("zero_sign", 64)
        x = b.buffer("x", "f32")
        o = b.buffer("o", "u32", access="write")
        i = b.global_index()
        with b.if_(i < o.len()):
            o[i] = fn(b, x[i]).bitcast("u32")
        return b.build()

    x = [np.array([-0.0, 0.0], F32)]
    minus_zero = np.array([0x80000000, 0x80000000], np.uint32)
    selected = program(lambda b, v: b.select(v > b.lit(1.0), b.lit(-1.0), b.lit(0.0)))
    assert not check_under_model(selected, x, [minus_zero], (1,)).ok
    assert check_under_model(selected, x, [np.zeros(2, np.uint32)], (1,)).ok
    for fn in (lambda b, v: b.min(v, b.lit(0.0)), lambda b, v: v + b.lit(0.0), lambda b, v: v.ceil()):
        assert check_under_model(program(fn), x, [minus_zero], (1,)).ok
