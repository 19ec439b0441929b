"""IR nodes: expressions and statements, as pydantic models.

Every node has a ``kind`` discriminator so the whole tree round-trips through
JSON. Nodes are immutable; passes build new trees with ``model_copy``.
Users normally build them through :mod:`vyre.ir.builder`.
"""

from __future__ import annotations

import math
from enum import Enum
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, field_serializer, field_validator

from .types import DataType


class Node(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


# --------------------------------------------------------------------------- ops
class UnOp(str, Enum):
    NEG = "neg"
    NOT = "not"  # logical not on bool, bitwise complement on integers
    ABS = "abs"
    SQRT = "sqrt"
    INVERSE_SQRT = "inverse_sqrt"
    EXP = "exp"
    EXP2 = "exp2"
    LOG = "log"
    LOG2 = "log2"
    SIN = "sin"
    COS = "cos"
    TAN = "tan"
    TANH = "tanh"
    FLOOR = "floor"
    CEIL = "ceil"
    ROUND = "round"  # half to even, like WGSL round()
    TRUNC = "trunc"
    FRACT = "fract"
    SIGN = "sign"
    COUNT_ONES = "count_ones"
    REVERSE_BITS = "reverse_bits"
    COUNT_LEADING_ZEROS = "count_leading_zeros"
    COUNT_TRAILING_ZEROS = "count_trailing_zeros"


FLOAT_UNOPS = frozenset(
    {
        UnOp.SQRT, UnOp.INVERSE_SQRT, UnOp.EXP, UnOp.EXP2, UnOp.LOG, UnOp.LOG2, UnOp.SIN,
        UnOp.COS, UnOp.TAN, UnOp.TANH, UnOp.FLOOR, UnOp.CEIL, UnOp.ROUND, UnOp.TRUNC, UnOp.FRACT,
    }
)
INT_UNOPS = frozenset(
    {UnOp.COUNT_ONES, UnOp.REVERSE_BITS, UnOp.COUNT_LEADING_ZEROS, UnOp.COUNT_TRAILING_ZEROS}
)


class BinOp(str, Enum):
    ADD = "add"
    SUB = "sub"
    MUL = "mul"
    DIV = "div"
    REM = "rem"
    MIN = "min"
    MAX = "max"
    POW = "pow"
    BIT_AND = "bit_and"
    BIT_OR = "bit_or"
    BIT_XOR = "bit_xor"
    SHL = "shl"
    SHR = "shr"
    EQ = "eq"
    NE = "ne"
    LT = "lt"
    LE = "le"
    GT = "gt"
    GE = "ge"
    AND = "and"  # logical, bool operands
    OR = "or"  # logical, bool operands


ARITH_BINOPS = frozenset({BinOp.ADD, BinOp.SUB, BinOp.MUL, BinOp.DIV, BinOp.REM, BinOp.MIN, BinOp.MAX})
BIT_BINOPS = frozenset({BinOp.BIT_AND, BinOp.BIT_OR, BinOp.BIT_XOR})
SHIFT_BINOPS = frozenset({BinOp.SHL, BinOp.SHR})
COMPARE_BINOPS = frozenset({BinOp.EQ, BinOp.NE, BinOp.LT, BinOp.LE, BinOp.GT, BinOp.GE})
LOGIC_BINOPS = frozenset({BinOp.AND, BinOp.OR})


class AtomicOp(str, Enum):
    ADD = "add"
    SUB = "sub"
    MIN = "min"
    MAX = "max"
    AND = "and"
    OR = "or"
    XOR = "xor"
    EXCHANGE = "exchange"
    COMPARE_EXCHANGE = "compare_exchange"  # returns the old value
    LOAD = "load"


class BuiltinName(str, Enum):
    GLOBAL_ID = "global_id"  # vec3 component, needs axis
    LOCAL_ID = "local_id"  # vec3 component, needs axis
    WORKGROUP_ID = "workgroup_id"  # vec3 component, needs axis
    NUM_WORKGROUPS = "num_workgroups"  # vec3 component, needs axis
    GLOBAL_INDEX = "global_index"  # linear index over the whole (logical) grid
    LOCAL_INDEX = "local_index"  # linear index inside the workgroup
    SUBGROUP_INVOCATION_ID = "subgroup_invocation_id"  # lane inside the subgroup (needs the subgroups feature)
    SUBGROUP_SIZE = "subgroup_size"  # invocations per subgroup (needs the subgroups feature)


AXIS_BUILTINS = frozenset(
    {BuiltinName.GLOBAL_ID, BuiltinName.LOCAL_ID, BuiltinName.WORKGROUP_ID, BuiltinName.NUM_WORKGROUPS}
)


SUBGROUP_BUILTINS = frozenset({BuiltinName.SUBGROUP_INVOCATION_ID, BuiltinName.SUBGROUP_SIZE})


class SubgroupOp(str, Enum):
    """Operations across the active invocations of a subgroup (WGSL's ``subgroup*`` built-ins)."""

    ADD = "add"
    MUL = "mul"
    MIN = "min"
    MAX = "max"
    AND = "and"
    OR = "or"
    XOR = "xor"
    ALL = "all"  # bool
    ANY = "any"  # bool
    INCLUSIVE_ADD = "inclusive_add"
    EXCLUSIVE_ADD = "exclusive_add"
    INCLUSIVE_MUL = "inclusive_mul"
    EXCLUSIVE_MUL = "exclusive_mul"
    BROADCAST = "broadcast"  # lane: a u32 literal
    BROADCAST_FIRST = "broadcast_first"
    SHUFFLE = "shuffle"  # lane: any u32
    SHUFFLE_XOR = "shuffle_xor"  # lane: a workgroup-uniform u32 mask
    SHUFFLE_UP = "shuffle_up"  # lane: a workgroup-uniform u32 delta
    SHUFFLE_DOWN = "shuffle_down"  # lane: a workgroup-uniform u32 delta
    BALLOT = "ballot"  # bool -> vec4<u32>


SUBGROUP_LANE_OPS = frozenset({SubgroupOp.BROADCAST, SubgroupOp.SHUFFLE, SubgroupOp.SHUFFLE_XOR,
                               SubgroupOp.SHUFFLE_UP, SubgroupOp.SHUFFLE_DOWN})


class BarrierScope(str, Enum):
    WORKGROUP = "workgroup"
    STORAGE = "storage"


# --------------------------------------------------------------------------- exprs
def _encode_float(v: bool | int | float) -> bool | int | float | str:
    if isinstance(v, float) and not math.isfinite(v):
        return "nan" if math.isnan(v) else ("inf" if v > 0 else "-inf")
    return v


class Lit(Node):
    """A literal of an explicit type. Non-finite floats travel as "nan"/"inf"/"-inf"."""

    kind: Literal["lit"] = "lit"
    dtype: DataType
    value: bool | int | float

    @field_validator("value", mode="before")
    @classmethod
    def _decode(cls, v: object) -> object:
        if isinstance(v, str) and v in ("nan", "inf", "-inf"):
            return float(v)
        return v

    @field_serializer("value")
    def _encode(self, v: bool | int | float) -> bool | int | float | str:
        return _encode_float(v)


class Var(Node):
    kind: Literal["var"] = "var"
    name: str


class Load(Node):
    """``buffer[index]`` for a storage buffer, uniform buffer or workgroup array."""

    kind: Literal["load"] = "load"
    buffer: str
    index: Expr


class BufLen(Node):
    """Element count of a buffer (u32)."""

    kind: Literal["len"] = "len"
    buffer: str


class Builtin(Node):
    """A u32 built-in value. ``axis`` (0..2) picks the component of the vec3 built-ins."""

    kind: Literal["builtin"] = "builtin"
    name: BuiltinName
    axis: int | None = None


class Unary(Node):
    kind: Literal["unary"] = "unary"
    op: UnOp
    arg: Expr


class Binary(Node):
    kind: Literal["binary"] = "binary"
    op: BinOp
    lhs: Expr
    rhs: Expr


class Select(Node):
    """``cond ? if_true : if_false`` (both sides are evaluated)."""

    kind: Literal["select"] = "select"
    cond: Expr
    if_true: Expr
    if_false: Expr


class Cast(Node):
    """Value conversion. Float to int truncates toward zero and saturates."""

    kind: Literal["cast"] = "cast"
    dtype: DataType
    arg: Expr


class Bitcast(Node):
    """Reinterpret the bits of a 32-bit value (or vector) as another type of the same size."""

    kind: Literal["bitcast"] = "bitcast"
    dtype: DataType
    arg: Expr


class Fma(Node):
    """``a * b + c``."""

    kind: Literal["fma"] = "fma"
    a: Expr
    b: Expr
    c: Expr


class Atomic(Node):
    """An atomic read-modify-write on ``buffer[index]``; evaluates to the old value."""

    kind: Literal["atomic"] = "atomic"
    op: AtomicOp
    buffer: str
    index: Expr
    value: Expr | None = None
    expected: Expr | None = None  # compare_exchange only


class VecNew(Node):
    """Build a vector from its components (or splat a single scalar)."""

    kind: Literal["vec"] = "vec"
    dtype: DataType
    args: list[Expr]


class Extract(Node):
    """One component of a vector."""

    kind: Literal["extract"] = "extract"
    arg: Expr
    lane: int


class Subgroup(Node):
    """A subgroup operation on ``value`` across the active invocations of the caller's subgroup;
    ``lane`` is the source lane of broadcast/shuffle, the mask of shuffle_xor, the delta of
    shuffle_up/down (None for the other ops). Needs the ``subgroups`` capability and
    workgroup-uniform control flow (see :mod:`vyre.ir.subgroups`)."""

    kind: Literal["subgroup"] = "subgroup"
    op: SubgroupOp
    value: Expr
    lane: Expr | None = None


Expr = Annotated[
    Lit | Var | Load | BufLen | Builtin | Unary | Binary | Select | Cast | Bitcast | Fma | Atomic | VecNew | Extract
    | Subgroup,
    Field(discriminator="kind"),
]
EXPR_TYPES = (Lit, Var, Load, BufLen, Builtin, Unary, Binary, Select, Cast, Bitcast, Fma, Atomic, VecNew, Extract,
              Subgroup)


# --------------------------------------------------------------------------- stmts
class Let(Node):
    """Immutable binding."""

    kind: Literal["let"] = "let"
    name: str
    value: Expr


class VarDecl(Node):
    """Mutable variable; zero-initialised when ``value`` is None."""

    kind: Literal["var"] = "var"
    name: str
    dtype: DataType
    value: Expr | None = None


class Assign(Node):
    kind: Literal["assign"] = "assign"
    name: str
    value: Expr


class Store(Node):
    kind: Literal["store"] = "store"
    buffer: str
    index: Expr
    value: Expr


class If(Node):
    kind: Literal["if"] = "if"
    cond: Expr
    then: list[Stmt] = Field(default_factory=list)
    otherwise: list[Stmt] = Field(default_factory=list)


class For(Node):
    """``for (var v = start; v < end; v += step)`` (``>`` when step < 0). ``end`` is re-evaluated each trip."""

    kind: Literal["for"] = "for"
    var: str
    start: Expr
    end: Expr
    step: int = 1
    body: list[Stmt] = Field(default_factory=list)


class While(Node):
    kind: Literal["while"] = "while"
    cond: Expr
    body: list[Stmt] = Field(default_factory=list)


class Break(Node):
    kind: Literal["break"] = "break"


class Continue(Node):
    kind: Literal["continue"] = "continue"


class Barrier(Node):
    kind: Literal["barrier"] = "barrier"
    scope: BarrierScope = BarrierScope.WORKGROUP


class Return(Node):
    kind: Literal["return"] = "return"


class Eval(Node):
    """Evaluate an expression for its side effect (an atomic whose old value is unused)."""

    kind: Literal["eval"] = "eval"
    value: Expr


Stmt = Annotated[
    Let | VarDecl | Assign | Store | If | For | While | Break | Continue | Barrier | Return | Eval,
    Field(discriminator="kind"),
]
STMT_TYPES = (Let, VarDecl, Assign, Store, If, For, While, Break, Continue, Barrier, Return, Eval)

for _cls in EXPR_TYPES + STMT_TYPES:
    _cls.model_rebuild()

__all__ = [
    "Node", "UnOp", "BinOp", "AtomicOp", "BuiltinName", "BarrierScope",
    "FLOAT_UNOPS", "INT_UNOPS", "ARITH_BINOPS", "BIT_BINOPS", "SHIFT_BINOPS", "COMPARE_BINOPS",
    "LOGIC_BINOPS", "AXIS_BUILTINS", "SUBGROUP_BUILTINS", "SubgroupOp", "SUBGROUP_LANE_OPS", "Subgroup",
    "Lit", "Var", "Load", "BufLen", "Builtin", "Unary", "Binary", "Select", "Cast", "Bitcast", "Fma",
    "Atomic", "VecNew", "Extract", "Expr", "EXPR_TYPES",
    "Let", "VarDecl", "Assign", "Store", "If", "For", "While", "Break", "Continue", "Barrier", "Return",
    "Eval", "Stmt", "STMT_TYPES",
]
