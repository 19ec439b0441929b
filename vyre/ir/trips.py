"""Static loop trip counts: how many loop iterations one invocation may run, where the program says.

Why: llvmpipe (Mesa's CPU driver, lavapipe) ends every loop of a shader invocation once the loops have run
65,535 iterations in all (gallivm's ``LP_MAX_TGSI_LOOP_ITERATIONS``), silently: a 4 x 2^22 x 4 matmul,
whose K loop has 262,144 tile steps, returned 1,048,560 instead of 4,194,304 there. The validator refuses a
program whose count passes ``Limits.max_loop_iterations`` (the GPU backend sets it on such adapters), so
the answer is an error before any GPU work instead of a wrong result.

The count is an upper bound per invocation, from loops whose trip count is known from the program alone:
a ``for`` with literal bounds (or arithmetic on literals) and no ``break`` in its body. Sequential loops
add up, nested ones multiply, and both branches of an ``if`` count (a SIMD CPU driver runs both when
lanes diverge). A loop of at most :data:`UNROLLED` trips adds only what it contains: Mesa's NIR unrolls
it before llvmpipe counts (measured on lavapipe 22.3: 3000 x 32 iterations ran whole, 3000 x 33 did not).
Loops whose count depends on data or sizes (``while``, ``len(...)`` bounds, a ``break``) are not counted,
nor is anything inside them: the check cannot see them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from ..errors import ValidationIssue
from .nodes import Binary, BinOp, Break, BufLen, Cast, Expr, For, If, Lit, Stmt
from .program import Program
from .validate_decls import node_text

#: Constant trip counts Mesa unrolls completely (so llvmpipe's counter never sees them); small bodies only,
#: as vyre's inner tile loops are.
UNROLLED = 32


@dataclass(frozen=True)
class LoopTrips:
    """The largest static count of ``program`` and the outermost loop it comes from (``path``, ``node``)."""

    trips: int
    path: str
    node: For | None


def _value(e: Expr, lens: Mapping[str, int] | None) -> int | None:
    """An integer expression of literals and (with ``lens``) buffer lengths, or None."""
    if isinstance(e, Lit):
        return int(e.value) if isinstance(e.value, (bool, int)) else None
    if isinstance(e, BufLen):
        return None if lens is None else lens.get(e.buffer)
    if isinstance(e, Cast):
        return _value(e.arg, lens)
    if isinstance(e, Binary):
        a, b = _value(e.lhs, lens), _value(e.rhs, lens)
        if a is None or b is None:
            return None
        op = e.op
        if op is BinOp.ADD:
            return a + b
        if op is BinOp.SUB:
            return a - b
        if op is BinOp.MUL:
            return a * b
        if op is BinOp.DIV and b:
            return a // b
        if op is BinOp.MIN:
            return min(a, b)
        if op is BinOp.MAX:
            return max(a, b)
    return None


def _breaks(body: list[Stmt]) -> bool:
    """A ``break`` of this loop (not of a loop nested in it)."""
    for s in body:
        if isinstance(s, Break):
            return True
        if isinstance(s, If) and (_breaks(s.then) or _breaks(s.otherwise)):
            return True
    return False


def _for_trips(s: For, lens: Mapping[str, int] | None) -> int | None:
    start, end = _value(s.start, lens), _value(s.end, lens)
    if start is None or end is None or _breaks(s.body):
        return None
    span = end - start if s.step > 0 else start - end
    step = abs(s.step)
    return max(0, -(-span // step))


def unrolled(s: For) -> bool:
    """Whether Mesa unrolls ``s`` completely (a literal trip count of at most :data:`UNROLLED`, no break), so
    llvmpipe's iteration counter never sees it."""
    n = _for_trips(s, None)
    return n is not None and n <= UNROLLED


def _block(body: list[Stmt], path: str, lens: Mapping[str, int] | None) -> tuple[int, str, For | None]:
    """(static iterations of ``body``, path and node of the loop contributing most)."""
    total, where, node, best = 0, "", None, -1
    for k, s in enumerate(body):
        here = f"{path}[{k}]"
        hit: tuple[int, str, For | None]
        if isinstance(s, For):
            n = _for_trips(s, lens)
            if n is None:
                continue  # unknown: neither it nor what it contains is counted
            inner, _, _ = _block(s.body, here + ".body", lens)
            t = n * inner + (0 if n <= UNROLLED else n)
            hit = (t, here, s)
        elif isinstance(s, If):
            a, pa, na = _block(s.then, here + ".then", lens)
            b, pb, nb = _block(s.otherwise, here + ".otherwise", lens)
            t = a + b
            hit = (t, pa, na) if a >= b else (t, pb, nb)
        else:
            continue  # a while loop (unknown count) or a plain statement
        total += hit[0]
        if hit[0] > best:
            best, where, node = hit[0], hit[1], hit[2]
    return total, where, node


def static_loop_trips(program: Program, lens: Mapping[str, int] | None = None) -> LoopTrips:
    """Upper bound of the loop iterations one invocation of ``program`` runs, over the loops it can see
    (see the module docstring); 0 with no such loop. ``lens``: element counts by buffer name (a dispatch's
    plan), so bounds like ``len(x)`` count too."""
    total, path, node = _block(program.body, "body", lens)
    return LoopTrips(total, path, node)


def loop_iterations_issue(program: Program, cap: int, lens: Mapping[str, int] | None = None) -> ValidationIssue | None:
    """The ``loop-iterations`` issue of ``program`` under an adapter that ends loops after ``cap``, or None."""
    t = static_loop_trips(program, lens)
    if t.trips <= cap:
        return None
    sizes = " with these buffer sizes" if lens is not None else ""
    return ValidationIssue(
        "loop-iterations", t.path, node_text(t.node),
        f"one invocation runs up to {t.trips} loop iterations{sizes} (the most from the loop at {t.path}); this "
        f"adapter ends loops after {cap} in all without an error, so the result would be wrong",
        "run it on a GPU adapter, or give each invocation less work (smaller sizes per dispatch, more invocations)")


__all__ = ["LoopTrips", "UNROLLED", "static_loop_trips", "loop_iterations_issue", "unrolled"]
