"""Every WGSL vyre generates compiles under a second, independent compiler: Dawn's Tint.

The GPU tests compile the lowering's WGSL with naga (wgpu). Here the same WGSL goes through Tint
(npm package ``webgpu`` on Dawn's null backend, see tests/tint_check.py): createShaderModule and
createComputePipeline(layout "auto") must report no error. Each test sends all its sources to one
Node.js process and fails listing every rejected program with Tint's messages. Covered: every
op's programs (every witness's build params), the parity catalogue (tests/programs.py) and a
seeded sample of fuzzed programs (tests/fuzz/strategies.py). tests/wgsl_record.py checks, in
the same way, every WGSL lowered anywhere in the test session.

Without Node.js or the package the tests skip (``make test`` installs both), under CI=true they fail.
"""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path

import pytest
import tint_check

from vyre.errors import VyreError
from vyre.ir.program import Program
from vyre.lower import lower
from vyre.ops.registry import all_ops

from programs import CASES

FUZZ_DIR = Path(__file__).resolve().parent.parent / "fuzz"
FUZZ_PER_FAMILY = 40  # x 5 families: 200 programs


def _collect(named_programs) -> dict[str, str]:
    """{name: wgsl}, one entry per distinct WGSL (the first name that produced it)."""
    by_wgsl: dict[str, str] = {}
    seen: set[str] = set()
    for name, program in named_programs:
        if program.fingerprint not in seen:  # witnesses often build the same program
            seen.add(program.fingerprint)
            by_wgsl.setdefault(lower(program).wgsl, name)
    return {name: wgsl for wgsl, name in by_wgsl.items()}


@pytest.fixture(autouse=True)
def _tint():
    tint_check.require()  # before the (seconds of) lowering: skip, or fail under CI=true


def _check(sources: dict[str, str], minimum: int) -> tint_check.Report:
    assert len(sources) >= minimum, f"only {len(sources)} WGSL sources collected"
    report = tint_check.check(sources.items())
    if report.failures:
        pytest.fail(report.describe(), pytrace=False)
    if report.known:  # rejections with a known cause and a pending fix (tint_check.KNOWN)
        pytest.xfail(report.describe_known())
    return report


def _op_programs():
    for spec in all_ops():
        for w in spec.witnesses():
            for k, program in enumerate(spec.build(**w.params).programs):
                yield f"op {spec.id} [{w.name}] #{k} {program.name}", program


def test_op_programs_compile_under_tint():
    sources = _collect(_op_programs())
    report = _check(sources, minimum=100)
    print(f"Tint: {report.checked} distinct WGSL sources of {len(all_ops())} ops")


def test_parity_corpus_compiles_under_tint():
    sources = _collect((f"corpus {c.name}", c.build()[0]) for c in CASES)
    _check(sources, minimum=len(CASES) // 2)


def _fuzz_strategies():
    """tests/fuzz/strategies.py (the fuzzer's program generator), imported as the fuzz tests do."""
    if not (FUZZ_DIR / "strategies.py").is_file():
        pytest.skip("tests/fuzz/strategies.py is missing: no fuzzed programs to check")
    if str(FUZZ_DIR) not in sys.path:
        sys.path.insert(0, str(FUZZ_DIR))
    import strategies

    return strategies


def test_fuzzed_programs_compile_under_tint():
    from hypothesis import HealthCheck, Phase, given, settings

    strategies = _fuzz_strategies()
    drawn: list[Program] = []
    for family in strategies.FAMILIES:
        # derandomized: the same sample every run; f16 too (Tint's null adapter has shader-f16)
        @settings(max_examples=FUZZ_PER_FAMILY, derandomize=True, database=None, phases=[Phase.generate],
                  deadline=None, suppress_health_check=list(HealthCheck))
        @given(strategies.programs(family, f16=family in ("float", "vector")))
        def draw(drawn_program):
            drawn.append(drawn_program[0])

        draw()
    named, rejected = [], []
    for k, program in enumerate(drawn):
        try:
            wgsl = lower(program).wgsl
        except VyreError as exc:  # the fuzz tests report generator and lowering bugs
            rejected.append(f"{program.name} #{k}: {type(exc).__name__}: {exc}")
            continue
        named.append((f"{program.name} #{k} {hashlib.sha256(wgsl.encode()).hexdigest()[:12]}", wgsl))
    assert not rejected, "fuzzed programs that do not lower:\n" + "\n".join(rejected[:10])
    sources = dict(named)
    report = _check(sources, minimum=len(drawn) // 4)
    print(f"Tint: {report.checked} distinct WGSL sources of {len(drawn)} fuzzed programs")


def test_checker_reports_errors_and_limits(monkeypatch):
    """The checker itself: an error with its line:col, a pipeline error, and a limit that is no error."""
    ok = "@compute @workgroup_size(1) fn main() {}"
    bad = "@compute @workgroup_size(1) fn main() {\n    let x: f32 = bitcast<f32>(0x7f800000u);\n}"
    no_main = "@compute @workgroup_size(1) fn other() {}"
    many = "\n".join(f"@group(0) @binding({k}) var<storage, read_write> b{k}: array<u32>;" for k in range(12))
    many += "\n@compute @workgroup_size(1) fn main() {\n" + "".join(f"    b{k}[0] = 1u;\n" for k in range(12)) + "}"
    report = tint_check.check([("ok", ok), ("bad", bad), ("no_main", no_main), ("many_buffers", many)])
    assert report.checked == 4
    assert set(report.failures) == {"bad", "no_main"}, report.describe()
    assert any("2:" in m and "cannot be represented" in m for m in report.failures["bad"]), report.failures
    assert report.failures["no_main"][0].startswith("pipeline error")
    assert report.summary["webgpu"] and "shader-f16" in report.summary["features"]
    assert set(report.limits) == {"many_buffers"}  # 12 storage buffers: over the null adapter's 8
    # a KNOWN rejection (cause known, fix pending) is reported apart and is no failure
    known = tint_check.Known("inf-literal", "value inf cannot be represented as 'f32'", r"0x7f800000u", "test")
    monkeypatch.setattr(tint_check, "KNOWN", (known,))
    report = tint_check.check([("bad", bad)])
    assert not report.failures and report.known == {"bad": ["inf-literal"]}, report
    assert "inf-literal in 1 of 1" in report.describe_known()
