"""Names for the adjoint program: a fresh-name source, and the renaming of a forward program so that every
local it declares has a name of its own (the IR lets sibling blocks reuse a name; the adjoint keys each
local's gradient by its name)."""

from __future__ import annotations

from dataclasses import replace

from ..nodes import Assign, Expr, For, If, Let, Stmt, Var, VarDecl
from ..program import Program
from ..traverse import expr_children, iter_expr, iter_stmts, map_expr, stmt_bodies, with_bodies, with_expr_children


class Namer:
    """Fresh names, never one the program (or an earlier call) uses."""

    def __init__(self, program: Program) -> None:
        self.used = {b.name for b in program.buffers} | {w.name for w in program.workgroup}
        for s in iter_stmts(program.body):
            if isinstance(s, (Let, VarDecl, Assign)):
                self.used.add(s.name)
            elif isinstance(s, For):
                self.used.add(s.var)
            for e in expr_children(s):
                self.used.update(x.name for x in iter_expr(e) if isinstance(x, Var))

    def __call__(self, base: str) -> str:
        name, k = base, 1
        while name in self.used:
            k += 1
            name = f"{base}_{k}"
        self.used.add(name)
        return name


def uniquify(program: Program) -> Program:
    """``program`` with every declared local renamed to a name declared nowhere else (same structure, so a
    statement path means the same statement in both)."""
    taken = {b.name for b in program.buffers} | {w.name for w in program.workgroup}
    seen: set[str] = set()

    def fresh(name: str) -> str:
        new, k = name, 1
        while new in seen or new in taken:
            k += 1
            new = f"{name}_{k}"
        seen.add(new)
        return new

    def sub(e: Expr, scope: dict[str, str]) -> Expr:
        return map_expr(e, lambda x: Var(name=scope[x.name]) if isinstance(x, Var) and x.name in scope else x)

    def block(body: list[Stmt], scope: dict[str, str]) -> list[Stmt]:
        scope = dict(scope)
        out: list[Stmt] = []
        for s in body:
            kids = [sub(e, scope) for e in expr_children(s)]
            s = with_expr_children(s, kids)
            if isinstance(s, (Let, VarDecl)):
                new = fresh(s.name)
                scope[s.name] = new
                s = replace(s, name=new)
            elif isinstance(s, Assign):
                s = replace(s, name=scope.get(s.name, s.name))
            elif isinstance(s, For):
                new = fresh(s.var)
                s = replace(s, var=new, body=block(s.body, {**scope, s.var: new}))
            elif isinstance(s, If):
                s = with_bodies(s, [block(b, scope) for b in stmt_bodies(s)])
            elif stmt_bodies(s):
                s = with_bodies(s, [block(b, scope) for b in stmt_bodies(s)])
            out.append(s)
        return out

    return replace(program, body=block(program.body, {}))


def subst(e: Expr, env: dict[str, Expr]) -> Expr:
    """``e`` with each variable replaced by its value in ``env`` (names not in it are kept)."""
    return map_expr(e, lambda x: env[x.name] if isinstance(x, Var) and x.name in env else x)


__all__ = ["Namer", "uniquify", "subst"]
