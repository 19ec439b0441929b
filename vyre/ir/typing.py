"""Type inference for IR expressions.

One implementation serves the validator (which collects every problem), and the
lowering and the interpreters (which only see valid programs and want types).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, NoReturn

from ..errors import ValidationError, ValidationIssue
from .nodes import (
    ARITH_BINOPS,
    AXIS_BUILTINS,
    BIT_BINOPS,
    COMPARE_BINOPS,
    EXPR_TYPES,
    FLOAT_UNOPS,
    INT_UNOPS,
    LOGIC_BINOPS,
    SHIFT_BINOPS,
    SUBGROUP_LANE_OPS,
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
    Lit,
    Load,
    Node,
    Select,
    Subgroup,
    SubgroupOp,
    Unary,
    UnOp,
    Var,
    VecNew,
)
from .text import expr_to_text
from .traverse import Visitor
from .types import ATOMIC_TYPES, DataType

if TYPE_CHECKING:
    from .program import BufferDecl, Program, WorkgroupDecl

#: receives one problem: (path, node, rule, message, fix)
Report = Callable[[str, Node | None, str, str, str], None]


@dataclass
class VarInfo:
    dtype: DataType | None  # None: unknown (the validator declares names whose value did not type)
    mutable: bool


@dataclass
class TypeEnv:
    """Names visible at one point of a program."""

    buffers: dict[str, BufferDecl] = field(default_factory=dict)
    workgroup: dict[str, WorkgroupDecl] = field(default_factory=dict)
    scopes: list[dict[str, VarInfo]] = field(default_factory=lambda: [{}])

    @classmethod
    def for_program(cls, program: Program) -> TypeEnv:
        return cls(
            buffers={b.name: b for b in program.buffers},
            workgroup={w.name: w for w in program.workgroup},
        )

    def lookup(self, name: str) -> VarInfo | None:
        for scope in reversed(self.scopes):
            if name in scope:
                return scope[name]
        return None

    def declare(self, name: str, dtype: DataType | None, mutable: bool) -> None:
        self.scopes[-1][name] = VarInfo(dtype, mutable)

    def push(self) -> None:
        self.scopes.append({})

    def pop(self) -> None:
        self.scopes.pop()

    def array_dtype(self, name: str) -> DataType | None:
        if name in self.buffers:
            return self.buffers[name].dtype
        if name in self.workgroup:
            return self.workgroup[name].dtype
        return None


def _raise(path: str, node: Node | None, rule: str, message: str, fix: str) -> NoReturn:
    text = expr_to_text(node) if node is not None else ""
    raise ValidationError("<expr>", [ValidationIssue(rule, path or "<expr>", text, message, fix)])


def infer(expr: Expr, env: TypeEnv, path: str = "", report: Report | None = None) -> DataType | None:
    """Type of ``expr`` in ``env``. Problems go to ``report`` (and the result is None
    when the type cannot be known); without ``report`` the first problem raises."""
    return _Infer(env, report or _raise).visit(expr, path)


def _bits(d: DataType) -> int:
    return d.lanes * d.bits


#: integer literal ranges per type
_INT_RANGE = {DataType.U32: (0, 2**32 - 1), DataType.I32: (-(2**31), 2**31 - 1),
              DataType.U64: (0, 2**64 - 1), DataType.I64: (-(2**63), 2**63 - 1)}
#: float operations GLSL.std.450 (SPIR-V, so naga's output) defines for 16/32-bit floats only: the lowering
#: computes them in software for f64 (templates/f64_math.wgsl.j2)
F64_SOFTWARE_UNOPS = frozenset({UnOp.EXP, UnOp.EXP2, UnOp.LOG, UnOp.LOG2, UnOp.SIN, UnOp.COS, UnOp.TAN,
                                UnOp.TANH})


_SAME_TYPE_FIX = "make both operands the same type, e.g. with .cast(...)"


def _binary_type(op: BinOp, lt: DataType, rt: DataType) -> DataType | tuple[str, str]:
    """The type of ``lt op rt``, or (message, fix) when the operands do not fit the operator."""
    fix = _SAME_TYPE_FIX
    found = f"found {lt.value} and {rt.value}"
    if op in ARITH_BINOPS:
        if not lt.is_numeric or not rt.is_numeric:
            return f"{op.value} needs numeric operands, {found}", fix
        if lt == rt:
            return lt
        if op not in (BinOp.MIN, BinOp.MAX) and lt.scalar == rt.scalar and (lt.is_vector != rt.is_vector):
            return lt if lt.is_vector else rt
        return f"{op.value} operands differ: {lt.value} and {rt.value}", fix
    if op is BinOp.POW:
        return lt if lt.is_float and lt == rt else (f"pow needs two floats of one type, {found}", fix)
    if op in BIT_BINOPS:
        return lt if lt.is_int and lt == rt else (f"{op.value} needs two integers of one type, {found}", fix)
    if op in SHIFT_BINOPS:
        if not lt.is_int:
            return f"{op.value} shifts integers, found {lt.value}", fix
        if rt != DataType.vector(DataType.U32, lt.lanes):
            return f"the shift amount must be u32, found {rt.value}", "cast the shift amount with .cast('u32')"
        return lt
    if op in COMPARE_BINOPS:
        if lt != rt or lt.is_vector:
            return f"{op.value} compares two scalars of one type, {found}", fix
        if lt.is_bool and op not in (BinOp.EQ, BinOp.NE):
            return f"{op.value} cannot order bools", "compare bools with == or !="
        return DataType.BOOL
    if op in LOGIC_BINOPS:
        if lt is not DataType.BOOL or rt is not DataType.BOOL:
            return f"logical {op.value} needs bool operands, {found}", "compare integers first, e.g. (x != 0)"
        return DataType.BOOL
    return f"unknown operator {op}", "use a BinOp"  # pragma: no cover


class _Infer(Visitor["DataType | None"], covers=EXPR_TYPES):
    """One ``visit_<Expr class>(e, path)`` per expression class; each returns the type or None."""

    def __init__(self, env: TypeEnv, report: Report):
        self.env = env
        self.report = report

    def bad(self, path: str, node: Node, rule: str, message: str, fix: str) -> DataType | None:
        """Report a problem; the result is the unknown type (None)."""
        self.report(path, node, rule, message, fix)
        return None

    def index(self, idx: Expr, path: str) -> None:
        t = self.visit(idx, path)
        if t is not None and t not in (DataType.U32, DataType.I32):
            self.bad(path, idx, "type", f"an index must be u32 or i32, found {t.value}",
                     "cast the index with .cast('u32')")

    # ---- leaves ----
    def visit_Lit(self, e: Lit, path: str) -> DataType | None:
        d = e.dtype
        if d.is_vector:
            return self.bad(path, e, "type", "a literal must be a scalar", "build vectors with vec(...)")
        v = e.value
        if d is DataType.BOOL and not isinstance(v, bool):
            return self.bad(path, e, "type", f"bool literal holds {v!r}", "use True or False")
        if d.is_int:
            if isinstance(v, bool) or not isinstance(v, int):
                return self.bad(path, e, "type", f"{d.value} literal holds non-integer {v!r}",
                                "use an integer value or a float type")
            lo, hi = _INT_RANGE[d]
            if not lo <= v <= hi:
                return self.bad(path, e, "type", f"{v} does not fit in {d.value} [{lo}, {hi}]",
                                "use a value in range or a wider/other type")
        if d.is_float and (isinstance(v, bool) or not isinstance(v, (int, float))):
            return self.bad(path, e, "type", f"{d.value} literal holds {v!r}", "use a number")
        return d

    def visit_Var(self, e: Var, path: str) -> DataType | None:
        info = self.env.lookup(e.name)
        if info is None:
            return self.bad(path, e, "undefined", f"variable {e.name!r} is not defined here",
                            f"declare it with b.let/b.var before use, or check the spelling of {e.name!r}")
        return info.dtype

    def visit_Load(self, e: Load, path: str) -> DataType | None:
        self.index(e.index, path + ".index")
        d = self.env.array_dtype(e.buffer)
        if d is None:
            return self.bad(path, e, "undefined", f"buffer {e.buffer!r} is not declared",
                            "declare it with b.buffer(...) or b.workgroup_array(...)")
        return d

    def visit_BufLen(self, e: BufLen, path: str) -> DataType | None:
        if e.buffer not in self.env.buffers and e.buffer not in self.env.workgroup:
            return self.bad(path, e, "undefined", f"buffer {e.buffer!r} is not declared",
                            "declare it with b.buffer(...)")
        return DataType.U32

    def visit_Builtin(self, e: Builtin, path: str) -> DataType | None:
        if e.name in AXIS_BUILTINS:
            if e.axis not in (0, 1, 2):
                return self.bad(path, e, "type", f"built-in {e.name.value} needs axis 0, 1 or 2",
                                f"use b.{e.name.value}(0) for the x component")
        elif e.axis is not None:
            return self.bad(path, e, "type", f"built-in {e.name.value} takes no axis", "drop the axis")
        return DataType.U32

    # ---- operators ----
    def visit_Unary(self, e: Unary, path: str) -> DataType | None:
        t = self.visit(e.arg, path + ".arg")
        if t is None:
            return None
        op = e.op
        ok = True
        if op is UnOp.NEG:
            ok = t.is_numeric and t.is_signed
            need = "a signed numeric (i32, f32, f16) operand"
        elif op is UnOp.NOT:
            ok = t.is_bool or t.is_int
            need = "a bool or integer operand"
        elif op is UnOp.ABS:
            ok = t.is_numeric
            need = "a numeric operand"
        elif op is UnOp.SIGN:
            ok = t.is_float or t.scalar in (DataType.I32, DataType.I64)
            need = "a float, i32 or i64 operand"
        elif op in FLOAT_UNOPS:
            ok = t.is_float
            need = "a float operand"
        elif op in INT_UNOPS:
            ok = t.is_int and not t.is_64bit
            need = "a 32-bit integer operand (WGSL's bit-counting built-ins take no 64-bit integers)"
        if not ok:
            return self.bad(path, e, "type", f"{op.value} needs {need}, found {t.value}",
                            "cast the operand to a suitable type with .cast(...)")
        return t

    def visit_Binary(self, e: Binary, path: str) -> DataType | None:
        lt = self.visit(e.lhs, path + ".lhs")
        rt = self.visit(e.rhs, path + ".rhs")
        if lt is None or rt is None:
            return None
        result = _binary_type(e.op, lt, rt)
        if isinstance(result, DataType):
            return result
        message, fix = result
        return self.bad(path, e, "type", message, fix)

    def visit_Select(self, e: Select, path: str) -> DataType | None:
        c = self.visit(e.cond, path + ".cond")
        a = self.visit(e.if_true, path + ".if_true")
        b = self.visit(e.if_false, path + ".if_false")
        if c is not None and c is not DataType.BOOL:
            self.bad(path + ".cond", e.cond, "type", f"select condition must be bool, found {c.value}",
                     "compare it, e.g. (x != 0)")
        if a is None or b is None:
            return None
        if a != b:
            return self.bad(path, e, "type", f"select branches differ: {a.value} and {b.value}",
                            "cast one branch so both have the same type")
        return a

    def visit_Cast(self, e: Cast, path: str) -> DataType | None:
        t = self.visit(e.arg, path + ".arg")
        if t is None:
            return None
        if (t.uses_f16 and e.dtype.is_64bit) or (t.is_64bit and e.dtype.uses_f16):
            return self.bad(path, e, "type", f"cannot cast {t.value} to {e.dtype.value} directly",
                            "cast through f32 (e.g. x.cast('f32').cast(...))")
        if t.lanes != e.dtype.lanes:
            return self.bad(path, e, "type", f"cannot cast {t.value} to {e.dtype.value}: component counts differ",
                            "cast between types with the same number of components")
        return e.dtype

    def visit_Bitcast(self, e: Bitcast, path: str) -> DataType | None:
        t = self.visit(e.arg, path + ".arg")
        if t is None:
            return None
        if t.is_bool or e.dtype.is_bool or _bits(t) != _bits(e.dtype):
            return self.bad(path, e, "type", f"cannot bitcast {t.value} to {e.dtype.value}: sizes differ or bool",
                            "bitcast between non-bool types of the same bit width")
        return e.dtype

    def visit_Fma(self, e: Fma, path: str) -> DataType | None:
        maybe = [self.visit(x, f"{path}.{n}") for x, n in ((e.a, "a"), (e.b, "b"), (e.c, "c"))]
        ts = [t for t in maybe if t is not None]
        if len(ts) != len(maybe):
            return None
        if not ts[0].is_float or len(set(ts)) != 1:
            found = ", ".join(t.value for t in ts)
            return self.bad(path, e, "type", f"fma needs three floats of one type, found {found}",
                            "cast the operands to one float type")
        return ts[0]

    def visit_Atomic(self, e: Atomic, path: str) -> DataType | None:
        self.index(e.index, path + ".index")
        d = self.env.array_dtype(e.buffer)
        if d is None:
            return self.bad(path, e, "undefined", f"buffer {e.buffer!r} is not declared",
                            "declare it with b.buffer(...) or b.workgroup_array(...)")
        vt = self.visit(e.value, path + ".value") if e.value is not None else None
        xt = self.visit(e.expected, path + ".expected") if e.expected is not None else None
        if d not in ATOMIC_TYPES:
            return self.bad(path, e, "atomic-type",
                            f"atomic {e.op.value} on {e.buffer!r} of type {d.value}; atomics need u32 or i32",
                            f"declare {e.buffer!r} as u32 or i32, or use a plain load/store")
        if e.op is AtomicOp.LOAD:
            if e.value is not None:
                return self.bad(path, e, "type", "atomic load takes no value", "drop the value")
            return d
        if e.value is None:
            return self.bad(path, e, "type", f"atomic {e.op.value} needs a value", "pass the operand")
        if e.op is AtomicOp.COMPARE_EXCHANGE and e.expected is None:
            return self.bad(path, e, "type", "compare_exchange needs an expected value", "pass expected=...")
        if e.op is not AtomicOp.COMPARE_EXCHANGE and e.expected is not None:
            return self.bad(path, e, "type", f"atomic {e.op.value} takes no expected value", "drop expected")
        for t, n in ((vt, "value"), (xt, "expected")):
            if t is not None and t != d:
                self.bad(f"{path}.{n}", getattr(e, n), "type",
                         f"atomic {n} is {t.value} but {e.buffer!r} holds {d.value}",
                         f"cast the {n} with .cast('{d.value}')")
        return d

    def visit_VecNew(self, e: VecNew, path: str) -> DataType | None:
        if not e.dtype.is_vector:
            return self.bad(path, e, "type", f"vec(...) builds vectors, {e.dtype.value} is a scalar",
                            "use cast instead")
        maybe = [self.visit(a, f"{path}.args[{i}]") for i, a in enumerate(e.args)]
        ts = [t for t in maybe if t is not None]
        if len(ts) != len(maybe):
            return None
        if len(ts) not in (1, e.dtype.lanes) or any(t != e.dtype.scalar for t in ts):
            return self.bad(path, e, "type",
                            f"{e.dtype.value} needs 1 or {e.dtype.lanes} {e.dtype.scalar.value} components, found "
                            + (", ".join(t.value for t in ts) or "none"),
                            "pass scalars of the component type")
        return e.dtype

    def visit_Extract(self, e: Extract, path: str) -> DataType | None:
        t = self.visit(e.arg, path + ".arg")
        if t is None:
            return None
        if not t.is_vector or not 0 <= e.lane < t.lanes:
            return self.bad(path, e, "type", f"cannot take component {e.lane} of {t.value}",
                            "extract components 0..lanes-1 of a vector")
        return t.scalar

    def visit_Subgroup(self, e: Subgroup, path: str) -> DataType | None:
        t = self.visit(e.value, path + ".value")
        lt = self.visit(e.lane, path + ".lane") if e.lane is not None else None
        op = e.op
        if op in SUBGROUP_LANE_OPS:
            if e.lane is None:
                return self.bad(path, e, "type", f"subgroup {op.value} needs a lane",
                                f"pass the lane, e.g. b.subgroup_{op.value}(x, 0)")
            if lt is not None and lt is not DataType.U32:
                return self.bad(path + ".lane", e.lane, "type", f"the lane of subgroup {op.value} must be u32, "
                                f"found {lt.value}", "cast it with .cast('u32')")
            if op is SubgroupOp.BROADCAST and not (isinstance(e.lane, Lit) and 0 <= int(e.lane.value) < 128):
                return self.bad(path + ".lane", e.lane, "type", "the lane of subgroup broadcast must be a u32 "
                                "literal in [0, 128) (WGSL takes a constant there)",
                                "pass a Python int, or use b.subgroup_shuffle(x, lane) for a lane computed at run time")
        elif e.lane is not None:
            return self.bad(path, e, "type", f"subgroup {op.value} takes no lane", "drop the lane")
        if t is None:
            return None
        if op in (SubgroupOp.ALL, SubgroupOp.ANY, SubgroupOp.BALLOT):
            if t is not DataType.BOOL:
                return self.bad(path, e, "type", f"subgroup {op.value} takes a bool, found {t.value}",
                                "compare the value first, e.g. (x != 0)")
            return DataType.VEC4_U32 if op is SubgroupOp.BALLOT else DataType.BOOL
        if op in (SubgroupOp.AND, SubgroupOp.OR, SubgroupOp.XOR):
            if not t.is_int:
                return self.bad(path, e, "type", f"subgroup {op.value} needs an integer (or integer vector), "
                                f"found {t.value}", "cast the value to u32 or i32")
            return t
        if t.is_64bit:
            return self.bad(path, e, "type", f"subgroup {op.value} takes 32-bit (or f16) values, found {t.value}",
                            "split the value into two u32 halves (bitcast to u64, shift and cast)")
        if not t.is_numeric:
            return self.bad(path, e, "type", f"subgroup {op.value} needs a numeric scalar or vector, found "
                            f"{t.value}", "cast bools to u32 first (or use subgroup_all/any/ballot for bools)")
        return t


__all__ = ["TypeEnv", "VarInfo", "infer"]
