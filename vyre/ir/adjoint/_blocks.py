"""The reverse of a block of statements, structured (no tape): ``rev(block, env)`` emits, inside one IR
block, a *replay* of the block (its forward computation without its stores, every value kept in an
immutable copy: an assignment makes a new copy, so each statement's reverse reads the values it saw) and
then the *reverse sweep*, statements last to first.

* ``if``/``else``: the condition is re-evaluated on the replayed values and each branch is reversed
  (replayed again, then swept) inside the same ``if``.
* ``for`` with a trip count fixed when the loop starts: run backwards (``k`` from the last trip to the
  first). The locals the body changes (*carried* values) must be known at the start of each reversed trip:
  a carried value the body only sums into (``acc += ...``: its adjoint needs no forward value) is not
  recomputed; otherwise the loop is replayed from its start up to that trip (recompute, O(trips^2) work,
  no memory: WGSL has no per-thread arrays to store them in).
"""

from __future__ import annotations

from collections.abc import Callable

from ..nodes import (
    Assign,
    Binary,
    BinOp,
    Expr,
    For,
    If,
    Let,
    Lit,
    Load,
    Return,
    Select,
    Stmt,
    Store,
    Var,
    VarDecl,
)
from ..traverse import iter_expr, iter_stmts
from ..types import DataType
from ._analysis import Facts, assigned_in, declared_in, is_guard
from ._exprs import Backprop
from ._names import Namer, subst

Env = dict[str, Expr]


def zero(t: DataType) -> Lit:
    return Lit(dtype=t, value=False if t is DataType.BOOL else 0.0 if t.is_float else 0)


class Reverser:
    def __init__(self, facts: Facts, fresh: Namer, adj: dict[str, str], seeds: dict[str, str],
                 bp: Backprop) -> None:
        self.facts, self.fresh, self.adj, self.seeds, self.bp = facts, fresh, adj, seeds, bp

    # ---- the forward computation, without stores ----
    def plain(self, stmts: list[Stmt], env: Env) -> list[Stmt]:
        """``stmts`` replayed on the values of ``env`` (a changed local must map to a mutable holder)."""
        env = dict(env)
        out: list[Stmt] = []
        for s in stmts:
            if isinstance(s, Let):
                n = self.fresh(s.name)
                out.append(Let(name=n, value=subst(s.value, env)))
                env[s.name] = Var(name=n)
            elif isinstance(s, VarDecl):
                n = self.fresh(s.name)
                out.append(VarDecl(name=n, dtype=s.dtype, value=None if s.value is None else subst(s.value, env)))
                env[s.name] = Var(name=n)
            elif isinstance(s, Assign):
                holder = env[s.name]
                assert isinstance(holder, Var)
                out.append(Assign(name=holder.name, value=subst(s.value, env)))
            elif isinstance(s, If):
                out.append(If(cond=subst(s.cond, env), then=self.plain(s.then, env),
                              otherwise=self.plain(s.otherwise, env)))
            elif isinstance(s, For):
                v = self.fresh(s.var)
                out.append(For(var=v, start=subst(s.start, env), end=subst(s.end, env), step=s.step,
                               body=self.plain(s.body, {**env, s.var: Var(name=v)})))
            elif isinstance(s, Return):
                out.append(Return())
            # Store: the forward's outputs are not the adjoint's; the checks refused everything else
        return out

    def replay_compound(self, s: Stmt, cur: Env, out: list[Stmt]) -> None:
        """An if/for replayed through mutable holders of the locals it changes, then copied out."""
        changed = sorted(assigned_in([s]) - declared_in([s]))
        holders: Env = {}
        for name in changed:
            h = self.fresh(name)
            out.append(VarDecl(name=h, dtype=self.facts.dtype[name], value=cur[name]))
            holders[name] = Var(name=h)
        out.extend(self.plain([s], {**cur, **holders}))
        for name in changed:
            n = self.fresh(name)
            out.append(Let(name=n, value=holders[name]))
            cur[name] = Var(name=n)

    # ---- replay, then the reverse sweep ----
    def rev(self, stmts: list[Stmt], env: Env) -> list[Stmt]:
        out: list[Stmt] = []
        cur = dict(env)
        before: list[Env] = []
        for s in stmts:
            before.append(dict(cur))
            if isinstance(s, (Let, VarDecl, Assign)):
                n = self.fresh(s.name)
                value = s.value if s.value is not None else zero(self.facts.dtype[s.name])
                out.append(Let(name=n, value=subst(value, cur)))
                cur[s.name] = Var(name=n)
            elif is_guard(s):
                out.extend(self.plain([s], cur))  # the threads it stops do nothing in the adjoint either
            elif isinstance(s, (If, For)):
                self.replay_compound(s, cur, out)
        for s in stmts:  # the gradients of the locals declared here start at zero
            if isinstance(s, (Let, VarDecl)) and s.name in self.adj:
                out.append(VarDecl(name=self.adj[s.name], dtype=self.facts.dtype[s.name],
                                   value=zero(self.facts.dtype[s.name])))
        for s, at in zip(reversed(stmts), reversed(before)):
            self.sweep(s, at, out)
        return out

    def sweep(self, s: Stmt, at: Env, out: list[Stmt]) -> None:
        if isinstance(s, Let):
            if s.name in self.adj:
                self.bp(s.value, Var(name=self.adj[s.name]), at, out)
        elif isinstance(s, (VarDecl, Assign)):
            if s.name in self.adj and s.value is not None:
                a = self.adj[s.name]
                t = self.fresh("g")
                out.append(Let(name=t, value=Var(name=a)))
                out.append(Assign(name=a, value=zero(self.facts.dtype[s.name])))
                self.bp(s.value, Var(name=t), at, out)
        elif isinstance(s, Store):
            if s.buffer in self.seeds and self.facts.is_active(s.value):
                self.bp(s.value, Load(buffer=self.seeds[s.buffer], index=subst(s.index, at)), at, out)
        elif isinstance(s, If) and not is_guard(s):
            then, other = self.rev(s.then, at), self.rev(s.otherwise, at)
            if then or other:
                out.append(If(cond=subst(s.cond, at), then=then, otherwise=other))
        elif isinstance(s, For):
            self.sweep_for(s, at, out)

    def sweep_for(self, s: For, at: Env, out: list[Stmt]) -> None:
        t = self.facts.dtype[s.var]
        lit: Callable[[int], Lit] = lambda v: Lit(dtype=t, value=v)  # noqa: E731
        start, end = self.fresh("start"), self.fresh("end")
        out.append(Let(name=start, value=subst(s.start, at)))
        out.append(Let(name=end, value=subst(s.end, at)))
        lo, hi = (Var(name=start), Var(name=end)) if s.step > 0 else (Var(name=end), Var(name=start))
        size = abs(s.step)

        def bop(op: BinOp, a: Expr, b: Expr) -> Expr:
            return Binary(op=op, lhs=a, rhs=b)

        trips = self.fresh("trips")  # ceil((hi - lo) / |step|), 0 for an empty range
        count = bop(BinOp.DIV, bop(BinOp.ADD, bop(BinOp.SUB, hi, lo), lit(size - 1)), lit(size))
        out.append(Let(name=trips, value=Select(cond=bop(BinOp.GT, hi, lo), if_true=count, if_false=lit(0))))
        k, v = self.fresh("k"), self.fresh(s.var)
        back = bop(BinOp.MUL, bop(BinOp.SUB, bop(BinOp.SUB, Var(name=trips), lit(1)), Var(name=k)), lit(size))
        body: list[Stmt] = [Let(name=v, value=bop(BinOp.ADD if s.step > 0 else BinOp.SUB, Var(name=start), back))]
        inner = {**at, s.var: Var(name=v)}
        carried = sorted(assigned_in(s.body) - declared_in(s.body))
        needed = [c for c in carried if not self.only_summed(c, s.body)]
        if needed:  # recompute: the carried values at the start of trip v, replayed from the loop's start
            holders: Env = {}
            for name in carried:
                h = self.fresh(name)
                body.append(VarDecl(name=h, dtype=self.facts.dtype[name], value=at[name]))
                holders[name] = Var(name=h)
            w = self.fresh(s.var)
            body.append(For(var=w, start=Var(name=start), end=Var(name=v), step=s.step,
                            body=self.plain(s.body, {**at, **holders, s.var: Var(name=w)})))
            for name in carried:
                n = self.fresh(name)
                body.append(Let(name=n, value=holders[name]))
                inner[name] = Var(name=n)
        body.extend(self.rev(s.body, inner))
        out.append(For(var=k, start=lit(0), end=Var(name=trips), step=1, body=body))

    def only_summed(self, name: str, body: list[Stmt]) -> bool:
        """Whether ``name`` is read in ``body`` only by its own updates ``name = name +/- e`` (``e`` not
        reading it): its adjoint then needs none of its forward values."""
        for s in iter_stmts(body):
            if isinstance(s, Assign) and s.name == name and isinstance(s.value, Binary) and \
                    s.value.op in (BinOp.ADD, BinOp.SUB):
                lhs, rhs = s.value.lhs, s.value.rhs
                if isinstance(lhs, Var) and lhs.name == name and name not in _names(rhs):
                    continue
                if s.value.op is BinOp.ADD and isinstance(rhs, Var) and rhs.name == name and name not in _names(lhs):
                    continue
            from ..traverse import expr_children  # why: local, one use

            if any(name in _names(e) for e in expr_children(s)):
                return False
        return True


def _names(e: Expr) -> set[str]:
    return {x.name for x in iter_expr(e) if isinstance(x, Var)}


__all__ = ["Reverser", "zero"]
