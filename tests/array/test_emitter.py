"""The extension point of wave-2 kernels: fuse a pending elementwise tree into another program's input
load (here a tiny sum, ``(a * b + 1).sum()``, one kernel, one submission)."""

from __future__ import annotations

import numpy as np

from vyre import array_api as xp
from vyre.array._kernels.emit import Emitter
from vyre.array._kernels.fused import plan_for_node
from vyre.ir.builder import ProgramBuilder


def _fused_sum(x):
    node = x._node()
    b = ProgramBuilder("fused_sum_test", 1)
    e = Emitter(b, node)  # declares the leaves' buffers and the parameter buffer first
    out = b.buffer("out", "i32", "read_write", count=1)
    acc = b.var("i32", 0)
    with b.for_range(0, node.count) as k:
        acc += e.value(k)
    out[0] = acc
    prog = b.build()
    p = plan_for_node(node, x.device)
    res = xp.zeros(1, dtype=xp.int32, device=x.device)
    p.steps.append((prog, [*p.bind(e), res.handle], (1, 1, 1)))
    p.run()
    return res


def test_fused_reduction(xb):
    an = np.arange(100, dtype=np.int32).reshape(10, 10)
    bn = np.arange(10, dtype=np.int32)
    a, b = xp.asarray(an), xp.asarray(bn)
    x = a * b + 1
    before = xp.fusion_stats()
    got = _fused_sum(x)
    assert int(np.asarray(got)[0]) == int((an * bn + 1).sum())
    assert xp.fusion_stats()["kernels_built"] == before["kernels_built"]  # the elementwise part never ran alone
    assert x.is_lazy


def test_fused_reduction_with_cut_leaves(xb):
    y = xp.asarray(np.ones(8, np.int32))
    for _ in range(200):
        y = y + 1  # several cut-out subtrees, materialised in the same submission
    before = xp.fusion_stats()
    got = _fused_sum(y)
    assert int(np.asarray(got)[0]) == 8 * 201
    assert xp.fusion_stats()["submissions"] == before["submissions"] + 1
