"""The shape of the IR tree, declared once, and every walk built on it.

:data:`CHILD_FIELDS` says, for each concrete node class of :mod:`vyre.ir.nodes`, which
fields hold children and of what sort (:class:`Slot`): one expression, an optional
expression, a list of expressions, or a statement body. Fields are listed in evaluation
order (an atomic evaluates ``index``, then ``expected``, then ``value``, the order of
its WGSL arguments). Nothing else in vyre knows which field of which node holds a child:
the typing, the validator, the uniformity analysis, the passes, the text form, the WGSL
lowering and the reference interpreter all walk the tree through this module.

:class:`Visitor` dispatches on the node class to a ``visit_<ClassName>`` method and fails
loudly (:class:`MissingHandler`) on a node class it has no handler for; ``covers=`` in a
subclass's class statement makes a missing handler an error when the class is defined.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from enum import Enum
from typing import Any, ClassVar, Generic, TypeVar

from .nodes import (
    EXPR_TYPES,
    STMT_TYPES,
    Assign,
    Atomic,
    Barrier,
    Binary,
    Bitcast,
    Break,
    BufLen,
    Builtin,
    Cast,
    Continue,
    Eval,
    Expr,
    Extract,
    Fma,
    For,
    If,
    Let,
    Lit,
    Load,
    Node,
    Return,
    Select,
    Stmt,
    Store,
    Subgroup,
    Unary,
    Var,
    VarDecl,
    VecNew,
    While,
)


class Slot(Enum):
    """What a child field holds."""

    EXPR = "expr"  # one expression
    OPTIONAL = "optional"  # an expression or None
    EXPRS = "exprs"  # a list of expressions
    BODY = "body"  # a list of statements


@dataclass(frozen=True)
class ChildField:
    name: str
    slot: Slot


def _expr(name: str) -> ChildField:
    return ChildField(name, Slot.EXPR)


def _optional(name: str) -> ChildField:
    return ChildField(name, Slot.OPTIONAL)


def _exprs(name: str) -> ChildField:
    return ChildField(name, Slot.EXPRS)


def _body(name: str) -> ChildField:
    return ChildField(name, Slot.BODY)


NODE_TYPES: tuple[type[Node], ...] = (*EXPR_TYPES, *STMT_TYPES)

#: Child fields of every node class, in evaluation order. Leaves have none.
CHILD_FIELDS: dict[type[Node], tuple[ChildField, ...]] = {
    # expressions
    Lit: (),
    Var: (),
    Load: (_expr("index"),),
    BufLen: (),
    Builtin: (),
    Unary: (_expr("arg"),),
    Binary: (_expr("lhs"), _expr("rhs")),
    Select: (_expr("cond"), _expr("if_true"), _expr("if_false")),
    Cast: (_expr("arg"),),
    Bitcast: (_expr("arg"),),
    Fma: (_expr("a"), _expr("b"), _expr("c")),
    Atomic: (_expr("index"), _optional("expected"), _optional("value")),
    VecNew: (_exprs("args"),),
    Extract: (_expr("arg"),),
    Subgroup: (_expr("value"), _optional("lane")),
    # statements
    Let: (_expr("value"),),
    VarDecl: (_optional("value"),),
    Assign: (_expr("value"),),
    Store: (_expr("index"), _expr("value")),
    If: (_expr("cond"), _body("then"), _body("otherwise")),
    For: (_expr("start"), _expr("end"), _body("body")),
    While: (_expr("cond"), _body("body")),
    Break: (),
    Continue: (),
    Barrier: (),
    Return: (),
    Eval: (_expr("value"),),
}

# derived views of the table, for the hot walks
_EXPR_FIELDS: dict[type[Node], tuple[ChildField, ...]] = {
    cls: tuple(f for f in fields if f.slot is not Slot.BODY) for cls, fields in CHILD_FIELDS.items()
}
_BODY_FIELDS: dict[type[Node], tuple[str, ...]] = {
    cls: tuple(f.name for f in fields if f.slot is Slot.BODY) for cls, fields in CHILD_FIELDS.items()
}


class UnknownNode(TypeError):
    """An object that is not one of the IR node classes listed in :data:`CHILD_FIELDS`."""

    def __init__(self, obj: object, where: str):
        super().__init__(
            f"{where}: {type(obj).__name__} is not an IR node class listed in vyre.ir.traverse.CHILD_FIELDS "
            f"(got {obj!r:.80})"
        )


def child_fields(node: Node) -> tuple[ChildField, ...]:
    """The child fields of ``node``'s class (raises :class:`UnknownNode` for anything else)."""
    try:
        return CHILD_FIELDS[type(node)]
    except KeyError:
        raise UnknownNode(node, "child_fields") from None


def _expr_fields(node: Node) -> tuple[ChildField, ...]:
    try:
        return _EXPR_FIELDS[type(node)]
    except KeyError:
        raise UnknownNode(node, "expr_children") from None


# --------------------------------------------------------------------------- direct children
def expr_children(node: Node) -> list[Expr]:
    """The expressions ``node`` holds directly, in evaluation order: the operands of an
    expression, or the expressions a statement owns (not those of its nested bodies)."""
    out: list[Expr] = []
    for f in _expr_fields(node):
        value = getattr(node, f.name)
        if f.slot is Slot.EXPRS:
            out.extend(value)
        elif value is not None:
            out.append(value)
    return out


def expr_children_at(node: Node, path: str) -> list[tuple[Expr, str]]:
    """:func:`expr_children` with the path of each (``path.lhs``, ``path.args[1]``, ...)."""
    out: list[tuple[Expr, str]] = []
    for f in _expr_fields(node):
        value = getattr(node, f.name)
        if f.slot is Slot.EXPRS:
            out.extend((a, f"{path}.{f.name}[{i}]") for i, a in enumerate(value))
        elif value is not None:
            out.append((value, f"{path}.{f.name}"))
    return out


def stmt_bodies(stmt: Node) -> list[list[Stmt]]:
    """The statement bodies of ``stmt`` (``then`` and ``otherwise`` of an if, a loop's body)."""
    try:
        names = _BODY_FIELDS[type(stmt)]
    except KeyError:
        raise UnknownNode(stmt, "stmt_bodies") from None
    return [getattr(stmt, n) for n in names]


# --------------------------------------------------------------------------- walks
def iter_expr(e: Expr) -> Iterator[Expr]:
    """``e`` and every sub-expression, parents first, in evaluation order (no recursion)."""
    stack: list[Expr] = [e]
    while stack:
        node = stack.pop()
        yield node
        stack.extend(reversed(expr_children(node)))


def walk_expr(e: Expr, path: str) -> Iterator[tuple[Expr, str]]:
    """Like :func:`iter_expr`, with the path of each node."""
    stack: list[tuple[Expr, str]] = [(e, path)]
    while stack:
        node, p = stack.pop()
        yield node, p
        stack.extend(reversed(expr_children_at(node, p)))


def expr_depth(e: Expr) -> int:
    """Nesting depth of an expression tree (a leaf is 1), computed without recursion."""
    memo: dict[int, int] = {}
    stack: list[tuple[Expr, bool]] = [(e, False)]
    while stack:
        node, done = stack.pop()
        kids = expr_children(node)
        if done:
            memo[id(node)] = 1 + max((memo[id(k)] for k in kids), default=0)
        elif id(node) not in memo:
            stack.append((node, True))
            stack.extend((k, False) for k in kids if id(k) not in memo)
    return memo[id(e)]


def iter_stmts(stmts: Iterable[Stmt]) -> Iterator[Stmt]:
    """Every statement of ``stmts`` and of their nested bodies, in program order."""
    for s in stmts:
        yield s
        for body in stmt_bodies(s):
            yield from iter_stmts(body)


def iter_exprs(stmts: Iterable[Stmt]) -> Iterator[Expr]:
    """Every expression node under ``stmts`` (statements in program order, each tree parents first)."""
    for s in iter_stmts(stmts):
        for e in expr_children(s):
            yield from iter_expr(e)


# --------------------------------------------------------------------------- rebuilding
N = TypeVar("N", bound=Node)


def with_expr_children(node: N, new: Sequence[Expr]) -> N:
    """``node`` with the expressions of :func:`expr_children` replaced by ``new`` (same order);
    ``node`` itself when every new child is the old object."""
    old = expr_children(node)
    if len(old) != len(new):
        raise ValueError(f"{type(node).__name__} has {len(old)} expression children, {len(new)} given")
    if all(a is b for a, b in zip(old, new)):
        return node
    it = iter(new)
    update: dict[str, Any] = {}
    for f in _expr_fields(node):
        value = getattr(node, f.name)
        if f.slot is Slot.EXPRS:
            update[f.name] = [next(it) for _ in value]
        elif value is not None:
            update[f.name] = next(it)
    return replace(node, **update)


def with_bodies(stmt: N, new: Sequence[list[Stmt]]) -> N:
    """``stmt`` with the bodies of :func:`stmt_bodies` replaced by ``new`` (same order)."""
    names = _BODY_FIELDS[type(stmt)]
    if len(names) != len(new):
        raise ValueError(f"{type(stmt).__name__} has {len(names)} bodies, {len(new)} given")
    if all(getattr(stmt, n) is b for n, b in zip(names, new)):
        return stmt
    return replace(stmt, **dict(zip(names, (list(b) for b in new))))


def map_expr(e: Expr, fn: Callable[[Expr], Expr]) -> Expr:
    """Post-order rebuild: children first, then ``fn`` on the node holding the new children."""
    kids = expr_children(e)
    if kids:
        e = with_expr_children(e, [map_expr(c, fn) for c in kids])
    return fn(e)


# --------------------------------------------------------------------------- visitor
R = TypeVar("R")
_BY_NAME: dict[str, type[Node]] = {cls.__name__: cls for cls in NODE_TYPES}


class MissingHandler(TypeError):
    """A visitor met a node class it has no ``visit_<ClassName>`` method for."""

    def __init__(self, visitor: type, node: object):
        kind = type(node).__name__
        if type(node) in _BY_NAME.values():
            what = f"no handler for {kind} nodes: define {visitor.__qualname__}.visit_{kind}"
        else:
            what = f"{kind} is not an IR node (got {node!r:.80})"
        super().__init__(f"{visitor.__module__}.{visitor.__qualname__}: {what}")
        self.visitor = visitor
        self.node = node


class Visitor(Generic[R]):
    """Dispatch on node class: ``self.visit(node, *args)`` calls ``self.visit_<ClassName>(node, *args)``.

    A node class without a handler raises :class:`MissingHandler`; nothing is skipped
    silently. ``class V(Visitor[R], covers=EXPR_TYPES)`` checks at class creation that
    every listed class has a handler. A ``visit_<Name>`` method whose ``Name`` is capitalised
    but names no node class is an error too (a misspelt handler would never run).
    """

    _handlers: ClassVar[dict[type[Node], Callable[..., Any]]] = {}

    def __init_subclass__(cls, covers: Iterable[type[Node]] = (), **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        handlers: dict[type[Node], Callable[..., Any]] = {}
        for attr in dir(cls):
            if not attr.startswith("visit_") or not attr[6:7].isupper():
                continue
            node_cls = _BY_NAME.get(attr[6:])
            if node_cls is None:
                raise TypeError(f"{cls.__qualname__}.{attr}: {attr[6:]!r} is not an IR node class")
            handlers[node_cls] = getattr(cls, attr)
        cls._handlers = handlers
        missing = [c.__name__ for c in covers if c not in handlers]
        if missing:
            raise TypeError(f"{cls.__qualname__} must handle every node class it covers; missing: "
                            + ", ".join(f"visit_{m}" for m in missing))

    @classmethod
    def handled(cls) -> frozenset[type[Node]]:
        """The node classes this visitor has a handler for."""
        return frozenset(cls._handlers)

    def visit(self, node: Node, *args: Any) -> R:
        try:
            handler = self._handlers[type(node)]
        except KeyError:
            raise MissingHandler(type(self), node) from None
        result: R = handler(self, node, *args)
        return result


__all__ = [
    "Slot", "ChildField", "NODE_TYPES", "CHILD_FIELDS", "UnknownNode", "child_fields", "expr_children",
    "expr_children_at", "stmt_bodies", "iter_expr", "walk_expr", "expr_depth", "iter_stmts", "iter_exprs",
    "with_expr_children", "with_bodies", "map_expr", "MissingHandler", "Visitor",
]
