"""Subgroup operations: the builder's ``b.subgroup_*`` methods and which programs use them.

A subgroup is a set of invocations of one workgroup that the GPU runs together (NVIDIA's warp
of 32, lavapipe's 8 lanes of a 256-bit vector). Subgroup operations (WGSL's ``subgroupAdd``,
``subgroupShuffle``, ...) combine or exchange values across the **active** invocations of the
caller's subgroup without workgroup memory or barriers.

Rules (checked by the validator, rule ``subgroup-uniformity``, and the type checker):

* a program that uses them (or the ``subgroup_invocation_id`` / ``subgroup_size`` built-ins)
  needs the ``subgroups`` capability: the lowering asks for the device feature ``subgroup``
  and a backend without it raises :class:`~vyre.errors.UnsupportedFeatureError` before any
  GPU work;
* each operation runs in workgroup-uniform control flow (vyre's barrier rule, stricter than
  WGSL's subgroup uniformity): guard the *value* (``b.select(i < n, x[i], 0)``), not the call;
  the mask of ``shuffle_xor`` and the delta of ``shuffle_up``/``shuffle_down`` are
  workgroup-uniform too, the lane of ``broadcast`` is a literal (WGSL wants a constant);
* lanes are u32; a shuffle from an inactive or out-of-range lane is indeterminate on a GPU.

The reference interpreter simulates a chosen subgroup size (``ReferenceBackend(subgroup_size=32)``,
see :mod:`vyre.backends.interpreter_subgroup`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from .nodes import SUBGROUP_BUILTINS, Builtin, BuiltinName, Subgroup, SubgroupOp
from .traverse import iter_exprs
from .values import Val, misuse

if TYPE_CHECKING:
    from .builder import ProgramBuilder
    from .program import Program
    from .values import Operand


def program_uses_subgroups(program: Program) -> bool:
    """True when ``program`` has a subgroup operation or reads a subgroup built-in."""
    return any(isinstance(e, Subgroup) or (isinstance(e, Builtin) and e.name in SUBGROUP_BUILTINS)
               for e in iter_exprs(program.body))


class SubgroupMethods:
    """The ``b.subgroup_*`` methods of :class:`~vyre.ir.builder.ProgramBuilder`."""

    def _builder(self) -> ProgramBuilder:
        return cast("ProgramBuilder", self)  # the mixin is only ever a ProgramBuilder

    def _subgroup(self, op: SubgroupOp, value: Operand, lane: Operand | None = None) -> Val:
        b = self._builder()
        v = b._coerce(value)
        lane_node = None
        if lane is not None:
            if isinstance(lane, bool) or not isinstance(lane, (int, Val)):
                raise misuse(b.name, f"subgroup_{op.value} lane", f"the lane must be an int or a u32 value, "
                             f"got {type(lane).__name__} {lane!r:.80}", "pass a Python int or a u32 vyre value",
                             lane)
            lane_node = (lane if isinstance(lane, Val) else b.lit(lane, "u32")).node
        return Val(b, Subgroup(op=op, value=v.node, lane=lane_node))

    # ---- built-ins ----
    def subgroup_invocation_id(self) -> Val:
        """This invocation's lane in its subgroup (u32, 0..subgroup_size-1)."""
        return Val(self._builder(), Builtin(name=BuiltinName.SUBGROUP_INVOCATION_ID))

    def subgroup_size(self) -> Val:
        """The number of invocations per subgroup (u32; the adapter's, or the reference's simulated size)."""
        return Val(self._builder(), Builtin(name=BuiltinName.SUBGROUP_SIZE))

    # ---- reductions: the same value in every active lane ----
    def subgroup_add(self, x: Operand) -> Val:
        """Sum of ``x`` over the active lanes (integers wrap)."""
        return self._subgroup(SubgroupOp.ADD, x)

    def subgroup_mul(self, x: Operand) -> Val:
        return self._subgroup(SubgroupOp.MUL, x)

    def subgroup_min(self, x: Operand) -> Val:
        return self._subgroup(SubgroupOp.MIN, x)

    def subgroup_max(self, x: Operand) -> Val:
        return self._subgroup(SubgroupOp.MAX, x)

    def subgroup_and(self, x: Operand) -> Val:
        """Bitwise and of an integer over the active lanes."""
        return self._subgroup(SubgroupOp.AND, x)

    def subgroup_or(self, x: Operand) -> Val:
        return self._subgroup(SubgroupOp.OR, x)

    def subgroup_xor(self, x: Operand) -> Val:
        return self._subgroup(SubgroupOp.XOR, x)

    def subgroup_all(self, pred: Operand) -> Val:
        """Whether ``pred`` (bool) holds on every active lane."""
        return self._subgroup(SubgroupOp.ALL, pred)

    def subgroup_any(self, pred: Operand) -> Val:
        return self._subgroup(SubgroupOp.ANY, pred)

    # ---- scans: lane i gets the combination of the active lanes 0..i (inclusive) or 0..i-1 ----
    def subgroup_inclusive_add(self, x: Operand) -> Val:
        return self._subgroup(SubgroupOp.INCLUSIVE_ADD, x)

    def subgroup_exclusive_add(self, x: Operand) -> Val:
        """Sum over the active lanes below this one (0 in the first lane)."""
        return self._subgroup(SubgroupOp.EXCLUSIVE_ADD, x)

    def subgroup_inclusive_mul(self, x: Operand) -> Val:
        return self._subgroup(SubgroupOp.INCLUSIVE_MUL, x)

    def subgroup_exclusive_mul(self, x: Operand) -> Val:
        return self._subgroup(SubgroupOp.EXCLUSIVE_MUL, x)

    # ---- data movement ----
    def subgroup_broadcast(self, x: Operand, lane: int) -> Val:
        """``x`` of lane ``lane`` (a Python int, 0..127: WGSL wants a constant) in every lane."""
        return self._subgroup(SubgroupOp.BROADCAST, x, lane)

    def subgroup_broadcast_first(self, x: Operand) -> Val:
        """``x`` of the lowest active lane in every lane."""
        return self._subgroup(SubgroupOp.BROADCAST_FIRST, x)

    def subgroup_shuffle(self, x: Operand, lane: Operand) -> Val:
        """``x`` of lane ``lane`` (a u32 that may differ per lane)."""
        return self._subgroup(SubgroupOp.SHUFFLE, x, lane)

    def subgroup_shuffle_xor(self, x: Operand, mask: Operand) -> Val:
        """``x`` of lane ``subgroup_invocation_id ^ mask`` (``mask`` workgroup-uniform)."""
        return self._subgroup(SubgroupOp.SHUFFLE_XOR, x, mask)

    def subgroup_shuffle_up(self, x: Operand, delta: Operand) -> Val:
        """``x`` of lane ``subgroup_invocation_id - delta`` (``delta`` workgroup-uniform)."""
        return self._subgroup(SubgroupOp.SHUFFLE_UP, x, delta)

    def subgroup_shuffle_down(self, x: Operand, delta: Operand) -> Val:
        """``x`` of lane ``subgroup_invocation_id + delta`` (``delta`` workgroup-uniform)."""
        return self._subgroup(SubgroupOp.SHUFFLE_DOWN, x, delta)

    def subgroup_ballot(self, pred: Operand) -> Val:
        """A ``vec4<u32>`` with bit ``i`` (of word ``i // 32``) set for each active lane ``i`` where ``pred`` holds."""
        return self._subgroup(SubgroupOp.BALLOT, pred)


__all__ = ["SubgroupMethods", "program_uses_subgroups"]
