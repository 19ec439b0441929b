"""vyre.ir.traverse: the child-field table covers every node class, the walks follow it, and
the visitor never skips a node silently."""

from __future__ import annotations

import dataclasses
import typing

import pytest

from vyre.ir import nodes
from vyre.ir.builder import ProgramBuilder
from vyre.ir.nodes import (
    EXPR_TYPES,
    STMT_TYPES,
    Atomic,
    AtomicOp,
    Binary,
    BinOp,
    Break,
    BufLen,
    Eval,
    Expr,
    For,
    If,
    Let,
    Lit,
    Load,
    Select,
    Store,
    Unary,
    UnOp,
    Var,
    VarDecl,
    VecNew,
    While,
)
from vyre.ir.traverse import (
    CHILD_FIELDS,
    NODE_TYPES,
    MissingHandler,
    Slot,
    UnknownNode,
    Visitor,
    child_fields,
    expr_children,
    expr_children_at,
    expr_depth,
    iter_expr,
    iter_exprs,
    iter_stmts,
    map_expr,
    stmt_bodies,
    walk_expr,
    with_bodies,
    with_expr_children,
)
from vyre.ir.types import DataType


def _node_classes_of_nodes_module() -> set[type]:
    """Every concrete node class defined in vyre/ir/nodes.py, found by looking at the module."""
    return {
        obj for obj in vars(nodes).values()
        if isinstance(obj, type) and issubclass(obj, nodes.Node) and obj is not nodes.Node
        and obj.__module__ == nodes.__name__
    }


def test_table_covers_every_node_class_of_nodes_module():
    defined = _node_classes_of_nodes_module()
    assert len(defined) >= 26
    missing = sorted(c.__name__ for c in defined - set(CHILD_FIELDS))
    assert not missing, f"node classes missing from vyre.ir.traverse.CHILD_FIELDS: {missing}"
    assert set(CHILD_FIELDS) == defined
    assert set(NODE_TYPES) == defined == set(EXPR_TYPES) | set(STMT_TYPES)


def _mentions(annotation, classes) -> bool:
    if annotation in classes:
        return True
    return any(_mentions(a, classes) for a in typing.get_args(annotation))


def _field_types(cls) -> dict:
    """Each dataclass field of ``cls`` with its resolved annotation (Annotated metadata dropped)."""
    hints = typing.get_type_hints(cls)
    return {f.name: hints[f.name] for f in dataclasses.fields(cls)}


def _slot_from_annotation(annotation) -> Slot | None:
    """The slot a field's annotation implies (None: not a child field)."""
    if _mentions(annotation, STMT_TYPES):
        assert typing.get_origin(annotation) is list
        return Slot.BODY
    if not _mentions(annotation, EXPR_TYPES):
        return None
    if typing.get_origin(annotation) is list:
        return Slot.EXPRS
    if type(None) in typing.get_args(annotation):
        return Slot.OPTIONAL
    return Slot.EXPR


@pytest.mark.parametrize("cls", NODE_TYPES, ids=lambda c: c.__name__)
def test_table_matches_the_field_annotations(cls):
    declared = {(f.name, f.slot) for f in CHILD_FIELDS[cls]}
    derived = {
        (name, slot) for name, annotation in _field_types(cls).items()
        if (slot := _slot_from_annotation(annotation)) is not None
    }
    assert declared == derived


def test_atomic_children_in_evaluation_order():
    a = Atomic(op=AtomicOp.COMPARE_EXCHANGE, buffer="b", index=Var(name="i"), value=Var(name="v"),
               expected=Var(name="x"))
    assert [c.name for c in expr_children(a)] == ["i", "x", "v"]
    assert [p for _, p in expr_children_at(a, "e")] == ["e.index", "e.expected", "e.value"]
    assert expr_children(Atomic(op=AtomicOp.LOAD, buffer="b", index=Var(name="i"))) == [Var(name="i")]


def test_statement_children_and_bodies():
    body = [Break()]
    f = For(var="k", start=Lit(dtype="u32", value=0), end=BufLen(buffer="b"), body=body)
    assert expr_children(f) == [f.start, f.end]
    assert stmt_bodies(f) == [body]
    i = If(cond=Var(name="c"), then=[Break()], otherwise=[Eval(value=Var(name="e"))])
    assert stmt_bodies(i) == [i.then, i.otherwise]
    assert expr_children(VarDecl(name="v", dtype="u32")) == []
    assert [p for _, p in expr_children_at(VecNew(dtype="vec2<u32>", args=[Var(name="a"), Var(name="b")]), "x")] == [
        "x.args[0]", "x.args[1]"]


def _tree() -> Expr:
    return Binary(op=BinOp.ADD, lhs=Unary(op=UnOp.NEG, arg=Var(name="a")),
                  rhs=Select(cond=Var(name="c"), if_true=Lit(dtype="i32", value=1), if_false=Var(name="d")))


def test_walks_are_preorder_with_paths():
    e = _tree()
    kinds = [n.kind for n in iter_expr(e)]
    assert kinds == ["binary", "unary", "var", "select", "var", "lit", "var"]
    assert [p for _, p in walk_expr(e, "r")] == [
        "r", "r.lhs", "r.lhs.arg", "r.rhs", "r.rhs.cond", "r.rhs.if_true", "r.rhs.if_false"]
    assert expr_depth(e) == 3 and expr_depth(Var(name="x")) == 1


def test_walks_do_not_recurse_on_deep_expressions():
    e: Expr = Var(name="x")
    for _ in range(5000):
        e = Unary(op=UnOp.NEG, arg=e)
    assert sum(1 for _ in iter_expr(e)) == 5001
    assert expr_depth(e) == 5001
    assert sum(1 for _ in walk_expr(e, "")) == 5001


def test_program_walks():
    b = ProgramBuilder("walks")
    out = b.buffer("out", "u32", access="read_write")
    i = b.global_index()
    with b.if_(i < out.len()):
        with b.for_range(0, 3) as k:
            out[i] = k
    with b.else_():
        b.return_()
    p = b.build()
    assert [s.kind for s in iter_stmts(p.body)] == ["if", "for", "store", "return"]
    kinds = [e.kind for e in iter_exprs(p.body)]
    assert kinds[:3] == ["binary", "builtin", "len"]  # the if condition first
    assert kinds[3:5] == ["lit", "lit"]  # the for bounds
    assert kinds[5:] == ["builtin", "var"]  # the store's index and value


def test_with_expr_children_keeps_identity_when_unchanged():
    e = _tree()
    assert with_expr_children(e, expr_children(e)) is e
    new = with_expr_children(e, [Var(name="z"), e.rhs])
    assert new.lhs == Var(name="z") and new.rhs is e.rhs and new.op is BinOp.ADD
    a = Atomic(op=AtomicOp.ADD, buffer="b", index=Var(name="i"), value=Var(name="v"))
    assert with_expr_children(a, [Var(name="j"), Var(name="w")]).expected is None
    assert with_expr_children(a, [Var(name="j"), Var(name="w")]).value == Var(name="w")
    s = Store(buffer="b", index=Var(name="i"), value=Var(name="v"))
    assert with_expr_children(s, [Var(name="j"), Var(name="w")]) == Store(buffer="b", index=Var(name="j"),
                                                                           value=Var(name="w"))
    with pytest.raises(ValueError):
        with_expr_children(s, [Var(name="j")])


def test_with_bodies_and_map_expr():
    w = While(cond=Var(name="c"), body=[Break()])
    assert with_bodies(w, [w.body]) is w
    assert with_bodies(w, [[]]).body == []
    renamed = map_expr(_tree(), lambda n: Var(name=n.name + "2") if isinstance(n, Var) else n)
    assert sorted(n.name for n in iter_expr(renamed) if isinstance(n, Var)) == ["a2", "c2", "d2"]


def test_unknown_objects_fail_loudly():
    with pytest.raises(UnknownNode, match="int is not an IR node class"):
        expr_children(3)  # type: ignore[arg-type]
    with pytest.raises(UnknownNode):
        child_fields("x")  # type: ignore[arg-type]


# --------------------------------------------------------------------------- visitor
class _Count(Visitor[int]):
    def visit_Var(self, e: Var) -> int:
        return 1

    def visit_Unary(self, e: Unary) -> int:
        return 1 + self.visit(e.arg)


def test_visitor_dispatches_by_class():
    assert _Count().visit(Unary(op=UnOp.NEG, arg=Var(name="a"))) == 2
    assert _Count.handled() == frozenset({Var, Unary})


def test_visitor_fails_loudly_on_a_node_without_handler():
    with pytest.raises(MissingHandler, match=r"_Count: no handler for Lit nodes: define _Count.visit_Lit"):
        _Count().visit(Unary(op=UnOp.NEG, arg=Lit(dtype="f32", value=1.0)))
    # VarDecl shares the kind "var" with Var: dispatch is by class, never by kind
    with pytest.raises(MissingHandler, match="VarDecl"):
        _Count().visit(VarDecl(name="v", dtype="u32"))
    with pytest.raises(MissingHandler, match="not an IR node"):
        _Count().visit("text")  # type: ignore[arg-type]


def test_visitor_covers_is_checked_when_the_class_is_defined():
    with pytest.raises(TypeError, match="missing: visit_Lit, visit_Load"):
        class _Partial(Visitor[int], covers=(Var, Lit, Load)):
            def visit_Var(self, e: Var) -> int:
                return 0


def test_visitor_rejects_a_misspelt_handler():
    with pytest.raises(TypeError, match="'Lett' is not an IR node class"):
        class _Typo(Visitor[None]):
            def visit_Lett(self, s: Let) -> None:
                pass


def test_visitor_handlers_are_inherited_and_overridable():
    class _Twice(_Count):
        def visit_Var(self, e: Var) -> int:
            return 2

    assert _Twice().visit(Unary(op=UnOp.NEG, arg=Var(name="a"))) == 3
    assert _Twice.handled() == _Count.handled()


def test_load_and_eval_children():
    ld = Load(buffer="b", index=Var(name="i"))
    assert expr_children(ld) == [Var(name="i")]
    assert expr_children(Eval(value=ld)) == [ld]
    assert expr_children(Let(name="x", value=ld)) == [ld]


def test_types_live_only_in_dtype_fields():
    """vyre.lower.wgsl.program_uses_f16 reads ``dtype`` of every node and declaration: no other field
    may hold a DataType."""
    from vyre.ir.decls import BufferDecl, WorkgroupDecl

    for cls in (*NODE_TYPES, BufferDecl, WorkgroupDecl):
        typed = {n for n, annotation in _field_types(cls).items() if _mentions(annotation, (DataType,))}
        assert typed <= {"dtype"}, f"{cls.__name__} holds a DataType in {sorted(typed - {'dtype'})}"


def test_every_visitor_of_vyre_handles_every_node_class_it_meets():
    from vyre.backends.interpreter import Chunk
    from vyre.ir.passes.rewriter import Rewriter
    from vyre.ir.text import _Lines, _Text
    from vyre.ir.typing import _Infer
    from vyre.ir.uniformity import _Analysis
    from vyre.ir.validate import _Checker
    from vyre.lower.exprs import ExprRenderer
    from vyre.lower.wgsl import _StmtRenderer

    expected = {
        _Infer: EXPR_TYPES, _Text: NODE_TYPES, _Lines: STMT_TYPES, _Analysis: STMT_TYPES, _Checker: STMT_TYPES,
        Rewriter: STMT_TYPES, ExprRenderer: EXPR_TYPES, _StmtRenderer: STMT_TYPES, Chunk: NODE_TYPES,
    }
    for visitor, classes in expected.items():
        missing = set(classes) - visitor.handled()
        assert not missing, f"{visitor.__qualname__} lacks {sorted(c.__name__ for c in missing)}"


def test_a_node_class_missing_from_the_table_fails_loudly():
    class Novel(nodes.Node):  # what a new node kind looks like before it is added everywhere
        kind: str = "novel"

    with pytest.raises(UnknownNode, match="Novel is not an IR node class"):
        expr_children(Novel())
    with pytest.raises(UnknownNode):
        list(iter_stmts([Novel()]))  # type: ignore[list-item]
    with pytest.raises(MissingHandler, match="Novel is not an IR node"):
        _Count().visit(Novel())
