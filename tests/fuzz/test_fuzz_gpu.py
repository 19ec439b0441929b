"""The fuzzer (issue 9): random valid programs (tests/fuzz/strategies.py) run on the GPU and judged
by the float model (``vyre.backends.float_model.check_under_model``, which runs the reference
interpreter itself): integers and bools bit-exact, floats within the model's bound, elements the
model leaves unspecified skipped. Every mismatch fails, with the program text, the inputs and the
mismatching elements.

Knobs (environment):

* ``VYRE_FUZZ_EXAMPLES``: GPU programs per run, in all, split evenly over the families (default
  ``DEFAULT_EXAMPLES``: 600 programs, about 30 s of CPU on lavapipe).
* ``VYRE_FUZZ_RANDOM=1``: a fresh random seed per run (default: derandomized, so a run is
  reproducible: hypothesis derives the seed from the test, and uses no example database).
* ``VYRE_FUZZ_VALIDATE_EXAMPLES``: programs per family of the fast generator test (default 60).
* ``VYRE_FUZZ_F16=0``: no f16 programs even when the adapter has shader-f16 (to look past an f16 bug).

A campaign: ``VYRE_FUZZ_EXAMPLES=2000 python -m pytest tests/fuzz -q -p no:cacheprovider`` (f16 programs
are drawn when the adapter has shader-f16). Each family prints (``-s``) and records (junit property
``fuzz``; tests/fuzz/conftest.py lists them in the terminal summary) a line: programs, output elements
compared, unspecified, programs with nothing compared.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, fields

import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from strategies import FAMILIES, FuzzCase, fuzz_cases  # tests/fuzz is on sys.path under pytest

import vyre
from vyre.backends.float_model import check_under_model
from vyre.ir.nodes import (
    EXPR_TYPES,
    SUBGROUP_BUILTINS,
    Atomic,
    AtomicOp,
    Barrier,
    BarrierScope,
    Binary,
    BinOp,
    Builtin,
    BuiltinName,
    Subgroup,
    Unary,
    UnOp,
)
from vyre.ir.program import Program
from vyre.ir.traverse import iter_exprs, iter_stmts
from vyre.ir.types import Access, DataType
from vyre.lower import lower

DEFAULT_EXAMPLES = 600
TOTAL_EXAMPLES = int(os.environ.get("VYRE_FUZZ_EXAMPLES", DEFAULT_EXAMPLES))
PER_FAMILY = max(1, math.ceil(TOTAL_EXAMPLES / len(FAMILIES)))
VALIDATE_EXAMPLES = int(os.environ.get("VYRE_FUZZ_VALIDATE_EXAMPLES", 60))
DERANDOMIZE = os.environ.get("VYRE_FUZZ_RANDOM", "") not in ("1", "true", "yes")
NO_F16 = os.environ.get("VYRE_FUZZ_F16", "") in ("0", "false", "no")

#: Smallest share of the generated output elements (over a family's run) the model must actually
#: compare: the fuzzer must not be vacuous (floats reaching control flow or addresses poison a whole
#: program, NaN/inf/overflow leave elements unspecified).
MIN_COMPARED_SHARE = {"scalar": 0.95, "float": 0.35, "control": 0.6, "memory": 0.6, "vector": 0.5}


def fuzz_settings(max_examples: int):
    return settings(
        max_examples=max_examples, deadline=None, derandomize=DERANDOMIZE, database=None, print_blob=True,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much,
                               HealthCheck.large_base_example],
    )


@dataclass
class Stats:
    programs: int = 0
    compared: int = 0
    unspecified: int = 0
    nothing_compared: int = 0

    def line(self, family: str) -> str:
        total = self.compared + self.unspecified
        share = self.compared / total if total else 0.0
        return (f"fuzz[{family}]: {self.programs} programs, {self.compared} output elements compared, "
                f"{self.unspecified} unspecified ({share:.1%} compared), "
                f"{self.nothing_compared} programs with nothing compared")


def _gpu_outputs(gpu, case: FuzzCase) -> list[np.ndarray]:
    try:
        return gpu.dispatch(case.program, case.inputs, config=case.config)
    except Exception as exc:
        raise AssertionError(f"the GPU failed to run a generated program: {type(exc).__name__}: {exc}\n"
                             f"{case.describe()}") from exc


def check_case(gpu, reference, case: FuzzCase, stats: Stats) -> None:
    got = _gpu_outputs(gpu, case)
    report = check_under_model(case.program, case.inputs, got, config=case.config, reference=reference)
    if report.mismatches:
        raise AssertionError(
            "GPU outputs outside the float model:\n  " + "\n  ".join(report.mismatches)
            + "\n--- program, grid and inputs ---\n" + case.describe()
            + "\n--- gpu outputs ---\n" + "\n".join(
                f"{d.name}: {np.asarray(g).tolist()!r}" for d, g in zip(case.program.output_buffers, got)))
    stats.programs += 1
    stats.compared += report.compared
    stats.unspecified += report.unspecified
    stats.nothing_compared += report.compared == 0


@pytest.mark.parametrize("family", FAMILIES)
def test_fuzz_gpu_vs_model(family, gpu, reference, record_property):
    stats = Stats()

    @fuzz_settings(PER_FAMILY)
    @given(case=fuzz_cases(family, f16=gpu.supports_f16() and not NO_F16))
    def run(case):
        check_case(gpu, reference, case, stats)

    run()
    line = stats.line(family)
    print("\n" + line)
    record_property("fuzz", line)
    assert stats.programs >= PER_FAMILY, line
    total = stats.compared + stats.unspecified
    assert total and stats.compared / total >= MIN_COMPARED_SHARE[family], f"the fuzzer is nearly vacuous: {line}"


# --------------------------------------------------------------------------- the generator itself (no GPU)
def _check_generated(case: FuzzCase, reference) -> None:
    program = case.program
    try:
        vyre.validate(program)
    except vyre.errors.ValidationError as exc:
        raise AssertionError(f"generator bug: an invalid program was generated:\n{exc}\n{program.to_text()}") from exc
    assert Program.from_wire(program.to_wire()).to_wire() == program.to_wire()  # (NaN literals: compare bytes)
    lowered = lower(program)
    assert lowered.wgsl
    outs = reference.dispatch(program, case.inputs, config=case.config)
    assert len(outs) == len(program.output_buffers)
    for decl, out in zip(program.output_buffers, outs):
        want = decl.count or case.invocations  # shared atomic slots have a count, the rest one per invocation
        assert len(out) == want, f"{decl.name}: {len(out)} elements, want {want}"


@pytest.mark.parametrize("family", FAMILIES)
def test_generated_programs_validate(family, reference):
    """Every generated program validates, survives the wire round trip, lowers and runs on the reference."""

    @fuzz_settings(VALIDATE_EXAMPLES)
    @given(case=fuzz_cases(family, f16=True))
    def run(case):
        _check_generated(case, reference)

    run()


def _features_of(program: Program) -> set[str]:
    """Names of what ``program`` uses: node kinds, operators, atomic ops, built-ins, types, access modes."""
    seen = {f"stmt:{s.kind}" for s in iter_stmts(program.body)}
    for e in iter_exprs(program.body):
        seen.add(f"expr:{e.kind}")
        if isinstance(e, Unary | Binary | Atomic):
            seen.add(f"{type(e).__name__}:{e.op.value}")
        elif isinstance(e, Builtin):
            seen.add(f"builtin:{e.name.value}")
    for s in iter_stmts(program.body):
        if isinstance(s, Barrier):
            seen.add(f"barrier:{s.scope.value}")
    seen |= {f"type:{b.dtype.value}" for b in program.buffers} | {f"access:{b.access.value}" for b in program.buffers}
    seen |= {f"workgroup:{w.dtype.value}" for w in program.workgroup}
    return seen


class _Covered(Exception):
    """Raised once every wanted feature was generated: ends the search early."""


def _kind(cls) -> str:
    """A node class's ``kind`` discriminator (the default of its ``kind`` field)."""
    return next(f.default for f in fields(cls) if f.name == "kind")


def _wanted_features() -> set[str]:
    want = {f"stmt:{k}" for k in ("let", "var", "assign", "store", "if", "for", "while", "break", "continue",
                                  "barrier", "return", "eval")}
    # subgroup operations and built-ins are size-dependent: tests/backends/test_subgroup_backends.py covers them
    want |= {f"expr:{_kind(cls)}" for cls in EXPR_TYPES if cls is not Subgroup}
    want |= {f"Unary:{op.value}" for op in UnOp} | {f"Binary:{op.value}" for op in BinOp}
    want |= {f"Atomic:{op.value}" for op in AtomicOp} | {f"builtin:{b.value}" for b in BuiltinName
                                                                      if b not in SUBGROUP_BUILTINS}
    # the 64-bit types need adapter features the fuzzer does not assume: tests/ir/test_dtypes64.py covers them
    want |= {f"type:{d.value}" for d in DataType if d is not DataType.VEC3_F16 and not d.is_64bit}
    want |= {f"access:{a.value}" for a in Access} | {f"barrier:{s.value}" for s in BarrierScope}
    return want


def test_generator_covers_the_ir():
    """Within 3000 programs (of all families, f16 included) the generator reaches every node kind, operator,
    atomic op, built-in, buffer type and access mode: the fuzzer is not silently narrower than the IR.
    The search stops as soon as everything was seen (a few hundred programs)."""
    want = _wanted_features()
    seen: set[str] = set()

    @settings(fuzz_settings(3000), derandomize=True, phases=[Phase.generate])  # fixed corpus, no shrinking
    @given(case=st.sampled_from(FAMILIES).flatmap(lambda family: fuzz_cases(family, f16=True)))
    def run(case):
        seen.update(_features_of(case.program))
        if want <= seen:
            raise _Covered

    try:
        run()
    except _Covered:
        return
    pytest.fail(f"in 3000 programs the generator never produced: {sorted(want - seen)}")


def test_generated_programs_fit_default_limits():
    """At most WebGPU's default 8 storage buffers per shader stage (and the validator's default limits)."""

    @fuzz_settings(VALIDATE_EXAMPLES)
    @given(case=fuzz_cases("memory", f16=True))
    def run(case):
        storage = [b for b in case.program.buffers if b.access is not Access.UNIFORM]
        assert len(storage) <= 8, case.program.to_text()

    run()
