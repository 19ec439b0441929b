"""The ``subgroup`` variants of softmax, layernorm and rmsnorm: row maxima and sums through subgroups.

The kernels are the generic ones (one workgroup per row, ``_rowreduce``) with every workgroup tree
reduction (log2(wg) barriers) replaced by :class:`vyre.ops._subgroup.Combine`: ``subgroupMax`` /
``subgroupAdd`` per subgroup, the subgroup totals through workgroup memory, one barrier, a second
subgroup combine, and one barrier before the totals are reused. The row's workgroup size (32..256)
may be smaller than a subgroup (up to 128 lanes): then the one subgroup is the whole row.

Float error: a row sum passes through at most :func:`vyre.ops._subgroup.sum_depth` additions after
each lane's serial run (at most 19 for 256 invocations and 4-lane subgroups, 8 from 16 lanes up;
the tree's 8), well inside the ops' tolerances (rel 1e-5 and 2e-5, set by exp/sqrt and cols).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ...backends.schedule import Pipeline
from ...ir.builder import ProgramBuilder, Val
from ...ir.values import BufRef
from .. import _subgroup as sg
from ..variants import Variant

FEATURES = frozenset({"subgroup"})
PREFER_ON = frozenset({"discrete-gpu"})


def allreduce_subgroup(b: ProgramBuilder, scratch: BufRef, lid: Val, value: Val, wg: int, kind: str,
                       name: str) -> Val:
    """``_rowreduce.allreduce`` through subgroups. ``scratch`` (``wg`` f32, at least :func:`sg.slots`)
    holds the subgroup totals; it is free again on return. ``lid`` is the local index (re-read here)."""
    return sg.Combine(b, scratch, wg, "f32", kind, tag=name).reduce(value, name)


def variant(build: Callable[..., Pipeline], summary: str) -> Variant:
    """The ``subgroup`` variant of a row op whose ``build`` takes ``reducer=``."""
    def build_subgroup(*args: Any, **params: Any) -> Pipeline:
        return build(*args, reducer=allreduce_subgroup, **params)

    return Variant(name="subgroup", build=build_subgroup, features=FEATURES, prefer_on=PREFER_ON, summary=summary)


__all__ = ["allreduce_subgroup", "variant"]
