"""The kernel of cumulative_sum / cumulative_prod (vyre/array/_statistical.py): one invocation per line
along the axis (outer * inner lines of L elements), a serial running sum or product over the line, the
pending input tree fused into the load.

Accumulation as in the reductions (f32 for floats, float16 rounded per output; integers wrap). The running
float sum of element k has k roundings, so the tolerance is (k + 1) * eps * sum|x[:k]|. Serial lines are
the simple correct layout: a long 1-d scan runs on one invocation (a parallel block scan is future work).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ...ir.builder import ProgramBuilder
from ...ir.program import Program
from .dtypes import ir_type
from .emit import Emitter
from .fused import plan_for_node
from .nodes import Node, collect
from .reduction import WG, Reduction, load, programs

if TYPE_CHECKING:
    from ...backends.base import Backend


def _program(red: Reduction, node: Node, outer: int, length: int, inner: int, initial: bool,
             key: tuple[Any, ...]) -> Program:
    length2 = length + int(initial)

    def build() -> Program:
        b = ProgramBuilder(f"array_cumulative_{red.op}", WG)
        e = Emitter(b, node)  # its buffers first: Plan.bind(node)'s order
        out = b.buffer("out", ir_type(red.out), "write", count=max(1, outer * length2 * inner))
        b.set_grid_from(out)  # at least one invocation per line (outer * inner <= the output's size)
        i = b.global_index()
        with b.if_(i < outer * inner):
            o, c = b.let(i / inner, "o"), b.let(i % inner, "c")
            src = b.let(o * (length * inner) + c, "src")
            dst = b.let(o * (length2 * inner) + c, "dst")
            acc = b.var(red.acc, red.identity(b), name="acc")
            if initial:
                out[dst] = red.finish(b, b.lit(0 if red.op == "sum" else 1, red.acc))  # +0, not -0.0
            with b.for_range(0, length, name="r") as r:
                acc.set(red.combine(b, acc, load(b, e.value(src + r * inner), node.dtype, red.acc)))
                out[dst + (r + int(initial)) * inner] = red.finish(b, acc)
        return b.build()

    return programs.get(key, build)


def scan(red: Reduction, node: Node, dims: tuple[int, int, int], initial: bool, out: Any, device: Backend) -> None:
    """Run the cumulative ``red`` of ``node`` viewed as ``dims`` = (outer, length, inner) along ``length``
    into the handle ``out`` (``initial``: the identity first, one more element per line): one kernel,
    the pending work ``node`` reads computed in the same submission."""
    outer, length, inner = dims
    key = ("stats_cumulative", red, outer, length, inner, initial, collect(node).key)
    prog = _program(red, node, outer, length, inner, initial, key)
    p = plan_for_node(node, device)
    p.steps.append((prog, [*p.bind(node), out]))
    p.run()


__all__ = ["scan"]
