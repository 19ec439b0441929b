"""docs/ops.md's tolerance column (issue 27): how each op's tolerance grows with its params (the rule the
op declares, or one derived from two witnesses) and a worked value at a typical size, both taken from the
OpSpec so the page cannot drift from tolerance_for."""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

import pytest

from vyre import conform
from vyre.ops.registry import OpSpec, Witness, all_ops, get, rel


def _cells() -> dict[str, str]:
    cells = {}
    for line in conform.catalogue_markdown().splitlines():
        m = re.match(r"\| `([^`]+)` \| `[^`]+` \|", line)
        if m:
            cells[m.group(1)] = line.split(" | ")[5].replace("\\|", "|")
    return cells


def _largest(ws: list[Witness]) -> Witness:
    return max(ws, key=lambda w: sum(a.size for a in w.inputs))


def test_every_op_prints_its_tolerance_at_its_largest_witness() -> None:
    # before: the column printed the first witness's tolerance (scan's n = 1 value, matmul's k = 1 value)
    cells = _cells()
    for spec in all_ops():
        groups: dict[str, list[Witness]] = {}
        for w in spec.witnesses():
            groups.setdefault(str(w.params.get("dtype", "")), []).append(w)
        for dtype, ws in groups.items():
            worked = spec.tolerance_of(_largest(ws).params).describe()
            assert worked in cells[spec.id], (spec.id, dtype, worked, cells[spec.id])


def test_size_dependent_ops_print_their_rule() -> None:
    cells = _cells()
    assert "rtol=2^-20 atol=k·2^-22 (e.g. rtol=9.53674e-07 atol=3.05176e-05 at k=128)" in cells["matmul"]
    assert "atol=(c·kh·kw + 1)·2^-22" in cells["conv2d"] and "at c=" in cells["conv2d"]
    for op in ("scan.inclusive", "scan.exclusive"):
        assert "f32: rtol=(h + 2)·2^-23 atol=(h + 1)·2^-23·n" in cells[op] and "at n=262144)" in cells[op]
        assert cells[op].startswith("u32: bit-exact; i32: bit-exact; f32: ")
    assert "atol=(h + 1)·2^-23·n" in cells["reduce.sum"] and "at shape=(262144,), axis=None" in cells["reduce.sum"]
    # ops without a declared rule: derived from the smallest and the largest witness
    assert cells["fft.fft"].startswith("depends on the params: rtol=0 atol=")
    assert "at n=4096, batch=1" in cells["fft.fft"]
    # constant tolerances are printed as before
    assert cells["bits.clz"] == "bit-exact"
    assert cells["map.rsqrt"] == "f32: <= 3 ulp; f16: <= 1 ulp"


def _eval(expr: str, params: dict[str, Any]) -> float:
    py = expr.replace("·", "*").replace("^", "**")
    env = {k: v for k, v in params.items() if isinstance(v, (int, list))}
    return float(eval(py, {"__builtins__": {}}, env))  # noqa: S307 - our own rule text


# rules that are formulas in the params alone: evaluated, they must equal tolerance_for (so the text is right)
FORMULAS = ["matmul", "matmul.f16", "matmul.f16_fast", "matmul.batched", "conv2d", "nn.avg_pool2d",
            "nn.embedding_bag"]
ISSUE_SIZES = {"matmul": {"m": 64, "k": 512, "n": 64}}  # the sizes issue 27 checked against the page


@pytest.mark.parametrize("op_id", FORMULAS)
def test_declared_formulas_match_tolerance_for(op_id: str) -> None:
    spec = get(op_id)
    cases = [w.params for w in spec.witnesses()] + ([ISSUE_SIZES[op_id]] if op_id in ISSUE_SIZES else [])
    for params in cases:
        rule = spec.tolerance_rule_of(params)
        assert rule is not None
        if params.get("mode") == "max":
            assert rule.startswith("bit-exact for mode='max'") and spec.tolerance_of(params).kind == "exact"
            continue
        m = re.fullmatch(r"rtol=(\S+) atol=(.+?)(?: \(precision='fast': atol=(.+)\))?", rule.split("else ")[-1])
        assert m, rule
        atol = m.group(3) if params.get("precision") == "fast" else m.group(2)  # fast: the parenthesised atol
        tol = spec.tolerance_of(params)
        assert tol.rtol == pytest.approx(_eval(m.group(1), params), rel=1e-12), (params, rule)
        assert tol.atol == pytest.approx(_eval(atol, params), rel=1e-12), (params, rule)


def test_matmul_rule_at_the_issue_size() -> None:
    # 64x512x64: the page's old value (k = 1) was 512 times too tight
    spec = get("matmul")
    assert spec.tolerance_of({"m": 64, "k": 512, "n": 64}).atol == 512 * 2.0 ** -22


def test_rule_may_be_a_string_a_callable_or_derived() -> None:
    base = get("matmul")
    assert base.tolerance_rule_of({"k": 3}) == "rtol=2^-20 atol=k·2^-22"
    assert get("scan.inclusive").tolerance_rule_of({"n": 8, "dtype": "u32"}) is None
    spec = replace(base, tolerance_rule=None, tolerance_for=lambda p: rel(0.0, p["k"] * 2.0 ** -22))
    derived = conform.catalogue_markdown([spec])
    assert ("depends on the params: rtol=0 atol=2.38419e-07 at m=1, k=1, n=1; rtol=0 atol=3.05176e-05 at m=128, "
            "k=128, n=128 |") in derived
    assert isinstance(spec, OpSpec)
