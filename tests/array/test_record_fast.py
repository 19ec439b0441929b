"""The record fast path of elementwise ops (``_elementwise._apply2`` and the unary branch) against the
general path: for every operand combination the fast path takes, the recorded node must be the same
(structure key, dtype, shape) and every error the same type; combinations it declines go to the general
path. ``what=`` forces the general path (it only changes error wording)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import vyre
import vyre.array as xp
from vyre.array import _elementwise as E
from vyre.array._kernels.nodes import collect
from vyre.errors import VyreError

DTYPES = ["bool", "int32", "uint32", "float32"]
OPS = [("add", "iuf", False), ("multiply", "iuf", False), ("divide", "f", True), ("bitwise_and", "biu", False),
       ("equal", "biuf", False), ("exp", "f", True), ("negative", "iuf", False)]
SCALARS = st.one_of(st.booleans(), st.integers(-2**33, 2**33), st.floats(-1e3, 1e3, allow_nan=False),
                    st.sampled_from([0, -1, 2**31, 2**32 - 1, 2.5, 3.0]))


def _record(op: str, args: list, accept: str, float_only: bool, general: bool):
    out = (lambda d: xp.bool) if op == "equal" else E._same
    try:
        r = E.apply(op, args, out=out, accept=accept, float_only=float_only, what=op if general else None)
    except VyreError as exc:
        return type(exc)
    node = r._node()
    return (r.dtype, r.shape, collect(node).key, [s.value for s in node.scalars])


@pytest.fixture(scope="module")
def ref():
    return vyre.ReferenceBackend()


@settings(max_examples=300, deadline=None)
@given(op=st.sampled_from(OPS), d1=st.sampled_from(DTYPES), d2=st.sampled_from(DTYPES),
       kind=st.sampled_from(["aa", "as", "sa", "a", "aa-shape"]), scalar=SCALARS, lazy=st.booleans())
def test_fast_path_records_what_the_general_path_records(ref, op, d1, d2, kind, scalar, lazy):
    name, accept, float_only = op
    with vyre.use(ref):
        x = xp.asarray((np.arange(6) % 3).astype(d1).reshape(2, 3))
        y = xp.asarray((np.arange(6) % 2).astype(d2).reshape(2, 3) if kind != "aa-shape"
                       else np.arange(3).astype(d2))
        if lazy and d1 != "bool":
            x = x + x  # a pending operand: its tree, not a leaf
        if name in ("exp", "negative") or kind == "a":
            args: list = [x]
        else:
            args = {"aa": [x, y], "aa-shape": [x, y], "as": [x, scalar], "sa": [scalar, x]}[kind]
        fast = _record(name, args, accept, float_only, general=False)
        general = _record(name, args, accept, float_only, general=True)
    assert fast == general


def test_fast_path_keeps_the_tree_limits(ref):
    """A chain longer than the node limit is still cut (the fast path declines and the general path cuts)."""
    with vyre.use(ref):
        x = xp.asarray(np.ones(8, np.float32))
        z = x
        for _ in range(200):
            z = z * 1.0001 + x
        assert z._node().size <= E.MAX_NODES
        np.testing.assert_allclose(np.asarray(z), np.full(8, sum(1.0001 ** k for k in range(201)), np.float32),
                                   rtol=1e-4)
