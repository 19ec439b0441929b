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
"""

from __future__ import annotations

import copy
import threading
from collections import OrderedDict
from dataclasses import dataclass

import numpy as np

from ..errors import DispatchError
from ..ir.nodes import AtomicOp, BinOp, BuiltinName, UnOp
from ..ir.program import Program
from ..ir.types import DataType
from . import semantics as sem
from .config import DispatchConfig
from .host import plan_dispatch, storage_dtype, storage_to_host

DEFAULT_CHUNK_LANES = 1 << 20
DEFAULT_MAX_LOOP_ITERATIONS = 10_000_000
WORKGROUP_MEMORY_BUDGET = 256 << 20  # bytes of workgroup arrays one chunk may allocate
COMPACT_MIN_LANES = 2048  # loops over at least this many lanes ...
COMPACT_RATIO = 4  # ... continue on a compacted copy once at most 1/4 of them are active


def _validator():
    try:
        from ..ir.validate import validate
    except ImportError:
        return None
    return validate


# --------------------------------------------------------------------------- memory
class Memory:
    """A storage buffer or a chunk's workgroup array, in storage layout.

    ``view`` is ``(slots,)`` for scalars or ``(slots, storage_lanes)`` for vectors, sharing
    memory with ``data``. Element ``i`` of the copy used by lane ``k`` lives at slot
    ``base[k] + i`` (``base`` is None for storage buffers, which have one copy).
    """

    def __init__(self, name: str, dtype: DataType, count: int, data: np.ndarray, base: np.ndarray | None = None,
                 copies: int = 1):
        self.name = name
        self.dtype = dtype
        self.count = count
        self.data = data
        self.base = base
        self.lanes = dtype.lanes
        slots = count * copies
        if dtype.is_vector:
            self.view = data[: slots * dtype.storage_lanes].reshape(slots, dtype.storage_lanes)
        else:
            self.view = data[:slots]

    def address(self, index: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(slot, in_bounds) for an index value (u32 or i32; negative i32 is out of bounds)."""
        i = index.astype(np.int64)
        ok = (i >= 0) & (i < self.count)
        slot = np.where(ok, i, 0)
        if self.base is not None:
            slot = self.base + slot
        return slot, ok

    def load(self, index: np.ndarray) -> np.ndarray:
        slot, ok = self.address(index)
        vdtype = self.dtype.numpy_dtype
        if self.count == 0:
            shape = (slot.shape[0], self.lanes) if self.lanes > 1 else (slot.shape[0],)
            return np.zeros(shape, dtype=vdtype)
        v = self.view[slot]
        if self.lanes == 3:
            v = v[:, :3]
        if not ok.all():
            v = v.copy()
            v[~np.broadcast_to(ok, slot.shape)] = 0
        if self.dtype is DataType.BOOL:
            return v != 0
        return v

    def store(self, index: np.ndarray, value: np.ndarray, mask: np.ndarray) -> None:
        slot, ok = self.address(index)
        act = mask & ok
        if self.count == 0 or not act.any():
            return
        n = act.shape[0]
        slots = np.broadcast_to(slot, (n,))[act]
        vals = np.broadcast_to(value, (n,) + value.shape[1:])[act]
        if self.dtype is DataType.BOOL:
            vals = vals.astype(np.uint32)
        if self.lanes > 1:
            self.view[slots, : self.lanes] = vals
        else:
            self.view[slots] = vals

    # ---- atomics: consistent with running the active lanes one at a time in lane order
    def atomic(self, op: AtomicOp, index: np.ndarray, value: np.ndarray | None, expected: np.ndarray | None,
               mask: np.ndarray) -> np.ndarray:
        n = mask.shape[0]
        dtype = self.dtype.numpy_dtype
        old = np.zeros(n, dtype=dtype)
        slot, ok = self.address(index)
        lanes = np.flatnonzero(mask & ok)
        if self.count == 0 or lanes.size == 0:
            return old
        addr = np.broadcast_to(slot, (n,))[lanes]
        if op is AtomicOp.LOAD:
            old[lanes] = self.view[addr]
            return old
        vals = np.broadcast_to(value, (n,))[lanes]
        order = np.argsort(addr, kind="stable")  # lane order kept inside each address
        a = addr[order]
        v = vals[order]
        start = np.empty(a.size, dtype=bool)
        start[0] = True
        np.not_equal(a[1:], a[:-1], out=start[1:])
        end = np.empty(a.size, dtype=bool)
        end[-1] = True
        end[:-1] = start[1:]
        base = self.view[a]
        if op in (AtomicOp.ADD, AtomicOp.SUB):
            old_s, final = _scan_add(base, v, start, end, op is AtomicOp.SUB)
        elif op is AtomicOp.EXCHANGE:
            old_s = np.empty_like(v)
            old_s[0] = base[0]
            old_s[1:] = np.where(start[1:], base[1:], v[:-1])
            final = v[end]
        elif op is AtomicOp.COMPARE_EXCHANGE:
            exp = np.broadcast_to(expected, (n,))[lanes][order]
            old_s, final = _compare_exchange(base, v, exp, start, end)
        else:
            ufunc = {
                AtomicOp.MIN: np.minimum, AtomicOp.MAX: np.maximum, AtomicOp.AND: np.bitwise_and,
                AtomicOp.OR: np.bitwise_or, AtomicOp.XOR: np.bitwise_xor,
            }[op]
            incl = _segmented_scan(ufunc, v, start)
            old_s = base.copy()
            follow = ~start
            old_s[follow] = ufunc(base[follow], incl[np.flatnonzero(follow) - 1])
            final = ufunc(base[end], incl[end])
        self.view[a[end]] = final
        old[lanes[order]] = old_s
        return old


def _scan_add(base, v, start, end, subtract: bool):
    """Old values and final value per address of grouped atomic add/sub (wrapping)."""
    u = v.view(np.uint32).astype(np.uint64)
    incl = np.cumsum(u, dtype=np.uint64)
    excl = incl - u
    group = np.cumsum(start) - 1
    excl = excl - excl[start][group]  # exclusive sum within the address group
    total = (excl + u)[end]
    b = base.view(np.uint32).astype(np.uint64)
    if subtract:
        old = b - excl
        final = b[end] - total
    else:
        old = b + excl
        final = b[end] + total
    return old.astype(np.uint32).view(base.dtype), final.astype(np.uint32).view(base.dtype)


def _segmented_scan(ufunc, v, start):
    """Inclusive scan of ``ufunc`` restarting at every ``start`` (Hillis-Steele doubling)."""
    acc = v.copy()
    group = np.cumsum(start)
    d = 1
    while d < acc.size:
        same = group[d:] == group[:-d]
        if not same.any():
            break
        acc[d:] = np.where(same, ufunc(acc[:-d], acc[d:]), acc[d:])
        d *= 2
    return acc


def _compare_exchange(base, v, exp, start, end):
    """Sequential compare-exchange; vectorized for addresses touched by one lane only."""
    single = start & end
    old = base.copy()
    final_all = np.where(single & (base == exp), v, base)
    for s in np.flatnonzero(start & ~end):
        cur = base[s]
        k = s
        while True:
            old[k] = cur
            if cur == exp[k]:
                cur = v[k]
            if end[k]:
                break
            k += 1
        final_all[k] = cur
    return old, final_all[end]


# --------------------------------------------------------------------------- execution
@dataclass
class _Loop:
    brk: np.ndarray  # lanes that executed break
    cont: np.ndarray  # lanes that executed continue in the current trip


class _Chunk:
    """Executes the program for ``n_wg`` consecutive workgroups starting at ``wg_start``."""

    def __init__(self, backend: "ReferenceBackend", program: Program, buffers: dict[str, Memory],
                 grid: tuple[int, int, int], wg_start: int, n_wg: int):
        self.program = program
        self.grid = grid
        self.wg_start = wg_start
        self.n_wg = n_wg
        self.inv = program.workgroup_invocations
        self.L = n_wg * self.inv
        self.max_iter = backend.max_loop_iterations
        self.compact_min = backend.compact_min_lanes
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
        self._builtins: dict[tuple, np.ndarray] = {}

    def run(self) -> None:
        self.block(self.program.body, self.all)

    # ---- helpers ----
    def lookup_scope(self, name: str) -> dict[str, np.ndarray]:
        for scope in reversed(self.scopes):
            if name in scope:
                return scope
        raise DispatchError(f"program {self.program.name!r} uses undefined variable {name!r}",
                            fix="validate the program: Program.validate_program()")

    def merge(self, mask: np.ndarray, new: np.ndarray, old: np.ndarray) -> np.ndarray:
        """``new`` on the lanes of ``mask``, ``old`` elsewhere."""
        if mask is self.all:
            return new
        m = mask[:, None] if new.ndim == 2 or old.ndim == 2 else mask
        return np.where(m, new, old)

    def _same(self, new: np.ndarray, old: np.ndarray) -> np.ndarray:
        """Keep the identity of ``old`` when ``new`` holds the same lanes (fast paths use ``is``)."""
        return old if np.array_equal(new, old) else new

    def check_iterations(self, trips: int, node) -> None:
        if trips > self.max_iter:
            raise DispatchError(
                f"a {node.kind} loop in program {self.program.name!r} ran more than {self.max_iter} iterations: "
                "likely an infinite loop",
                fix="check the loop condition, or raise ReferenceBackend(max_loop_iterations=...)",
            )

    # ---- statements: each returns the mask of lanes that fall through ----
    def block(self, stmts, mask: np.ndarray) -> np.ndarray:
        self.scopes.append({})
        try:
            for s in stmts:
                new = getattr(self, "s_" + s.kind)(s, mask)
                if new is not mask:
                    if not new.any():
                        return self.none
                    mask = new
        finally:
            self.scopes.pop()
        return mask

    def eval_in(self, expr, mask: np.ndarray) -> np.ndarray:
        self.mask = mask
        return self.eval(expr)

    def s_let(self, s, mask):
        self.scopes[-1][s.name] = self.eval_in(s.value, mask)
        return mask

    def s_var(self, s, mask):
        if s.value is None:
            d = s.dtype
            shape = (1, d.lanes) if d.is_vector else (1,)
            value = np.zeros(shape, dtype=d.numpy_dtype)
        else:
            value = self.eval_in(s.value, mask)
        self.scopes[-1][s.name] = value
        return mask

    def s_assign(self, s, mask):
        value = self.eval_in(s.value, mask)
        scope = self.lookup_scope(s.name)
        scope[s.name] = self.merge(mask, value, scope[s.name])
        return mask

    def s_store(self, s, mask):
        index = self.eval_in(s.index, mask)
        value = self.eval_in(s.value, mask)
        self.mem[s.buffer].store(index, value, mask)
        return mask

    def s_eval(self, s, mask):
        self.eval_in(s.value, mask)
        return mask

    def s_barrier(self, s, mask):
        return mask

    def s_return(self, s, mask):
        return self.none

    def s_break(self, s, mask):
        loop = self.loops[-1]
        loop.brk = loop.brk | mask
        return self.none

    def s_continue(self, s, mask):
        loop = self.loops[-1]
        loop.cont = loop.cont | mask
        return self.none

    def s_if(self, s, mask):
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

    def s_while(self, s, mask):
        return self._loop(s, mask, None)

    def s_for(self, s, mask):
        start = self.eval_in(s.start, mask)
        step = np.array([s.step]).astype(start.dtype)  # wraps for u32 with a negative step
        self.scopes.append({s.var: start})
        try:
            return self._loop(s, mask, step)
        finally:
            self.scopes.pop()

    def _loop(self, s, mask, step):
        """While loop, or for loop when ``step`` is given (its variable is in the top scope)."""
        loop = _Loop(brk=self.none, cont=self.none)
        self.loops.append(loop)
        try:
            done = self._trips(s, step, loop, mask, 0)
        finally:
            self.loops.pop()
        return self._same(done | loop.brk, mask)

    def _trips(self, s, step, loop: _Loop, active: np.ndarray, trips: int) -> np.ndarray:
        """Run the trips of a loop from the condition check on; return the lanes whose condition failed."""
        is_for = step is not None
        scope = self.scopes[-1]
        done = self.none
        while True:
            if self.L >= self.compact_min and np.count_nonzero(active) * COMPACT_RATIO <= self.L:
                return done | self._compacted(s, step, loop, active, trips)
            if is_for:
                v = scope[s.var]
                end = self.eval_in(s.end, active)
                cond = (v > end) if s.step < 0 else (v < end)
            else:
                cond = self.eval_in(s.cond, active)
            if cond.shape[0] == 1:  # uniform condition
                if not cond[0]:
                    return done | active
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
                scope[s.var] = self.merge(active, self.arith(BinOp.ADD, scope[s.var], step), scope[s.var])

    # ---- lane compaction: divergent loops continue on the few lanes still running ----
    def _compacted(self, s, step, loop: _Loop, active: np.ndarray, trips: int) -> np.ndarray:
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

    def _subset(self, idx: np.ndarray) -> "_Chunk":
        """An executor for the lanes ``idx`` of this one: same memory, gathered variables."""
        take = lambda v: v if v.shape[0] == 1 else v[idx]  # noqa: E731
        sub = object.__new__(_Chunk)
        sub.__dict__.update(self.__dict__)
        sub.L = idx.size
        sub.lane = self.lane[idx]
        sub.wg_local = self.wg_local[idx]
        sub.local = self.local[idx]
        sub.mem = dict(self.mem)
        for w in self.program.workgroup:
            m = copy.copy(self.mem[w.name])
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

    # ---- expressions ----
    def eval(self, e) -> np.ndarray:
        return getattr(self, "e_" + e.kind)(e)

    def e_lit(self, e):
        return np.array([e.value], dtype=e.dtype.numpy_dtype)

    def e_var(self, e):
        return self.lookup_scope(e.name)[e.name]

    def e_load(self, e):
        return self.mem[e.buffer].load(self.eval(e.index))

    def e_len(self, e):
        return np.array([self.mem[e.buffer].count], dtype=np.uint32)

    def e_builtin(self, e):
        key = (e.name, e.axis)
        if key not in self._builtins:
            self._builtins[key] = self._builtin(e.name, e.axis)
        return self._builtins[key]

    def _builtin(self, name: BuiltinName, axis: int | None) -> np.ndarray:
        gx, gy, _ = self.grid
        wx, wy, _ = self.program.workgroup_size
        w = self.wg_start + self.wg_local
        l = self.local
        if name is BuiltinName.NUM_WORKGROUPS:
            return np.array([self.grid[axis]], dtype=np.uint32)
        if name is BuiltinName.LOCAL_INDEX:
            v = l
        elif name is BuiltinName.GLOBAL_INDEX:
            v = w * self.inv + l
        else:
            wid = (w % gx, (w // gx) % gy, w // (gx * gy))[axis]
            lid = (l % wx, (l // wx) % wy, l // (wx * wy))[axis]
            if name is BuiltinName.WORKGROUP_ID:
                v = wid
            elif name is BuiltinName.LOCAL_ID:
                v = lid
            else:  # GLOBAL_ID
                v = wid * self.program.workgroup_size[axis] + lid
        return v.astype(np.uint32)  # wraps like u32 arithmetic on the GPU

    def e_unary(self, e):
        x = self.eval(e.arg)
        op = e.op
        fn = _UNARY.get(op)
        if fn is not None:
            return fn(x)
        if op is UnOp.NEG:
            return sem.float_op(np.negative, x) if x.dtype.kind == "f" else np.negative(x)
        if op is UnOp.NOT:
            return np.logical_not(x) if x.dtype == np.bool_ else np.invert(x)
        if op is UnOp.ABS:
            if x.dtype == np.uint32:
                return x
            return np.abs(x)  # i32::MIN stays i32::MIN
        raise DispatchError(f"unknown unary operator {op}")  # pragma: no cover

    def e_binary(self, e):
        a = self.eval(e.lhs)
        b = self.eval(e.rhs)
        op = e.op
        cmp = _COMPARE.get(op)
        if cmp is not None:
            return cmp(a, b)
        if op is BinOp.AND:
            return np.logical_and(a, b)
        if op is BinOp.OR:
            return np.logical_or(a, b)
        if op is BinOp.SHL:
            return sem.shl(a, b)
        if op is BinOp.SHR:
            return sem.shr(a, b)
        if op is BinOp.BIT_AND:
            return a & b
        if op is BinOp.BIT_OR:
            return a | b
        if op is BinOp.BIT_XOR:
            return a ^ b
        return self.arith(op, a, b)

    def arith(self, op: BinOp, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        if a.ndim != b.ndim:  # scalar with vector: broadcast the scalar over the components
            a = a[:, None] if a.ndim == 1 else a
            b = b[:, None] if b.ndim == 1 else b
        if a.dtype.kind == "f":
            if op is BinOp.REM:
                return sem.float_rem(a, b)
            return sem.float_op(_FLOAT_ARITH[op], a, b)
        if op is BinOp.DIV:
            return sem.int_div(a, b)
        if op is BinOp.REM:
            return sem.int_rem(a, b)
        return _INT_ARITH[op](a, b)  # numpy wraps u32/i32 arrays

    def e_select(self, e):
        c = self.eval(e.cond)
        t = self.eval(e.if_true)
        f = self.eval(e.if_false)
        if t.ndim == 2:
            c = c[:, None]
        return np.where(c, t, f)

    def e_cast(self, e):
        return sem.cast(self.eval(e.arg), e.dtype)

    def e_bitcast(self, e):
        return sem.bitcast(self.eval(e.arg), e.dtype)

    def e_fma(self, e):
        a, b, c = (self.eval(x) for x in (e.a, e.b, e.c))
        return sem.fma(a, b, c)

    def e_atomic(self, e):
        index = self.eval(e.index)
        value = None if e.value is None else self.eval(e.value)
        expected = None if e.expected is None else self.eval(e.expected)
        return self.mem[e.buffer].atomic(e.op, index, value, expected, self.mask)

    def e_vec(self, e):
        args = [self.eval(a) for a in e.args]
        n = e.dtype.lanes
        if len(args) == 1:
            return np.repeat(args[0][:, None], n, axis=1)
        return np.stack(np.broadcast_arrays(*args), axis=1)

    def e_extract(self, e):
        return self.eval(e.arg)[:, e.lane]


_UNARY = {
    UnOp.SQRT: lambda x: sem.float_op(np.sqrt, x),
    UnOp.INVERSE_SQRT: sem.inverse_sqrt,
    UnOp.EXP: lambda x: sem.float_op(np.exp, x),
    UnOp.EXP2: lambda x: sem.float_op(np.exp2, x),
    UnOp.LOG: lambda x: sem.float_op(np.log, x),
    UnOp.LOG2: lambda x: sem.float_op(np.log2, x),
    UnOp.SIN: lambda x: sem.float_op(np.sin, x),
    UnOp.COS: lambda x: sem.float_op(np.cos, x),
    UnOp.TAN: lambda x: sem.float_op(np.tan, x),
    UnOp.TANH: lambda x: sem.float_op(np.tanh, x),
    UnOp.FLOOR: lambda x: sem.float_op(np.floor, x),
    UnOp.CEIL: lambda x: sem.float_op(np.ceil, x),
    UnOp.ROUND: sem.round_half_even,
    UnOp.TRUNC: lambda x: sem.float_op(np.trunc, x),
    UnOp.FRACT: sem.fract,
    UnOp.SIGN: sem.sign,
    UnOp.COUNT_ONES: sem.count_ones,
    UnOp.REVERSE_BITS: sem.reverse_bits,
    UnOp.COUNT_LEADING_ZEROS: sem.count_leading_zeros,
    UnOp.COUNT_TRAILING_ZEROS: sem.count_trailing_zeros,
}

_COMPARE = {
    BinOp.EQ: np.equal, BinOp.NE: np.not_equal, BinOp.LT: np.less, BinOp.LE: np.less_equal,
    BinOp.GT: np.greater, BinOp.GE: np.greater_equal,
}

_FLOAT_ARITH = {
    BinOp.ADD: np.add, BinOp.SUB: np.subtract, BinOp.MUL: np.multiply, BinOp.DIV: np.divide,
    BinOp.MIN: np.minimum, BinOp.MAX: np.maximum, BinOp.POW: np.power,
}

_INT_ARITH = {
    BinOp.ADD: np.add, BinOp.SUB: np.subtract, BinOp.MUL: np.multiply, BinOp.MIN: np.minimum,
    BinOp.MAX: np.maximum,
}


# --------------------------------------------------------------------------- backend
class ReferenceBackend:
    """CPU reference backend (numpy). The oracle for every other backend.

    chunk_lanes:
        at most this many invocations run at once (whole workgroups; at least one).
    max_loop_iterations:
        a loop running more trips than this in one chunk raises DispatchError (likely an
        infinite loop) instead of hanging.
    compact_min_lanes:
        a loop running over at least this many lanes continues on a compacted copy of the
        lanes once at most a quarter of them are still active (divergent loops then cost
        about the total number of trips, not lanes x the longest trip count).
    """

    name = "reference"

    def __init__(self, chunk_lanes: int = DEFAULT_CHUNK_LANES,
                 max_loop_iterations: int = DEFAULT_MAX_LOOP_ITERATIONS,
                 compact_min_lanes: int = COMPACT_MIN_LANES):
        if chunk_lanes < 1:
            raise ValueError(f"chunk_lanes must be >= 1, got {chunk_lanes}")
        self.chunk_lanes = int(chunk_lanes)
        self.max_loop_iterations = int(max_loop_iterations)
        self.compact_min_lanes = max(1, int(compact_min_lanes))
        self._validated: OrderedDict[str, None] = OrderedDict()  # fingerprints, bounded LRU
        self._validated_lock = threading.Lock()

    def _validate(self, program: Program) -> None:
        """Validate once per program content (multi-step ops dispatch the same programs many times).
        The fingerprint is taken only after a first validation, so over-deep programs still get the
        validator's clear error rather than a serialisation failure."""
        fp = program.__dict__.get("fingerprint")
        if fp is not None:
            with self._validated_lock:
                if fp in self._validated:
                    self._validated.move_to_end(fp)
                    return
        validate = _validator()
        if validate is not None:
            validate(program)
        with self._validated_lock:
            self._validated[program.fingerprint] = None
            while len(self._validated) > 4096:
                self._validated.popitem(last=False)

    def dispatch(self, program: Program, inputs=None, config: DispatchConfig | None = None) -> list[np.ndarray]:
        self._validate(program)
        plan = plan_dispatch(program, inputs, config)
        buffers: dict[str, Memory] = {}
        for b in plan.buffers:
            sdt = storage_dtype(b.decl.dtype)
            if b.data is not None and not b.is_output:
                data = b.data  # read-only: never written
            else:
                data = np.zeros(b.nbytes // sdt.itemsize, dtype=sdt)
                if b.data is not None:
                    data[: b.data.size] = b.data
            buffers[b.decl.name] = Memory(b.decl.name, b.decl.dtype, b.count, data)
        total = plan.total_workgroups
        per_chunk = max(1, self.chunk_lanes // program.workgroup_invocations)
        wg_bytes = sum(w.count * w.dtype.element_nbytes for w in program.workgroup)
        if wg_bytes:  # every workgroup of a chunk has its own copy of the workgroup arrays
            per_chunk = max(1, min(per_chunk, WORKGROUP_MEMORY_BUDGET // wg_bytes))
        with np.errstate(all="ignore"):
            for start in range(0, total, per_chunk):
                _Chunk(self, program, buffers, plan.grid, start, min(per_chunk, total - start)).run()
        return [storage_to_host(b.decl, buffers[b.decl.name].data, b.count) for b in plan.outputs]


__all__ = ["ReferenceBackend", "Memory", "DEFAULT_CHUNK_LANES", "DEFAULT_MAX_LOOP_ITERATIONS"]
