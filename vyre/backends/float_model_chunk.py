"""The model interpreter: the reference interpreter (:mod:`vyre.backends.interpreter`) with every
value a :class:`~vyre.backends.float_model_rules.Shadowed` (reference value, error bound,
unspecified mask) and shadow memory next to every buffer.

Control flow follows the reference values. A branch or loop condition that is unspecified on an
active lane, or a store whose address is unspecified or out of bounds, means a conforming GPU may
write elsewhere: the run is *poisoned* (every output unspecified) or the buffer is. Lane
compaction is off (a model run is for checking, not speed).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

import numpy as np

from ..errors import UnsupportedFeatureError
from ..ir.nodes import (
    Atomic,
    AtomicOp,
    Binary,
    BinOp,
    Bitcast,
    BufLen,
    Builtin,
    Cast,
    Expr,
    Extract,
    Fma,
    For,
    If,
    Lit,
    Load,
    Select,
    Store,
    Subgroup,
    SubgroupOp,
    Unary,
    UnOp,
    VarDecl,
    VecNew,
    While,
)
from ..ir.program import Program
from . import float_model_rules as fm
from . import semantics as sem
from .float_model_rules import Shadowed, exact
from .interpreter import Chunk
from .interpreter_exprs import vec_new
from .memory import Memory

if TYPE_CHECKING:  # why: annotation only; reference.py imports the interpreter
    from .reference import ReferenceBackend


class ShadowMemory:
    """Bounds (``err``) and unspecified flags (``unk``) per slot of a :class:`Memory`'s view."""

    def __init__(self, mem: Memory, from_data: bool) -> None:
        self.mem = mem
        if from_data and mem.dtype.is_float:
            s = exact(np.asarray(mem.view))
            self.err = np.array(np.broadcast_to(s.e, mem.view.shape))
            self.unk = np.array(np.broadcast_to(s.u, mem.view.shape))
        else:
            self.err = np.zeros(mem.view.shape)
            self.unk = np.zeros(mem.view.shape, dtype=bool)
        self.poisoned = False

    def gather(self, slot: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        err, unk = self.err[slot], self.unk[slot]
        if self.mem.lanes == 3:
            err, unk = err[:, :3], unk[:, :3]
        return err, unk | self.poisoned


class ModelState:
    """What a model run shares across its chunks."""

    def __init__(self) -> None:
        self.poisoned = False  # a control decision or an address was unspecified somewhere


def _lanes_mask(x: np.ndarray, n: int) -> np.ndarray:
    """A per-lane mask (n,) from a value-shaped flag array ((1,), (n,), (.., lanes))."""
    flags = np.asarray(x.any(axis=1)) if x.ndim == 2 else x
    return np.broadcast_to(flags, (n,))


def _align(a: Shadowed, b: Shadowed) -> tuple[Shadowed, Shadowed]:
    """A scalar operand of a vector operation broadcast over the components."""
    if a.v.ndim == b.v.ndim:
        return a, b
    if a.v.ndim == 1:
        return Shadowed(a.v[:, None], a.e[:, None], a.u[:, None]), b
    return a, Shadowed(b.v[:, None], b.e[:, None], b.u[:, None])


class ModelChunk(Chunk):
    """A :class:`Chunk` computing :class:`Shadowed` values (see the module docstring)."""

    def __init__(self, backend: ReferenceBackend, program: Program, buffers: dict[str, Memory],
                 shadows: dict[str, ShadowMemory], state: ModelState, grid: tuple[int, int, int],
                 wg_start: int, n_wg: int) -> None:
        super().__init__(backend, program, buffers, grid, wg_start, n_wg)
        self.compact_min = np.iinfo(np.int64).max
        self.state = state
        self.shadows = dict(shadows)
        for w in program.workgroup:
            self.shadows[w.name] = ShadowMemory(self.mem[w.name], from_data=False)

    # ---- values -------------------------------------------------------------------------
    # The visitor's values here are Shadowed where the base class's are plain arrays: the expression
    # handlers and merge override the base's with Shadowed types (type: ignore[override]), and sv() is the
    # one place a visit's result is taken as a Shadowed.
    def sv(self, node: Expr) -> Shadowed:
        """The model value of an expression (the base class types values as plain arrays)."""
        return cast(Shadowed, self.visit(node))

    def sv_in(self, expr: Expr, mask: np.ndarray) -> Shadowed:
        self.mask = mask
        return self.sv(expr)

    def merge(self, mask: np.ndarray, new: Shadowed, old: Shadowed) -> Shadowed:  # type: ignore[override]
        if mask is self.all:
            return new
        m = mask[:, None] if new.v.ndim == 2 or old.v.ndim == 2 else mask
        return Shadowed(np.where(m, new.v, old.v), np.where(m, new.e, old.e), np.where(m, new.u, old.u))

    def _decide(self, cond: Shadowed, mask: np.ndarray) -> np.ndarray:
        """The reference's decision; an unspecified one on an active lane poisons the run."""
        if (_lanes_mask(cond.u, self.L) & mask).any():
            self.state.poisoned = True
        return cond.v

    def visit_Lit(self, e: Lit) -> Shadowed:  # type: ignore[override]
        return exact(super().visit_Lit(e))

    def visit_BufLen(self, e: BufLen) -> Shadowed:  # type: ignore[override]
        return exact(super().visit_BufLen(e))

    def visit_Builtin(self, e: Builtin) -> Shadowed:  # type: ignore[override]
        return exact(super().visit_Builtin(e))

    def visit_Load(self, e: Load) -> Shadowed:  # type: ignore[override]
        index = self.sv(e.index)
        mem, sh = self.mem[e.buffer], self.shadows[e.buffer]
        v = mem.load(index.v)
        if mem.count == 0:
            return Shadowed(v, 0.0, True)
        slot, ok = mem.address(index.v)
        err, unk = sh.gather(slot)
        bad = index.u | ~ok  # an unknown or out-of-bounds address may read anything
        if unk.ndim == 2:
            bad = bad[:, None]
        return Shadowed(v, np.where(bad, 0.0, err), unk | bad)

    def visit_Unary(self, e: Unary) -> Shadowed:  # type: ignore[override]
        a = self.sv(e.arg)
        r = self.unary(e.op, a.v)
        if not a.is_float:
            return Shadowed(r, 0.0, a.u)
        op = e.op
        rule = _UNARY_RULES.get(op)
        if rule is not None:
            return rule(a, r)
        if op in _STEPS:
            return fm.stepwise(_STEPS[op], a, r)
        return fm.neg_abs(a, r)  # NEG, ABS

    def visit_Binary(self, e: Binary) -> Shadowed:  # type: ignore[override]
        a, b = _align(self.sv(e.lhs), self.sv(e.rhs))
        op = e.op
        r = self.binary(op, a.v, b.v)
        if op in (BinOp.EQ, BinOp.NE, BinOp.LT, BinOp.LE, BinOp.GT, BinOp.GE):
            return Shadowed(r, 0.0, fm.compare(a, b))
        if op in (BinOp.AND, BinOp.OR):
            return Shadowed(r, 0.0, fm.logical(op is BinOp.AND, a, b))
        if not a.is_float:
            return Shadowed(r, 0.0, a.u | b.u)
        if op in (BinOp.ADD, BinOp.SUB):
            return fm.add(a, b, r)
        if op is BinOp.MUL:
            return fm.mul(a, b, r)
        if op is BinOp.DIV:
            return fm.div(a, b, r)
        if op is BinOp.REM:
            return fm.rem(a, b, r)
        if op is BinOp.POW:
            return fm.pow_(a, b, r)
        return fm.lipschitz(a, b, r)  # MIN, MAX

    def visit_Select(self, e: Select) -> Shadowed:  # type: ignore[override]
        c, t, f = self.sv(e.cond), self.sv(e.if_true), self.sv(e.if_false)
        cond = c.v[:, None] if t.v.ndim == 2 else c.v
        return fm.select(c, t, f, np.where(cond, t.v, f.v))

    def visit_Cast(self, e: Cast) -> Shadowed:  # type: ignore[override]
        a = self.sv(e.arg)
        r = sem.cast(a.v, e.dtype)
        if r is a.v:
            return a
        if r.dtype == np.bool_:
            return fm.to_bool(a, r)
        if r.dtype.kind == "f":
            return fm.to_float(a, r)
        if a.is_float:
            return fm.to_int(a, r)
        return Shadowed(r, 0.0, a.u)

    def visit_Bitcast(self, e: Bitcast) -> Shadowed:  # type: ignore[override]
        a = self.sv(e.arg)
        r = sem.bitcast(a.v, e.dtype)
        same = a.v.ndim == r.ndim and (r.ndim == 1 or a.v.shape[1] == r.shape[1])
        return fm.bitcast(a, r, same)

    def visit_Fma(self, e: Fma) -> Shadowed:  # type: ignore[override]
        a, b, c = (self.sv(x) for x in (e.a, e.b, e.c))
        return fm.fma(a, b, c, sem.fma(a.v, b.v, c.v))

    def visit_VecNew(self, e: VecNew) -> Shadowed:  # type: ignore[override]
        args = [self.sv(a) for a in e.args]
        n = e.dtype.lanes
        return Shadowed(vec_new([a.v for a in args], n), vec_new([a.e for a in args], n),
                        vec_new([a.u for a in args], n))

    def visit_Extract(self, e: Extract) -> Shadowed:  # type: ignore[override]
        a = self.sv(e.arg)
        return Shadowed(a.v[:, e.lane], a.e[:, e.lane], a.u[:, e.lane])

    def visit_Subgroup(self, e: Subgroup) -> Shadowed:  # type: ignore[override]
        a = self.sv(e.value)
        lane = None if e.lane is None else self.sv(e.lane)
        if a.is_float:  # no error model for cross-lane float arithmetic yet: refuse rather than misjudge a GPU
            raise UnsupportedFeatureError(
                f"the float model does not cover subgroup operations on floats (subgroup_{e.op.value} in program "
                f"{self.program.name!r})", fix="compare them with ReferenceBackend(subgroup_size=...) at the "
                "adapter's subgroup size, as tests/backends/test_subgroup_backends.py does")
        r = self.subgroup(e.op, a.v, None if lane is None else lane.v)
        # integers and bools are exact; an unspecified operand in the subgroup makes every result unspecified
        u = self.subgroup(SubgroupOp.ANY, np.array(_lanes_mask(a.u, self.L)), None)
        if lane is not None:
            u = u | _lanes_mask(lane.u, self.L)
        return Shadowed(r, 0.0, u[:, None] if r.ndim == 2 else u)

    def visit_Atomic(self, e: Atomic) -> Shadowed:  # type: ignore[override]
        index = self.sv(e.index)
        expected = None if e.expected is None else self.sv(e.expected)
        value = None if e.value is None else self.sv(e.value)
        mem, sh = self.mem[e.buffer], self.shadows[e.buffer]
        old = mem.atomic(e.op, index.v, None if value is None else value.v,
                         None if expected is None else expected.v, self.mask)
        if mem.count == 0:
            return Shadowed(old, 0.0, True)
        n = self.L
        slot, ok = mem.address(index.v)
        slot = np.broadcast_to(slot, (n,))
        active = self.mask & np.broadcast_to(ok, (n,))
        if (self.mask & np.broadcast_to(index.u | ~ok, (n,))).any():
            sh.poisoned = True  # an atomic at an unknown address may change any element
        if e.op is not AtomicOp.LOAD:
            opnd = np.zeros(n, dtype=bool)
            for x in (value, expected):
                if x is not None:
                    opnd |= np.broadcast_to(x.u, (n,))
            hit = slot[active & opnd]
            sh.unk[hit] = True
        _, unk = sh.gather(slot)
        return Shadowed(old, 0.0, unk | np.broadcast_to(index.u, (n,)) | ~np.broadcast_to(ok, (n,)))

    # ---- statements ---------------------------------------------------------------------
    def visit_VarDecl(self, s: VarDecl, mask: np.ndarray) -> np.ndarray:
        if s.value is None:
            d = s.dtype
            shape = (1, d.lanes) if d.is_vector else (1,)
            self.scopes[-1][s.name] = exact(np.zeros(shape, dtype=d.numpy_dtype))  # type: ignore[assignment]
            return mask
        return super().visit_VarDecl(s, mask)

    def visit_Store(self, s: Store, mask: np.ndarray) -> np.ndarray:
        index = self.sv_in(s.index, mask)
        value = self.sv_in(s.value, mask)
        mem, sh = self.mem[s.buffer], self.shadows[s.buffer]
        mem.store(index.v, value.v, mask)
        if mem.count == 0:
            return mask
        n = self.L
        slot, ok = mem.address(index.v)
        ok = np.broadcast_to(ok, (n,))
        if (mask & (np.broadcast_to(index.u, (n,)) | ~ok)).any():
            sh.poisoned = True  # the GPU may have written any element
        act = mask & ok & ~np.broadcast_to(index.u, (n,))
        if not act.any():
            return mask
        slots = np.broadcast_to(slot, (n,))[act]
        shape = (n,) + value.v.shape[1:]
        err = np.broadcast_to(value.e, shape)[act]
        unk = np.broadcast_to(value.u, shape)[act]
        uniq, counts = np.unique(slots, return_counts=True)
        raced = uniq[counts > 1]  # several invocations wrote one element: which one wins is not defined
        if mem.lanes > 1:
            sh.err[slots, : mem.lanes] = err
            sh.unk[slots, : mem.lanes] = unk
            sh.unk[raced, : mem.lanes] = True
        else:
            sh.err[slots] = err
            sh.unk[slots] = unk
            sh.unk[raced] = True
        return mask

    def visit_If(self, s: If, mask: np.ndarray) -> np.ndarray:
        cond = self.sv_in(s.cond, mask)
        c = self._decide(cond, mask)
        if c.shape[0] == 1:
            return self.block(s.then if c[0] else s.otherwise, mask)
        m_then, m_else = mask & c, mask & ~c
        if not m_else.any():
            return self.block(s.then, mask)
        if not m_then.any():
            return self.block(s.otherwise, mask)
        return self._same(self.block(s.then, m_then) | self.block(s.otherwise, m_else), mask)

    def visit_For(self, s: For, mask: np.ndarray) -> np.ndarray:
        start = self.sv_in(s.start, mask)
        step = exact(np.array([s.step]).astype(start.dtype))
        self.scopes.append({s.var: start})  # type: ignore[dict-item]
        try:
            return self._loop(s, mask, step)
        finally:
            self.scopes.pop()

    def loop_cond(self, s: For | While, is_for: bool, active: np.ndarray) -> np.ndarray:
        if is_for:
            assert isinstance(s, For)
            v = cast(Shadowed, self.scopes[-1][s.var])
            end = self.sv_in(s.end, active)
            cmp = BinOp.GT if s.step < 0 else BinOp.LT
            cond = Shadowed(self.binary(cmp, v.v, end.v), 0.0, v.u | end.u)
        else:
            assert isinstance(s, While)
            cond = self.sv_in(s.cond, active)
        return self._decide(cond, active)

    def loop_step(self, s: For, step: Shadowed, active: np.ndarray) -> None:
        scope: dict[str, Any] = self.scopes[-1]  # holds Shadowed values here
        var = scope[s.var]
        nxt = Shadowed(self.arith(BinOp.ADD, var.v, step.v), 0.0, var.u)
        scope[s.var] = self.merge(active, nxt, var)


_UNARY_RULES = {
    UnOp.SQRT: fm.sqrt,
    UnOp.INVERSE_SQRT: fm.inverse_sqrt,
    UnOp.EXP: lambda a, r: fm.exp(a, r, base2=False),
    UnOp.EXP2: lambda a, r: fm.exp(a, r, base2=True),
    UnOp.LOG: lambda a, r: fm.log(a, r, base2=False),
    UnOp.LOG2: lambda a, r: fm.log(a, r, base2=True),
    UnOp.SIN: fm.sin_cos,
    UnOp.COS: fm.sin_cos,
    UnOp.TAN: fm.tan,
    UnOp.TANH: fm.tanh,
    UnOp.FRACT: fm.fract,
    UnOp.SIGN: fm.sign,
}

_STEPS = {UnOp.FLOOR: np.floor, UnOp.CEIL: np.ceil, UnOp.ROUND: np.rint, UnOp.TRUNC: np.trunc}


__all__ = ["ModelChunk", "ModelState", "ShadowMemory"]
