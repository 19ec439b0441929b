"""ProgramBuilder: operators build the right nodes, literals take the other operand's type,
blocks nest, atomics bind to lets, and misuse fails loudly."""

from __future__ import annotations

import math

import numpy as np
import pytest

from vyre.errors import BuilderError, ValidationError
from vyre.ir import (
    Assign,
    Atomic,
    AtomicOp,
    Barrier,
    BarrierScope,
    Binary,
    BinOp,
    Bitcast,
    Break,
    BufLen,
    Builtin,
    BuiltinName,
    Cast,
    Continue,
    Eval,
    Extract,
    Fma,
    For,
    If,
    Let,
    Lit,
    Load,
    MutVar,
    ProgramBuilder,
    Return,
    Select,
    Store,
    Unary,
    UnOp,
    Val,
    Var,
    VarDecl,
    VecNew,
    While,
)
from vyre.ir.types import DataType


@pytest.fixture
def b():
    return ProgramBuilder("t")


def lit(dtype, value):
    return Lit(dtype=dtype, value=value)


# --------------------------------------------------------------------------- operators
def test_arithmetic_operators(b):
    x = b.buffer("x", "u32")[0]
    n = x.node
    cases = {
        BinOp.ADD: x + 1, BinOp.SUB: x - 1, BinOp.MUL: x * 1, BinOp.DIV: x / 1, BinOp.REM: x % 1,
        BinOp.BIT_XOR: x ^ 1, BinOp.BIT_AND: x & 1, BinOp.BIT_OR: x | 1, BinOp.SHL: x << 1, BinOp.SHR: x >> 1,
        BinOp.LT: x < 1, BinOp.LE: x <= 1, BinOp.GT: x > 1, BinOp.GE: x >= 1, BinOp.EQ: x == 1, BinOp.NE: x != 1,
        BinOp.MIN: x.min(1), BinOp.MAX: x.max(1),
    }
    for op, v in cases.items():
        assert isinstance(v, Val)
        assert v.node == Binary(op=op, lhs=n, rhs=lit("u32", 1)), op


def test_reflected_operators_put_the_literal_on_the_left(b):
    x = b.buffer("x", "i32")[0]
    assert (3 - x).node == Binary(op=BinOp.SUB, lhs=lit("i32", 3), rhs=x.node)
    assert (2 * x).node == Binary(op=BinOp.MUL, lhs=lit("i32", 2), rhs=x.node)
    assert (7 / x).node == Binary(op=BinOp.DIV, lhs=lit("i32", 7), rhs=x.node)
    assert (1 + x).node.op is BinOp.ADD and (5 % x).node.op is BinOp.REM


def test_logical_vs_bitwise(b):
    c = b.buffer("c", "bool")[0]
    d = b.buffer("d", "bool")[1]
    assert (c & d).node.op is BinOp.AND
    assert (c | d).node.op is BinOp.OR
    assert (~c).node == Unary(op=UnOp.NOT, arg=c.node)
    x = b.buffer("x", "u32")[0]
    assert (x & x).node.op is BinOp.BIT_AND
    assert (~x).node == Unary(op=UnOp.NOT, arg=x.node)


def test_unary_methods_and_conversions(b):
    f = b.buffer("f", "f32")[0]
    assert (-f).node == Unary(op=UnOp.NEG, arg=f.node)
    assert abs(f).node == Unary(op=UnOp.ABS, arg=f.node)
    assert f.abs().node == Unary(op=UnOp.ABS, arg=f.node)
    assert f.sqrt().node == Unary(op=UnOp.SQRT, arg=f.node)
    assert f.inverse_sqrt().node.op is UnOp.INVERSE_SQRT
    assert f.count_ones().node.op is UnOp.COUNT_ONES
    assert (f ** 2).node == Binary(op=BinOp.POW, lhs=f.node, rhs=lit("f32", 2.0))
    assert f.cast("u32").node == Cast(dtype=DataType.U32, arg=f.node)
    assert f.bitcast("u32").node == Bitcast(dtype=DataType.U32, arg=f.node)
    assert b.cast(3, "f32").node == Cast(dtype=DataType.F32, arg=lit("u32", 3))


def test_vectors(b):
    v = b.vec("vec3<f32>", 1, 2.5, b.lit(3.0))
    assert v.node == VecNew(dtype=DataType.VEC3_F32, args=[lit("f32", 1.0), lit("f32", 2.5), lit("f32", 3.0)])
    assert v.x.node == Extract(arg=v.node, lane=0)
    assert v.z.node == Extract(arg=v.node, lane=2)
    assert v[1].node == Extract(arg=v.node, lane=1)
    assert v.dtype is DataType.VEC3_F32
    # a scalar operand of a vector expression takes the component type
    assert (v * 2).node == Binary(op=BinOp.MUL, lhs=v.node, rhs=lit("f32", 2.0))


def test_select_min_max_fma(b):
    f = b.buffer("f", "f32")[0]
    c = f > 0.0
    s = b.select(c, f, 0)
    assert s.node == Select(cond=c.node, if_true=f.node, if_false=lit("f32", 0.0))
    assert b.min(1, f).node == Binary(op=BinOp.MIN, lhs=lit("f32", 1.0), rhs=f.node)
    assert b.max(f, 2).node == Binary(op=BinOp.MAX, lhs=f.node, rhs=lit("f32", 2.0))
    assert b.fma(2, f, 1).node == Fma(a=lit("f32", 2.0), b=f.node, c=lit("f32", 1.0))


def test_builtins_and_len(b):
    y = b.buffer("y", "u32", access="read_write")
    assert b.global_index().node == Builtin(name=BuiltinName.GLOBAL_INDEX)
    assert b.local_index().node == Builtin(name=BuiltinName.LOCAL_INDEX)
    assert b.global_id(1).node == Builtin(name=BuiltinName.GLOBAL_ID, axis=1)
    assert b.local_id().node == Builtin(name=BuiltinName.LOCAL_ID, axis=0)
    assert b.workgroup_id(2).node == Builtin(name=BuiltinName.WORKGROUP_ID, axis=2)
    assert b.num_workgroups(0).node == Builtin(name=BuiltinName.NUM_WORKGROUPS, axis=0)
    assert y.len().node == BufLen(buffer="y")
    assert y.len().dtype is DataType.U32


# --------------------------------------------------------------------------- literals
def test_literal_defaults(b):
    assert b.lit(True).node == lit("bool", True)
    assert b.lit(5).node == lit("u32", 5)
    assert b.lit(-5).node == lit("i32", -5)
    assert b.lit(1.5).node == lit("f32", 1.5)
    assert b.lit(2, "f16").node == lit("f16", 2.0)
    assert isinstance(b.lit(2, "f32").node.value, float)


def test_literal_numpy_scalars(b):
    assert b.lit(np.float16(1.5)).node == lit("f16", 1.5)
    assert b.lit(np.int32(-2)).node == lit("i32", -2)
    assert b.lit(np.uint32(7)).node == lit("u32", 7)
    assert b.lit(np.bool_(True)).node == lit("bool", True)
    n = b.lit(np.float32("nan")).node
    assert n.dtype is DataType.F32 and math.isnan(n.value)


def test_literal_coercion_takes_the_other_operand_type(b):
    f = b.buffer("f", "f32")[0]
    i = b.buffer("i", "i32")[0]
    h = b.buffer("h", "f16")[0]
    assert (f + 1).node.rhs == lit("f32", 1.0)
    assert isinstance((f + 1).node.rhs.value, float)
    assert (i + 1).node.rhs == lit("i32", 1)
    assert (i - (-1)).node.rhs == lit("i32", -1)
    assert (h * 2).node.rhs == lit("f16", 2.0)
    # the shift amount is always u32
    assert (i << 3).node.rhs == lit("u32", 3)
    assert (i >> 3).node.rhs == lit("u32", 3)


def test_stores_coerce_to_the_buffer_type_and_indices(b):
    y = b.buffer("y", "f32", access="read_write")
    y[3] = 1
    y[b.global_index()] = 2.5
    s0, s1 = b._blocks[0]
    assert s0 == Store(buffer="y", index=lit("u32", 3), value=lit("f32", 1.0))
    assert s1 == Store(buffer="y", index=Builtin(name=BuiltinName.GLOBAL_INDEX), value=lit("f32", 2.5))
    assert y[-1].node == Load(buffer="y", index=lit("i32", -1))
    b.store(y, 0, 0)
    assert b._blocks[0][-1].value == lit("f32", 0.0)


# --------------------------------------------------------------------------- statements
def test_let_and_var(b):
    x = b.buffer("x", "u32")
    t = b.let(x[0] + 1, name="t")
    assert isinstance(t, Val) and t.node == Var(name="t")
    assert t.dtype is DataType.U32
    v = b.var("f32", name="acc")
    assert isinstance(v, MutVar) and v.name == "acc"
    w = b.var("i32", 3)
    v += 1.5
    v.set(2)
    b.assign(v, v * 2)
    stmts = b._blocks[0]
    assert stmts[0] == Let(name="t", value=Binary(op=BinOp.ADD, lhs=Load(buffer="x", index=lit("u32", 0)),
                                                  rhs=lit("u32", 1)))
    assert stmts[1] == VarDecl(name="acc", dtype=DataType.F32, value=None)
    assert stmts[2] == VarDecl(name=w.name, dtype=DataType.I32, value=lit("i32", 3))
    assert stmts[3] == Assign(name="acc", value=Binary(op=BinOp.ADD, lhs=Var(name="acc"), rhs=lit("f32", 1.5)))
    assert stmts[4] == Assign(name="acc", value=lit("f32", 2.0))
    assert stmts[5] == Assign(name="acc", value=Binary(op=BinOp.MUL, lhs=Var(name="acc"), rhs=lit("f32", 2.0)))


def test_fresh_names_are_deterministic_and_distinct():
    def names():
        b = ProgramBuilder("n")
        return [b.let(1).node.name, b.var("u32").node.name, b.let(2).node.name]

    first = names()
    assert first == names()
    assert len(set(first)) == 3


def test_if_else(b):
    y = b.buffer("y", "u32", access="read_write")
    i = b.global_index()
    with b.if_(i < 4):
        y[i] = 1
    with b.else_():
        y[i] = 2
    with b.if_(True):
        b.return_()
    (s, s2) = b._blocks[0]
    assert isinstance(s, If)
    assert s.cond == Binary(op=BinOp.LT, lhs=i.node, rhs=lit("u32", 4))
    assert s.then == [Store(buffer="y", index=i.node, value=lit("u32", 1))]
    assert s.otherwise == [Store(buffer="y", index=i.node, value=lit("u32", 2))]
    assert s2 == If(cond=lit("bool", True), then=[Return()])


def test_nested_blocks_and_scopes(b):
    y = b.buffer("y", "u32", access="read_write")
    with b.if_(b.global_index() < 8):
        with b.if_(b.local_index() == 0):
            t = b.let(b.lit(1), name="inner")
            y[0] = t
            assert t.dtype is DataType.U32
    # out of scope: the builder no longer knows the type
    assert t.dtype is None
    outer = b._blocks[0][0]
    assert outer.then[0].then == [Let(name="inner", value=lit("u32", 1)), Store(buffer="y", index=lit("u32", 0),
                                                                               value=Var(name="inner"))]


def test_for_range(b):
    y = b.buffer("y", "u32", access="read_write")
    with b.for_range(0, y.len(), name="k") as k:
        assert k.node == Var(name="k") and k.dtype is DataType.U32
        y[k] = k
        b.continue_()
    with b.for_range(b.lit(10, "i32"), -1, step=-2) as j:
        assert j.dtype is DataType.I32
        b.break_()
    f1, f2 = b._blocks[0]
    assert f1 == For(var="k", start=lit("u32", 0), end=BufLen(buffer="y"), step=1,
                     body=[Store(buffer="y", index=Var(name="k"), value=Var(name="k")), Continue()])
    assert f2.start == lit("i32", 10) and f2.end == lit("i32", -1) and f2.step == -2 and f2.body == [Break()]
    assert b.build().body == [f1, f2]


def test_for_range_literal_bounds(b):
    with b.for_range(2, 9) as k:
        pass
    (f,) = b._blocks[0]
    assert (f.start, f.end, f.step) == (lit("u32", 2), lit("u32", 9), 1)
    assert f.var == k.node.name


def test_while(b):
    v = b.var("u32", 0, name="v")
    with b.while_(v < 10):
        v += 1
        b.barrier()
        b.barrier("storage")
    w = b._blocks[0][1]
    assert w == While(cond=Binary(op=BinOp.LT, lhs=Var(name="v"), rhs=lit("u32", 10)), body=[
        Assign(name="v", value=Binary(op=BinOp.ADD, lhs=Var(name="v"), rhs=lit("u32", 1))),
        Barrier(), Barrier(scope=BarrierScope.STORAGE)])
    b.build()


# --------------------------------------------------------------------------- atomics
def test_atomics_bind_to_lets(b):
    c = b.buffer("c", "u32", access="read_write")
    old = c.atomic_add(0, 1)
    assert isinstance(old, Val) and isinstance(old.node, Var)
    (s,) = b._blocks[0]
    assert s == Let(name=old.node.name, value=Atomic(op=AtomicOp.ADD, buffer="c", index=lit("u32", 0),
                                                    value=lit("u32", 1)))
    assert old.dtype is DataType.U32
    # used twice, the atomic still runs once
    c[1] = old + old
    assert sum(isinstance(s, Let) for s in b._blocks[0]) == 1


def test_every_atomic_op(b):
    c = b.buffer("c", "i32", access="read_write")
    ops = [(c.atomic_add, AtomicOp.ADD), (c.atomic_sub, AtomicOp.SUB), (c.atomic_min, AtomicOp.MIN),
           (c.atomic_max, AtomicOp.MAX), (c.atomic_and, AtomicOp.AND), (c.atomic_or, AtomicOp.OR),
           (c.atomic_xor, AtomicOp.XOR), (c.atomic_exchange, AtomicOp.EXCHANGE)]
    for fn, op in ops:
        fn(1, -3)
        assert b._blocks[0][-1].value == Atomic(op=op, buffer="c", index=lit("u32", 1), value=lit("i32", -3))
    c.atomic_load(2)
    assert b._blocks[0][-1].value == Atomic(op=AtomicOp.LOAD, buffer="c", index=lit("u32", 2))
    c.atomic_compare_exchange(0, 5, 6)
    assert b._blocks[0][-1].value == Atomic(op=AtomicOp.COMPARE_EXCHANGE, buffer="c", index=lit("u32", 0),
                                            value=lit("i32", 6), expected=lit("i32", 5))
    names = [s.name for s in b._blocks[0]]
    assert len(set(names)) == len(names)
    b.build()


def test_atomic_discard_emits_eval(b):
    c = b.buffer("c", "u32", access="read_write")
    assert c.atomic_add(0, 1, discard=True) is None
    assert c.atomic_compare_exchange(1, 0, 7, discard=True) is None
    assert b._blocks[0] == [
        Eval(value=Atomic(op=AtomicOp.ADD, buffer="c", index=lit("u32", 0), value=lit("u32", 1))),
        Eval(value=Atomic(op=AtomicOp.COMPARE_EXCHANGE, buffer="c", index=lit("u32", 1), value=lit("u32", 7),
                          expected=lit("u32", 0))),
    ]
    b.build()


def test_eval_emits_statement(b):
    b.buffer("c", "u32", access="read_write")
    node = Atomic(op=AtomicOp.ADD, buffer="c", index=lit("u32", 0), value=lit("u32", 1))
    b.eval(Val(b, node))
    assert b._blocks[0] == [Eval(value=node)]


# --------------------------------------------------------------------------- misuse
def test_bool_of_a_value_raises(b):
    x = b.buffer("x", "u32")[0]
    with pytest.raises(TypeError, match="truth value"):
        bool(x)
    with pytest.raises(TypeError):
        if x < 3:
            pass
    with pytest.raises(TypeError):
        _ = (x < 1) and (x > 0)


def test_else_without_if_raises(b):
    with pytest.raises(BuilderError, match="else_"):
        with b.else_():
            pass
    y = b.buffer("y", "u32", access="read_write")
    y[0] = 1
    with pytest.raises(BuilderError):
        with b.else_():
            pass
    with b.if_(True):
        pass
    with b.else_():
        y[0] = 2
    with pytest.raises(BuilderError):  # a second else
        with b.else_():
            pass


def test_other_misuse(b):
    x = b.buffer("x", "u32")
    with pytest.raises(TypeError, match="index it"):
        _ = x[0] + x
    with pytest.raises(TypeError, match="truncates"):
        _ = x[0] // 2
    with pytest.raises(TypeError, match="cannot use"):
        _ = x[0] + "1"
    with pytest.raises(TypeError):
        hash(x[0])
    with pytest.raises(ValidationError, match="unknown data type"):
        b.buffer("z", "complex64")  # float64 is f64 now


def test_build_inside_open_block_raises(b):
    with b.if_(True):
        with pytest.raises(BuilderError, match="open"):
            b.build()


def test_exception_inside_block_leaves_builder_usable(b):
    with pytest.raises(RuntimeError):
        with b.if_(True):
            raise RuntimeError("boom")
    assert b._blocks == [[]]
    b.build()


def test_build_validates(b):
    y = b.buffer("y", "u32", access="read_write")
    y[0] = 1.5  # u32 literal holding a float
    with pytest.raises(ValidationError) as exc:
        b.build()
    assert exc.value.rules == ["type"]
    p = b.build(validate=False)
    assert p.body[0].value == lit("u32", 1.5)


def test_build_program_fields():
    b = ProgramBuilder("prog", workgroup_size=(8, 8))
    b.buffer("a", "f32", access="uniform", count=2)
    b.buffer("o", "f32", access="write", binding=5)
    b.buffer("p", "f32", access="read_write")
    b.workgroup_array("s", "vec4<f32>", 16)
    p = b.build()
    assert p.name == "prog" and p.workgroup_size == (8, 8, 1)
    assert [(d.name, d.binding) for d in p.buffers] == [("a", 0), ("o", 5), ("p", 6)]
    assert [d.name for d in p.output_buffers] == ["o", "p"]
    assert p.workgroup[0].dtype is DataType.VEC4_F32 and p.workgroup[0].count == 16


def test_every_unary_operator_is_a_val_method(b):
    f = b.lit(1.0)
    for op in UnOp:
        if op in (UnOp.NEG, UnOp.NOT):
            continue
        v = getattr(f, op.value)()
        assert v.node == Unary(op=op, arg=f.node), op


@pytest.mark.parametrize("index", [1.5, 1.0, np.float32(2.0), True, "1", None])
def test_non_integer_python_index_is_refused(b, index):
    x = b.buffer("x", "u32", "read_write")
    with pytest.raises(ValidationError, match="buffer index must be an integer") as exc:
        x[index] = 1
    assert exc.value.issues[0].fix
    with pytest.raises(ValidationError, match="buffer index must be an integer"):
        _ = x[index]
    with pytest.raises(ValidationError, match="buffer index must be an integer"):
        x.atomic_add(index, 1)
    v = b.let(b.vec("vec4<f32>", 1.0, 2.0, 3.0, 4.0))
    with pytest.raises(ValidationError, match="vector lane must be an integer"):
        _ = v[index]


def test_integer_python_indices_still_build(b):
    x = b.buffer("x", "u32", "read_write")
    x[np.int32(1)] = x[np.uint32(2)]
    x[3] = 4
    assert len(b.build().body) == 2


@pytest.mark.parametrize(("given", "expected"), [
    (np.float32, DataType.F32), ("float32", DataType.F32), (np.dtype(np.float16), DataType.F16),
    ("float16", DataType.F16), (np.int32, DataType.I32), ("int32", DataType.I32), (np.uint32, DataType.U32),
    ("uint32", DataType.U32), (np.bool_, DataType.BOOL), ("bool", DataType.BOOL), ("vec4<f32>", DataType.VEC4_F32),
])
def test_buffer_accepts_numpy_dtypes_and_names(b, given, expected):
    assert b.buffer("x", given).dtype == expected


@pytest.mark.parametrize("given", [np.complex64, "complex128", np.int16, "int8", np.dtype(np.uint16), object, "f128"])
def test_buffer_refuses_other_dtypes_listing_the_accepted_names(b, given):
    with pytest.raises(ValidationError, match="float32, float16, int32, uint32, bool") as exc:
        b.buffer("x", given)
    assert "vec4<f32>" in str(exc.value) and exc.value.issues[0].fix
