"""Every catalogue program gives the same answer on the reference interpreter and on wgpu."""

from __future__ import annotations

import dataclasses

import pytest

from vyre.ir.nodes import EXPR_TYPES, STMT_TYPES, AtomicOp, BinOp, UnOp

from gpu_policy import skip_or_fail
from parity import assert_parity
from programs import CASES


def _walk(nodes):
    for n in nodes:
        yield n
        for f in dataclasses.fields(n):
            v = getattr(n, f.name)
            if isinstance(v, list):
                yield from _walk([x for x in v if hasattr(x, "kind")])
            elif hasattr(v, "kind"):
                yield from _walk([v])


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_parity(case, gpu, reference):
    if "shader-f16" in case.needs and not gpu.supports_f16():
        skip_or_fail("adapter lacks shader-f16")
    if "subgroup" in case.needs and not gpu.supports_subgroup_ops():
        skip_or_fail("adapter lacks subgroup")
    program, inputs, config = case.build()
    assert_parity(gpu, reference, program, inputs, rtol=case.rtol, atol=case.atol, config=config)


def test_catalogue_covers_every_node_kind():
    kinds, unops, binops, atomics = set(), set(), set(), set()
    for case in CASES:
        program = case.build()[0]
        for n in _walk(program.body):
            kinds.add(type(n))
            if n.kind == "unary":
                unops.add(n.op)
            elif n.kind == "binary":
                binops.add(n.op)
            elif n.kind == "atomic":
                atomics.add(n.op)
    missing = {t.__name__ for t in EXPR_TYPES + STMT_TYPES} - {t.__name__ for t in kinds}
    assert not missing, f"no parity program uses {sorted(missing)}"
    assert set(UnOp) - unops == set(), sorted(set(UnOp) - unops)
    assert set(BinOp) - binops == set(), sorted(set(BinOp) - binops)
    assert set(AtomicOp) - atomics == set(), sorted(set(AtomicOp) - atomics)
    assert len(CASES) >= 25
