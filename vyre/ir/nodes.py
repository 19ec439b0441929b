"""IR nodes: expressions and statements, as frozen slotted dataclasses.

Every node has a ``kind`` discriminator so the whole tree round-trips through JSON
(:mod:`vyre.ir.canonical`, which loads pydantic on first use: building nodes never does).
Nodes are immutable; passes build new trees with :func:`dataclasses.replace`.
Users normally build them through :mod:`vyre.ir.builder`.
"""

from __future__ import annotations

from dataclasses import field
from typing import Annotated, Literal

from .opcodes import *  # noqa: F403  (re-exported: the enums have always been importable from here)
from .opcodes import AtomicOp, BarrierScope, BinOp, BuiltinName, SubgroupOp, UnOp
from .opcodes import __all__ as _opcodes_all
from .records import LiteralValue, Node, TaggedByKind, coerce_enum, decode_float, node_class, own_list
from .types import DataType


# --------------------------------------------------------------------------- exprs
@node_class
class Lit(Node):
    """A literal of an explicit type. Non-finite floats travel as "nan"/"inf"/"-inf"."""

    kind: Literal["lit"] = "lit"
    dtype: DataType
    value: Annotated[bool | int | float, LiteralValue()]

    def __post_init__(self) -> None:
        coerce_enum(self, "dtype", DataType)
        if isinstance(self.value, str):  # the wire spelling of a non-finite float
            object.__setattr__(self, "value", decode_float(self.value))


@node_class
class Var(Node):
    kind: Literal["var"] = "var"
    name: str


@node_class
class Load(Node):
    """``buffer[index]`` for a storage buffer, uniform buffer or workgroup array."""

    kind: Literal["load"] = "load"
    buffer: str
    index: Expr


@node_class
class BufLen(Node):
    """Element count of a buffer (u32)."""

    kind: Literal["len"] = "len"
    buffer: str


@node_class
class Builtin(Node):
    """A u32 built-in value. ``axis`` (0..2) picks the component of the vec3 built-ins."""

    kind: Literal["builtin"] = "builtin"
    name: BuiltinName
    axis: int | None = None

    def __post_init__(self) -> None:
        coerce_enum(self, "name", BuiltinName)


@node_class
class Unary(Node):
    kind: Literal["unary"] = "unary"
    op: UnOp
    arg: Expr

    def __post_init__(self) -> None:
        coerce_enum(self, "op", UnOp)


@node_class
class Binary(Node):
    kind: Literal["binary"] = "binary"
    op: BinOp
    lhs: Expr
    rhs: Expr

    def __post_init__(self) -> None:
        coerce_enum(self, "op", BinOp)


@node_class
class Select(Node):
    """``cond ? if_true : if_false`` (both sides are evaluated)."""

    kind: Literal["select"] = "select"
    cond: Expr
    if_true: Expr
    if_false: Expr


@node_class
class Cast(Node):
    """Value conversion. Float to int truncates toward zero and saturates."""

    kind: Literal["cast"] = "cast"
    dtype: DataType
    arg: Expr

    def __post_init__(self) -> None:
        coerce_enum(self, "dtype", DataType)


@node_class
class Bitcast(Node):
    """Reinterpret the bits of a 32-bit value (or vector) as another type of the same size."""

    kind: Literal["bitcast"] = "bitcast"
    dtype: DataType
    arg: Expr

    def __post_init__(self) -> None:
        coerce_enum(self, "dtype", DataType)


@node_class
class Fma(Node):
    """``a * b + c``."""

    kind: Literal["fma"] = "fma"
    a: Expr
    b: Expr
    c: Expr


@node_class
class Atomic(Node):
    """An atomic read-modify-write on ``buffer[index]``; evaluates to the old value."""

    kind: Literal["atomic"] = "atomic"
    op: AtomicOp
    buffer: str
    index: Expr
    value: Expr | None = None
    expected: Expr | None = None  # compare_exchange only

    def __post_init__(self) -> None:
        coerce_enum(self, "op", AtomicOp)


@node_class
class VecNew(Node):
    """Build a vector from its components (or splat a single scalar)."""

    kind: Literal["vec"] = "vec"
    dtype: DataType
    args: list[Expr]

    def __post_init__(self) -> None:
        coerce_enum(self, "dtype", DataType)
        own_list(self, "args")


@node_class
class Extract(Node):
    """One component of a vector."""

    kind: Literal["extract"] = "extract"
    arg: Expr
    lane: int


@node_class
class Subgroup(Node):
    """A subgroup operation on ``value`` across the active invocations of the caller's subgroup;
    ``lane`` is the source lane of broadcast/shuffle, the mask of shuffle_xor, the delta of
    shuffle_up/down (None for the other ops). Needs the ``subgroups`` capability and
    workgroup-uniform control flow (see :mod:`vyre.ir.subgroups`)."""

    kind: Literal["subgroup"] = "subgroup"
    op: SubgroupOp
    value: Expr
    lane: Expr | None = None

    def __post_init__(self) -> None:
        coerce_enum(self, "op", SubgroupOp)


Expr = Annotated[
    Lit | Var | Load | BufLen | Builtin | Unary | Binary | Select | Cast | Bitcast | Fma | Atomic | VecNew | Extract
    | Subgroup,
    TaggedByKind(),
]
EXPR_TYPES = (Lit, Var, Load, BufLen, Builtin, Unary, Binary, Select, Cast, Bitcast, Fma, Atomic, VecNew, Extract,
              Subgroup)


# --------------------------------------------------------------------------- stmts
@node_class
class Let(Node):
    """Immutable binding."""

    kind: Literal["let"] = "let"
    name: str
    value: Expr


@node_class
class VarDecl(Node):
    """Mutable variable; zero-initialised when ``value`` is None."""

    kind: Literal["var"] = "var"
    name: str
    dtype: DataType
    value: Expr | None = None

    def __post_init__(self) -> None:
        coerce_enum(self, "dtype", DataType)


@node_class
class Assign(Node):
    kind: Literal["assign"] = "assign"
    name: str
    value: Expr


@node_class
class Store(Node):
    kind: Literal["store"] = "store"
    buffer: str
    index: Expr
    value: Expr


@node_class
class If(Node):
    kind: Literal["if"] = "if"
    cond: Expr
    then: list[Stmt] = field(default_factory=list)
    otherwise: list[Stmt] = field(default_factory=list)

    def __post_init__(self) -> None:
        own_list(self, "then")
        own_list(self, "otherwise")


@node_class
class For(Node):
    """``for (var v = start; v < end; v += step)`` (``>`` when step < 0). ``end`` is re-evaluated each trip."""

    kind: Literal["for"] = "for"
    var: str
    start: Expr
    end: Expr
    step: int = 1
    body: list[Stmt] = field(default_factory=list)

    def __post_init__(self) -> None:
        own_list(self, "body")


@node_class
class While(Node):
    kind: Literal["while"] = "while"
    cond: Expr
    body: list[Stmt] = field(default_factory=list)

    def __post_init__(self) -> None:
        own_list(self, "body")


@node_class
class Break(Node):
    kind: Literal["break"] = "break"


@node_class
class Continue(Node):
    kind: Literal["continue"] = "continue"


@node_class
class Barrier(Node):
    kind: Literal["barrier"] = "barrier"
    scope: BarrierScope = BarrierScope.WORKGROUP

    def __post_init__(self) -> None:
        coerce_enum(self, "scope", BarrierScope)


@node_class
class Return(Node):
    kind: Literal["return"] = "return"


@node_class
class Eval(Node):
    """Evaluate an expression for its side effect (an atomic whose old value is unused)."""

    kind: Literal["eval"] = "eval"
    value: Expr


Stmt = Annotated[
    Let | VarDecl | Assign | Store | If | For | While | Break | Continue | Barrier | Return | Eval,
    TaggedByKind(),
]
STMT_TYPES = (Let, VarDecl, Assign, Store, If, For, While, Break, Continue, Barrier, Return, Eval)

__all__ = [
    "Node", *_opcodes_all, "Subgroup",
    "Lit", "Var", "Load", "BufLen", "Builtin", "Unary", "Binary", "Select", "Cast", "Bitcast", "Fma",
    "Atomic", "VecNew", "Extract", "Expr", "EXPR_TYPES",
    "Let", "VarDecl", "Assign", "Store", "If", "For", "While", "Break", "Continue", "Barrier", "Return",
    "Eval", "Stmt", "STMT_TYPES",
]
