"""Kernel twins: builder programs (the parity catalogue, tests/programs.py, and the op library's simpler
ops) written again with ``@vyre.kernel``; both run on the same inputs on the reference interpreter and
on wgpu, compared (integers and bools bit-exact; floats bit-exact where the same operations run in the
same order, else within the op's stated tolerance, vyre.ops.registry.compare).

The twins live in twins.py (the catalogue: integer/float/bit ops, unary math, casts, select and logic,
for/while/break/continue/return, if/elif/else, 2-D matmul), twins_atomics.py (workgroup arrays and
barriers, every atomic, f16, bools) and twins_ops.py (elementwise, reductions, scan, histogram, gather,
scatter_add, transpose, embedding, softmax, norms, fnv1a/crc32 rows, matmul; @vyre.func helpers and
scalar parameters)."""

from __future__ import annotations

import pytest

from vyre.ops.registry import compare

from . import twins_atomics, twins_ops  # noqa: F401 - they register their twins
from .twins import TWINS
from gpu_policy import skip_or_fail


@pytest.mark.parametrize("tw", TWINS, ids=[t.name for t in TWINS])
def test_twin(tw, backend):
    if tw.f16 and not getattr(backend, "supports_f16", lambda: True)():
        skip_or_fail("adapter lacks shader-f16")
    pairs = tw.run(backend)
    assert pairs
    for label, got, want, tol in pairs:
        ok, err, desc = compare(got, want, tol)
        assert ok, f"twin {tw.name}, {label}: kernel vs builder: {desc} (tolerance {tol.describe()})"


def test_at_least_25_twins():
    assert len(TWINS) >= 25, len(TWINS)
