"""Reverse-mode differentiation of a kernel ``Program``, at the IR level: :func:`adjoint` turns a forward
program into its adjoint program (the vector-Jacobian product of one launch), for every front end.

The forward program reads ``In`` (``read``) arrays, writes ``Out`` (``write``) arrays and takes scalars
through one uniform. Its adjoint, launched over the same grid with the same uniform, reads the forward's
In arrays and one *seed* per float Out array (the gradient reaching it) and accumulates one gradient per
float In array (zero-filled by the caller):

* straight-line code is replayed, then swept backwards; ``if``/``else`` on values re-evaluates its condition;
  ``for`` loops with a trip count fixed when the loop starts run backwards (:mod:`._blocks` says when the
  carried values are recomputed);
* a load ``x[i]`` of a float In array becomes ``dx[i] += g``: a plain add where every load of ``x`` is at
  the thread's own index (deterministic), else an f32 add by compare-exchange on the u32 bits (WGSL has no
  float atomics: the order of the adds varies, so the last bits of the sum may);
* a store ``out[j] = v`` becomes ``g = seed_out[j]``, pushed back into ``v`` (every Out element is written
  once per launch: a second store to the same element in the forward would count twice here);
* scalar parameters, integer values and the derivatives of floor/ceil/round/trunc/sign are constants.

Refused, with a ValidationError whose issue (rule ``"adjoint"``) has the statement's path: InOut arrays,
f16 arrays, atomics, workgroup arrays and barriers, subgroup operations, ``while``, ``break``, ``continue``,
``return`` other than ``if ...: return`` before the first store, loops whose bound the body changes, vector
values, and casts or bitcasts to an integer of a value that depends on a differentiated array.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field

from ..decls import BufferDecl
from ..nodes import BufLen, Expr, Stmt
from ..program import Program
from ..traverse import expr_children, map_expr, stmt_bodies, with_bodies, with_expr_children
from ..types import Access, DataType
from ._accumulate import Accumulator, Own, own_patterns
from ._analysis import Facts, check
from ._blocks import Reverser
from ._exprs import Backprop
from ._names import Namer, uniquify


@dataclass(frozen=True)
class Adjoint:
    """An adjoint program and how to bind it.

    ``program``'s buffers, in binding order: the forward's In arrays (``inputs``, same names), then one seed
    per float Out array (``seeds``: forward name -> seed name), then one gradient per float In array
    (``grads``: forward name -> gradient name; ``f32``, or ``u32`` holding f32 bits for the arrays in
    ``atomic``), then the forward's uniform (the launch dims and scalars, unchanged). ``own``: the arrays
    accumulated by plain adds and the pattern of their index, which is one-to-one only if the launch says
    so: ``("x",)`` needs a 1-D launch, ``("yx", w)`` a 2-D launch of at most ``w`` columns; when that does
    not hold, ask for ``adjoint(program, atomic=[...])`` with those arrays.
    """

    program: Program
    inputs: tuple[str, ...]
    seeds: dict[str, str]
    grads: dict[str, str]
    atomic: frozenset[str]
    own: dict[str, Own] = field(default_factory=dict)

    def one_to_one(self, dims: tuple[int, ...]) -> frozenset[str]:
        """The plainly accumulated arrays whose index is *not* one-to-one over a launch of ``dims`` (they
        need the atomic adjoint)."""
        bad = set()
        for name, pat in self.own.items():
            if pat[0] == "x" and len(dims) != 1:
                bad.add(name)
            elif pat[0] == "yx" and (len(dims) != 2 or dims[1] > int(pat[1])):
                bad.add(name)
        return frozenset(bad)


def adjoint(program: Program, *, atomic: Collection[str] = ()) -> Adjoint:
    """The adjoint of ``program`` (see the module docstring); ``atomic`` forces compare-exchange adds for
    those In arrays. Raises ValidationError (rule ``"adjoint"``) for what cannot be differentiated."""
    check(program)
    fwd = uniquify(program)
    facts = Facts(fwd)
    fresh = Namer(fwd)
    plain = own_patterns(fwd, facts.diff_in)
    forced = set(atomic)
    atomic_set = {n for n in facts.diff_in if n not in plain or n in forced}
    seeds = {n: fresh("seed_" + n) for n in facts.diff_out}
    grads = {n: fresh("grad_" + n) for n in facts.diff_in}
    adj = {n: fresh("adj_" + n) for n in sorted(facts.active)}
    bp = Backprop(facts, fresh, adj, Accumulator(fresh, grads, atomic_set))
    body = _lengths(Reverser(facts, fresh, adj, seeds, bp).rev(fwd.body, {}), seeds)
    inputs = [b for b in fwd.sorted_buffers if b.access is Access.READ]
    uniforms = [b for b in fwd.sorted_buffers if b.access is Access.UNIFORM]
    decls: list[BufferDecl] = []

    def add(name: str, dtype: DataType, access: Access, count: int | None = None) -> None:
        decls.append(BufferDecl(name=name, binding=len(decls), dtype=dtype, access=access, count=count))

    for b in inputs:
        add(b.name, b.dtype, Access.READ, b.count)
    for s in seeds.values():
        add(s, DataType.F32, Access.READ)
    for n, g in grads.items():
        add(g, DataType.U32 if n in atomic_set else DataType.F32, Access.READ_WRITE)
    for b in uniforms:
        add(b.name, b.dtype, Access.UNIFORM, b.count)
    out = Program(name=program.name + "_adjoint", buffers=decls, workgroup_size=program.workgroup_size,
                  body=body)
    from ..validate import validate  # why: import time (the validator loads with the first adjoint)

    validate(out)
    return Adjoint(out, tuple(b.name for b in inputs), seeds, grads, frozenset(atomic_set),
                   {n: p for n, p in plain.items() if n not in atomic_set})


def _lengths(stmts: list[Stmt], seeds: dict[str, str]) -> list[Stmt]:
    """``len(out)`` of an Out array (not bound in the adjoint) as the length of its seed (the same shape)."""
    def expr(e: Expr) -> Expr:
        return map_expr(e, lambda x: BufLen(buffer=seeds[x.buffer]) if isinstance(x, BufLen) and x.buffer in seeds
                        else x)

    out = []
    for s in stmts:
        s = with_expr_children(s, [expr(e) for e in expr_children(s)])
        bodies = stmt_bodies(s)
        out.append(with_bodies(s, [_lengths(b, seeds) for b in bodies]) if bodies else s)
    return out


__all__ = ["Adjoint", "adjoint"]
