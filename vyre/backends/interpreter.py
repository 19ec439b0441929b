"""The reference interpreter: runs any valid Program on the CPU with numpy.

It is the oracle every GPU result is compared with, so it follows the value semantics
of docs/architecture.md exactly (see :mod:`vyre.backends.semantics`).

Execution model
---------------
The logical grid is processed in chunks of whole workgroups (at most ``chunk_lanes``
invocations each, in linear workgroup order). Inside a chunk every statement runs for all
invocations ("lanes") at once:

* a value is a numpy array with one entry per lane: shape ``(L,)`` for scalars, ``(L, n)``
  for vectors. Values that are the same for every lane (literals, ``len``,
  ``num_workgroups``, loop counters with uniform bounds...) stay of width 1 (``(1,)`` or
  ``(1, n)``) and broadcast; the array's dtype and shape give the value's vyre type;
* control flow uses boolean lane masks. Each statement takes the mask of active lanes and
  returns the mask of lanes that fall through it: ``break``/``continue``/``return`` drop
  lanes (``break``/``continue`` record them in the innermost loop's context);
* memory is kept in the storage layout of :mod:`vyre.backends.host` (bool as u32 words,
  vec3 padded to 4 components); workgroup arrays have one copy per workgroup of the chunk;
* lockstep execution satisfies every barrier of a race-free program, so ``barrier`` is a
  no-op; atomics give the result of running the active lanes one at a time in lane order.

Loop budget
-----------
A loop that never ends would make the interpreter run forever, so every loop trip checks two
budgets (the backend's ``max_loop_seconds`` and ``max_loop_iterations``): a chunk still running
loops after ``max_loop_seconds`` of wall time since it started (10 s by default; ``None``: no time
limit), or one loop running more than ``max_loop_iterations`` trips (10,000,000 by default), raises
:class:`~vyre.errors.DispatchError` naming the program and the loop by its statement path
(``body[2].then[0]``, as the validator's paths) and text, with its trip count.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import DispatchError
from ..ir.nodes import (
    STMT_TYPES,
    Assign,
    Barrier,
    BinOp,
    Break,
    Continue,
    Eval,
    Expr,
    For,
    If,
    Let,
    Return,
    Stmt,
    Store,
    VarDecl,
    While,
)
from ..ir.program import Program
from ..ir.text import stmt_head
from ..ir.traverse import CHILD_FIELDS, Slot
from .host import storage_dtype
from .interpreter_exprs import ExprEval
from .memory import Memory

if TYPE_CHECKING:  # why: annotation only; reference.py imports this module
    from .reference import ReferenceBackend

COMPACT_MIN_LANES = 2048  # loops over at least this many lanes ...
COMPACT_RATIO = 4  # ... continue on a compacted copy once at most 1/4 of them are active
DEFAULT_MAX_LOOP_SECONDS = 10.0  # wall time a chunk may spend before its running loop is taken as endless


@dataclass
class _Loop:
    brk: np.ndarray  # lanes that executed break
    cont: np.ndarray  # lanes that executed continue in the current trip


@dataclass
class _Running:
    """A loop being executed (for the loop budget's message): the statement and its trips so far."""

    node: For | While
    trips: int = 0


def stmt_path(program: Program, node: Stmt) -> str:
    """The path of statement ``node`` (found by identity) in ``program``: ``body[1].then[0]``, the
    validator's form; ``"?"`` when it is not there."""
    stack: list[tuple[Sequence[Stmt], str]] = [(program.body, "body")]
    while stack:
        stmts, path = stack.pop()
        for i, s in enumerate(stmts):
            here = f"{path}[{i}]"
            if s is node:
                return here
            for f in CHILD_FIELDS.get(type(s), ()):
                if f.slot is Slot.BODY:
                    stack.append((getattr(s, f.name), f"{here}.{f.name}"))
    return "?"


def _loop_text(program: Program, r: _Running) -> str:
    return f"the {r.node.kind} loop at {stmt_path(program, r.node)} ({stmt_head(r.node)})"


class Chunk(ExprEval, covers=STMT_TYPES):
    """Executes the program for ``n_wg`` consecutive workgroups starting at ``wg_start``."""

    def __init__(self, backend: ReferenceBackend, program: Program, buffers: dict[str, Memory],
                 grid: tuple[int, int, int], wg_start: int, n_wg: int) -> None:
        self.program = program
        self.grid = grid
        self.wg_start = wg_start
        self.n_wg = n_wg
        self.inv = program.workgroup_invocations
        self.L = n_wg * self.inv
        self.max_iter = backend.max_loop_iterations
        self.max_seconds = backend.max_loop_seconds
        self.t0 = time.monotonic()
        self.deadline = self.t0 + self.max_seconds if self.max_seconds is not None else float("inf")
        self.running: list[_Running] = []  # loops being executed, outermost first (shared by compacted copies)
        self.compact_min = backend.compact_min_lanes
        self.sg_size = backend.subgroup_size
        self.lane = np.arange(self.L, dtype=np.int64)
        self.wg_local = self.lane // self.inv
        self.local = self.lane % self.inv
        self.mem = dict(buffers)
        for w in program.workgroup:
            data = np.zeros(w.count * n_wg * w.dtype.storage_lanes, dtype=storage_dtype(w.dtype))
            self.mem[w.name] = Memory(w.name, w.dtype, w.count, data, base=self.wg_local * w.count, copies=n_wg)
        self.all = np.ones(self.L, dtype=bool)
        self.none = np.zeros(self.L, dtype=bool)
        self.none.setflags(write=False)
        self.mask = self.all  # active lanes while evaluating expressions (atomics use it)
        self.scopes: list[dict[str, np.ndarray]] = [{}]
        self.loops: list[_Loop] = []
        self._builtins: dict[tuple[Any, ...], np.ndarray] = {}

    def run(self) -> None:
        self.block(self.program.body, self.all)

    # ---- helpers ----
    def merge(self, mask: np.ndarray, new: np.ndarray, old: np.ndarray) -> np.ndarray:
        """``new`` on the lanes of ``mask``, ``old`` elsewhere."""
        if mask is self.all:
            return new
        m = mask[:, None] if new.ndim == 2 or old.ndim == 2 else mask
        return np.where(m, new, old)

    def _same(self, new: np.ndarray, old: np.ndarray) -> np.ndarray:
        """Keep the identity of ``old`` when ``new`` holds the same lanes (fast paths use ``is``)."""
        return old if np.array_equal(new, old) else new

    def check_iterations(self, trips: int, node: For | While) -> None:
        """The loop budget (see the module docstring), checked at each trip of ``node`` (the innermost
        running loop)."""
        running = self.running[-1]
        running.trips = trips
        if trips > self.max_iter:
            raise DispatchError(
                f"{_loop_text(self.program, running)} in program {self.program.name!r} ran more than "
                f"{self.max_iter} iterations: likely an infinite loop",
                fix="make the loop end (check its condition, and that a break is reached), or raise the "
                    "trip cap: ReferenceBackend(max_loop_iterations=...)",
            )
        if time.monotonic() > self.deadline:
            raise self._timed_out()

    def _timed_out(self) -> DispatchError:
        # the loop with the most trips is the likely endless one; the others running are listed
        worst = max(self.running, key=lambda r: r.trips)
        others = [f"{_loop_text(self.program, r)}: {r.trips} trips" for r in self.running if r is not worst]
        nested = f" (loops running: {'; '.join(others)})" if others else ""
        return DispatchError(
            f"program {self.program.name!r} was still running after {time.monotonic() - self.t0:.1f} s: "
            f"{_loop_text(self.program, worst)} had run {worst.trips} trips without ending{nested}; likely an "
            f"infinite loop (the reference backend's budget is {self.max_seconds:g} s of wall time per chunk "
            f"of at most chunk_lanes invocations)",
            fix="make the loop end (check its condition, and that a break is reached); for a long loop that "
                "does end, raise the budget: ReferenceBackend(max_loop_seconds=60), or None for no time limit",
        )

    # ---- statements: each returns the mask of lanes that fall through ----
    def block(self, stmts: Sequence[Stmt], mask: np.ndarray) -> np.ndarray:
        self.scopes.append({})
        try:
            for s in stmts:
                new = self.visit(s, mask)
                if new is not mask:
                    if not new.any():
                        return self.none
                    mask = new
        finally:
            self.scopes.pop()
        return mask

    def eval_in(self, expr: Expr, mask: np.ndarray) -> np.ndarray:
        self.mask = mask
        return self.visit(expr)

    def visit_Let(self, s: Let, mask: np.ndarray) -> np.ndarray:
        self.scopes[-1][s.name] = self.eval_in(s.value, mask)
        return mask

    def visit_VarDecl(self, s: VarDecl, mask: np.ndarray) -> np.ndarray:
        if s.value is None:
            d = s.dtype
            shape = (1, d.lanes) if d.is_vector else (1,)
            value = np.zeros(shape, dtype=d.numpy_dtype)
        else:
            value = self.eval_in(s.value, mask)
        self.scopes[-1][s.name] = value
        return mask

    def visit_Assign(self, s: Assign, mask: np.ndarray) -> np.ndarray:
        value = self.eval_in(s.value, mask)
        scope = self.lookup_scope(s.name)
        scope[s.name] = self.merge(mask, value, scope[s.name])
        return mask

    def visit_Store(self, s: Store, mask: np.ndarray) -> np.ndarray:
        index = self.eval_in(s.index, mask)
        value = self.eval_in(s.value, mask)
        self.mem[s.buffer].store(index, value, mask)
        return mask

    def visit_Eval(self, s: Eval, mask: np.ndarray) -> np.ndarray:
        self.eval_in(s.value, mask)
        return mask

    def visit_Barrier(self, s: Barrier, mask: np.ndarray) -> np.ndarray:
        return mask

    def visit_Return(self, s: Return, mask: np.ndarray) -> np.ndarray:
        return self.none

    def visit_Break(self, s: Break, mask: np.ndarray) -> np.ndarray:
        loop = self.loops[-1]
        loop.brk = loop.brk | mask
        return self.none

    def visit_Continue(self, s: Continue, mask: np.ndarray) -> np.ndarray:
        loop = self.loops[-1]
        loop.cont = loop.cont | mask
        return self.none

    def visit_If(self, s: If, mask: np.ndarray) -> np.ndarray:
        cond = self.eval_in(s.cond, mask)
        if cond.shape[0] == 1:  # uniform condition
            return self.block(s.then if cond[0] else s.otherwise, mask)
        m_then = mask & cond
        m_else = mask & ~cond
        if not m_else.any():
            return self.block(s.then, mask)
        if not m_then.any():
            return self.block(s.otherwise, mask)
        out = self.block(s.then, m_then) | self.block(s.otherwise, m_else)
        return self._same(out, mask)

    def visit_While(self, s: While, mask: np.ndarray) -> np.ndarray:
        return self._loop(s, mask, None)

    def visit_For(self, s: For, mask: np.ndarray) -> np.ndarray:
        start = self.eval_in(s.start, mask)
        step = np.array([s.step]).astype(start.dtype)  # wraps for u32 with a negative step
        self.scopes.append({s.var: start})
        try:
            return self._loop(s, mask, step)
        finally:
            self.scopes.pop()

    # ``step`` (the for loop's step as a value: an array here, a Shadowed in the model chunk) is None for a
    # while loop; it tells the two apart
    def _loop(self, s: For | While, mask: np.ndarray, step: Any) -> np.ndarray:
        """While loop, or for loop when ``step`` is given (its variable is in the top scope)."""
        loop = _Loop(brk=self.none, cont=self.none)
        self.loops.append(loop)
        self.running.append(_Running(s))
        try:
            done = self._trips(s, step, loop, mask, 0)
        finally:
            self.loops.pop()
            self.running.pop()
        return self._same(done | loop.brk, mask)

    def _trips(self, s: For | While, step: Any, loop: _Loop, active: np.ndarray, trips: int) -> np.ndarray:
        """Run the trips of a loop from the condition check on; return the lanes whose condition failed."""
        is_for = step is not None
        done: np.ndarray = self.none
        out: np.ndarray
        while True:
            if self.L >= self.compact_min and np.count_nonzero(active) * COMPACT_RATIO <= self.L:
                out = done | self._compacted(s, step, loop, active, trips)
                return out
            cond = self.loop_cond(s, is_for, active)
            if cond.shape[0] == 1:  # uniform condition
                if not cond[0]:
                    out = done | active
                    return out
            else:
                failed = active & ~cond
                if failed.any():
                    done = done | failed
                    active = active & cond
                    if not active.any():
                        return done
            trips += 1
            self.check_iterations(trips, s)
            loop.cont = self.none
            fall = self.block(s.body, active)
            if loop.cont.any():
                fall = fall | loop.cont
            if fall is not active:
                fall = self._same(fall, active)
            active = fall
            if not active.any():
                return done
            if is_for:
                assert isinstance(s, For)
                self.loop_step(s, step, active)

    def loop_cond(self, s: For | While, is_for: bool, active: np.ndarray) -> np.ndarray:
        """The lane mask of a loop's condition (a for loop's counter against its end)."""
        if is_for:
            assert isinstance(s, For)
            v = self.scopes[-1][s.var]
            end = self.eval_in(s.end, active)
            cmp: np.ndarray = (v > end) if s.step < 0 else (v < end)
            return cmp
        assert isinstance(s, While)
        return self.eval_in(s.cond, active)

    def loop_step(self, s: For, step: Any, active: np.ndarray) -> None:
        """Advance a for loop's counter on the active lanes (it lives in the innermost scope)."""
        scope = self.scopes[-1]
        scope[s.var] = self.merge(active, self.arith(BinOp.ADD, scope[s.var], step), scope[s.var])

    # ---- lane compaction: divergent loops continue on the few lanes still running ----
    def _compacted(self, s: For | While, step: Any, loop: _Loop, active: np.ndarray, trips: int) -> np.ndarray:
        idx = np.flatnonzero(active)
        sub = self._subset(idx)
        origin = [dict(scope) for scope in sub.scopes]
        sub_loop = _Loop(brk=sub.none, cont=sub.none)
        sub.loops.append(sub_loop)
        sub_done = sub._trips(s, step, sub_loop, sub.all, trips)
        # write back the variables the loop changed (scopes opened inside the loop are gone)
        for scope, sub_scope, orig in zip(self.scopes, sub.scopes, origin):
            for name, value in sub_scope.items():
                if value is orig[name]:
                    continue
                old = scope[name]
                full = np.broadcast_to(old, (self.L,) + old.shape[1:]).copy()
                full[idx] = value
                scope[name] = full
        loop.brk = loop.brk | self._scatter(sub_loop.brk, idx)
        return self._scatter(sub_done, idx)

    def _scatter(self, sub_mask: np.ndarray, idx: np.ndarray) -> np.ndarray:
        out = np.zeros(self.L, dtype=bool)
        out[idx] = sub_mask
        return out

    def _subset(self, idx: np.ndarray) -> Chunk:
        """An executor for the lanes ``idx`` of this one: same memory, gathered variables."""
        def take(v: np.ndarray) -> np.ndarray:
            return v if v.shape[0] == 1 else v[idx]

        sub = object.__new__(Chunk)
        sub.__dict__.update(self.__dict__)
        sub.L = idx.size
        sub.lane = self.lane[idx]
        sub.wg_local = self.wg_local[idx]
        sub.local = self.local[idx]
        sub.mem = dict(self.mem)
        for w in self.program.workgroup:
            m = copy.copy(self.mem[w.name])
            assert m.base is not None  # workgroup arrays have one copy per workgroup
            m.base = m.base[idx]
            sub.mem[w.name] = m
        sub.all = np.ones(sub.L, dtype=bool)
        sub.none = np.zeros(sub.L, dtype=bool)
        sub.none.setflags(write=False)
        sub.mask = sub.all
        sub.scopes = [{k: take(v) for k, v in scope.items()} for scope in self.scopes]
        sub.loops = []
        sub._builtins = {k: take(v) for k, v in self._builtins.items()}
        return sub


__all__ = ["Chunk", "COMPACT_MIN_LANES", "COMPACT_RATIO", "DEFAULT_MAX_LOOP_SECONDS",
           "stmt_path"]
