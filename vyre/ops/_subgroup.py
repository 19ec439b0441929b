"""Workgroup-wide sums, maxima and exclusive prefix sums through subgroup operations.

The building block of the ``subgroup`` kernel variants (scan.*, softmax, layernorm, rmsnorm): instead
of a tree in workgroup memory (one barrier per level), each subgroup combines its lanes in registers
(``subgroupAdd``/``subgroupMax``/``subgroupExclusiveAdd``), lane 0 of every subgroup writes that
subgroup's total to workgroup memory, and after **one** barrier every subgroup combines the totals
again, redundantly, in registers:

* the subgroup size S is read at run time (``subgroup_size``: WGSL lets it be any power of two in
  4..128), so the totals array has room for ``wg / 4`` entries, the most there can be;
* with ``T = ceil(wg / S)`` totals, lane ``l`` of each subgroup first folds the ``k = ceil(T / S)``
  totals ``l*k .. l*k+k-1`` serially (k = 1 for S >= 16 at 256 invocations), then one more subgroup
  operation combines the lanes; for a prefix, lane ``g / k`` holds the prefix of the chunk with
  subgroup ``g``'s total, fetched by a shuffle, plus the up to ``k - 1`` totals before ``g`` in it.

Subgroups are taken to be runs of consecutive local indices, lane ``i`` of subgroup ``g`` being local
invocation ``g * S + i`` (as on NVIDIA and lavapipe with 1-D workgroups, and in the reference
interpreter's model), and workgroup sizes are powers of two, so every subgroup is full except when
the whole workgroup is smaller than one subgroup. The subgroup operations run in workgroup-uniform
control flow (rule ``subgroup-uniformity``); only the loops over ``k`` depend on S.

Float error: a subgroup operation is taken to add in a tree (log2 S deep, as the shuffle-based
implementations do); :func:`sum_depth` and :func:`prefix_depth` give the longest chain of additions
for the worst S, which the ops' tolerances cover.
"""

from __future__ import annotations

import math

from ..ir.builder import ProgramBuilder, Val
from ..ir.values import BufRef

MIN_SUBGROUP = 4  # the smallest subgroup size WGSL allows
SIZES = tuple(1 << e for e in range(2, 8))  # every subgroup size an adapter may report


def slots(wg: int) -> int:
    """Entries of the workgroup array that holds the subgroup totals of ``wg`` invocations."""
    return max(1, wg // MIN_SUBGROUP)


def _shape(wg: int, s: int) -> tuple[int, int]:
    """(totals, totals per lane in the second round) for ``wg`` invocations at subgroup size ``s``."""
    totals = -(-wg // s)
    return totals, -(-totals // s)


def _log2(n: int) -> int:
    return math.ceil(math.log2(n)) if n > 1 else 0


def sum_depth(wg: int) -> int:
    """Longest chain of additions from a lane's value to :meth:`Combine.reduce`'s sum, over every subgroup size."""
    worst = 0
    for s in SIZES:
        totals, k = _shape(wg, s)
        worst = max(worst, _log2(min(s, wg)) + (k - 1) + _log2(-(-totals // k)))
    return worst


def prefix_depth(wg: int) -> int:
    """Longest chain of additions from a lane's value to :meth:`Combine.exclusive_prefix`'s result, over every
    subgroup size: the sum's chain, then the totals before this one in its chunk, then the lane prefix."""
    worst = 0
    for s in SIZES:
        totals, k = _shape(wg, s)
        worst = max(worst, _log2(min(s, wg)) + (k - 1) + _log2(-(-totals // k)) + (k - 1) + 1)
    return worst


class Combine:
    """A workgroup combine over subgroups: ``totals`` is a workgroup array of :func:`slots` ``(wg)``
    entries of ``dtype``; ``kind`` is ``"add"`` or ``"max"``; ``tag`` suffixes the names it declares
    (several combines in one program need distinct tags)."""

    def __init__(self, b: ProgramBuilder, totals: BufRef, wg: int, dtype: str, kind: str = "add",
                 tag: str = "") -> None:
        if kind not in ("add", "max"):
            raise ValueError(f"kind must be 'add' or 'max', got {kind!r}")
        self.b, self.totals, self.wg, self.dtype, self.kind = b, totals, wg, dtype, kind
        self.tag = f"_{tag}" if tag else ""
        self.lid = b.let(b.local_index(), self.n("sg_lid"))
        self.size = b.let(b.subgroup_size(), self.n("sg_size"))
        self.lane = b.let(b.subgroup_invocation_id(), self.n("sg_lane"))
        self.index = b.let(self.lid / self.size, self.n("sg_index"))  # this invocation's subgroup
        self.count = b.let((wg + self.size - 1) / self.size, self.n("sg_count"))  # subgroups in the workgroup
        self.per_lane = b.let((self.count + self.size - 1) / self.size, self.n("sg_per_lane"))

    def n(self, name: str) -> str:
        return name + self.tag

    def _identity(self) -> Val:
        b = self.b
        if self.kind == "max":
            return b.lit(float("-inf"), "f32") if self.dtype == "f32" else b.lit(
                0 if self.dtype == "u32" else -(2**31), self.dtype)
        return b.lit(0.0 if self.dtype == "f32" else 0, self.dtype)

    def _join(self, p: Val, q: Val) -> Val:
        return self.b.max(p, q) if self.kind == "max" else p + q

    def _subgroup(self, v: Val) -> Val:
        return self.b.subgroup_max(v) if self.kind == "max" else self.b.subgroup_add(v)

    def _publish(self, value: Val) -> None:
        """Write each subgroup's total of ``value`` to ``totals`` and wait for every subgroup."""
        b = self.b
        mine = b.let(self._subgroup(value), self.n("sg_total"))
        with b.if_(self.lane == 0):
            self.totals[self.index] = mine
        b.barrier()

    def _chunk(self) -> Val:
        """This lane's serial fold of the totals ``lane*k .. lane*k+k-1`` (the identity past the end)."""
        b = self.b
        q = b.var(self.dtype, self._identity(), name=self.n("sg_chunk"))
        first = b.let(self.lane * self.per_lane, self.n("sg_first"))
        with b.for_range(first, b.min(first + self.per_lane, self.count), name=self.n("sg_j")) as j:
            q.set(self._join(q, self.totals[j]))
        return q

    def reduce(self, value: Val, name: str, reuse: bool = True) -> Val:
        """The combination of ``value`` over the workgroup, in every invocation. With ``reuse`` it ends
        with a barrier, so ``totals`` may be written again at once (a last reduction can skip it)."""
        b = self.b
        self._publish(value)
        out = b.let(self._subgroup(self._chunk()), name)
        if reuse:
            b.barrier()  # every subgroup has read the totals before they are overwritten
        return out

    def exclusive_prefix(self, value: Val, name: str) -> Val:
        """The sum of ``value`` over the invocations with a lower local index (kind ``"add"`` only).
        No barrier at the end: ``totals`` is in use until the caller's next barrier."""
        b = self.b
        if self.kind != "add":
            raise ValueError("exclusive_prefix needs kind 'add'")
        within = b.let(b.subgroup_exclusive_add(value), self.n("sg_within"))
        self._publish(value)
        chunk = b.let(self._chunk(), self.n("sg_chunk_sum"))
        before_chunk = b.let(b.subgroup_exclusive_add(chunk), self.n("sg_before_chunk"))
        # the lane whose chunk holds this subgroup's total
        owner = b.let(self.index / self.per_lane, self.n("sg_owner"))
        p = b.var(self.dtype, b.subgroup_shuffle(before_chunk, owner), name=self.n("sg_before"))
        with b.for_range(owner * self.per_lane, self.index, name=self.n("sg_r")) as r:
            p.set(p + self.totals[r])
        return b.let(p + within, name)


__all__ = ["Combine", "slots", "sum_depth", "prefix_depth", "MIN_SUBGROUP", "SIZES"]
