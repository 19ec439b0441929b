"""IR nodes: expressions and statements, as frozen slotted dataclasses.

Every node has a ``kind`` discriminator so the whole tree round-trips through JSON
(:mod:`vyre.ir.canonical`, which loads pydantic on first use: building nodes never does).
Nodes are immutable; passes build new trees with :func:`dataclasses.replace`.
Users normally build them through :mod:`vyre.ir.builder`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import Enum
from operator import attrgetter
from typing import Annotated, Any, ClassVar, Literal, TypeVar, dataclass_transform

from .opcodes import *  # noqa: F403  (re-exported: the enums have always been importable from here)
from .opcodes import AtomicOp, BarrierScope, BinOp, BuiltinName, SubgroupOp, UnOp
from .opcodes import __all__ as _opcodes_all
from .types import DataType

_FIELD_VALUES: dict[type[Any], Callable[[Any], Any]] = {}


def _field_values(node: Any) -> Any:
    """The field values of ``node``, in field order (one getter per class, made on first use)."""
    get = _FIELD_VALUES.get(type(node))
    if get is None:
        names = _field_names(type(node))
        get = _FIELD_VALUES[type(node)] = attrgetter(*names) if names else (lambda _: ())
    return get(node)


def _field_names(cls: type[Any]) -> tuple[str, ...]:
    # a Node subclass that is not (yet) a node_class has no fields
    return tuple(getattr(cls, "__dataclass_fields__", ()))


class Node:
    """Base of every IR node and declaration (each a :func:`node_class` dataclass): frozen, compared and
    hashed by its fields like a dataclass with ``eq=True``, and written as a dataclass writes itself.
    These three methods live here once rather than being generated per class (an ``exec`` each at import)."""

    __slots__ = ()
    __dataclass_fields__: ClassVar[dict[str, Any]]  # set by node_class on every subclass (for mypy's replace)
    #: read by pydantic's wire schema only (vyre.ir.canonical): an unknown field on the wire is an error
    __pydantic_config__: ClassVar[dict[str, str]] = {"extra": "forbid"}

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return bool(_field_values(self) == _field_values(other))

    def __hash__(self) -> int:
        return hash(_field_values(self))  # a TypeError for a node holding a list, as a dataclass's hash

    def __repr__(self) -> str:
        items = ", ".join(f"{name}={getattr(self, name)!r}" for name in _field_names(type(self)))
        return f"{type(self).__qualname__}({items})"


N = TypeVar("N", bound=Node)


@dataclass_transform(frozen_default=True, kw_only_default=True, field_specifiers=(field,))
def node_class(cls: type[N]) -> type[N]:
    """``@dataclass(frozen=True, slots=True, kw_only=True)`` with :class:`Node`'s equality, hash and repr."""
    return dataclass(frozen=True, slots=True, kw_only=True, eq=False, repr=False)(cls)


def _enum(node: Node, name: str, enum: type[Enum]) -> None:
    """A str given for an enum field becomes the member (``Lit(dtype="f32", ...)``), as pydantic coerced it;
    an unknown value is a ValueError."""
    value = getattr(node, name)
    if type(value) is not enum:
        object.__setattr__(node, name, enum(value))


def _own_list(node: Node, name: str) -> None:
    """A list field holds a list of its own (any iterable given is copied), so a caller's later
    appends never reach the frozen node."""
    object.__setattr__(node, name, list(getattr(node, name)))


# --------------------------------------------------------------------------- wire markers
# Annotated metadata that pydantic reads when it builds the wire schema (vyre.ir.canonical, on the first
# to_wire/from_wire/fingerprint); nothing else looks at them, and they import nothing until then.
class _TaggedByKind:
    """An expression/statement union is tagged by ``kind`` on the wire."""

    def __get_pydantic_core_schema__(self, source: Any, handler: Any) -> Any:
        from pydantic import Field  # why: import time (pydantic loads for the wire only)

        return handler.generate_schema(Annotated[source, Field(discriminator="kind")])


def _encode_float(v: bool | int | float) -> bool | int | float | str:
    if isinstance(v, float) and not math.isfinite(v):
        return "nan" if math.isnan(v) else ("inf" if v > 0 else "-inf")
    return v


def _decode_float(v: object) -> object:
    if isinstance(v, str) and v in ("nan", "inf", "-inf"):
        return float(v)
    return v


class _LiteralValue:
    """A literal's value: non-finite floats travel as the strings "nan"/"inf"/"-inf"."""

    def __get_pydantic_core_schema__(self, source: Any, handler: Any) -> Any:
        from pydantic_core import core_schema  # why: import time (pydantic loads for the wire only)

        return core_schema.no_info_before_validator_function(
            _decode_float, handler(source), serialization=core_schema.plain_serializer_function_ser_schema(
                _encode_float))


# --------------------------------------------------------------------------- exprs
@node_class
class Lit(Node):
    """A literal of an explicit type. Non-finite floats travel as "nan"/"inf"/"-inf"."""

    kind: Literal["lit"] = "lit"
    dtype: DataType
    value: Annotated[bool | int | float, _LiteralValue()]

    def __post_init__(self) -> None:
        _enum(self, "dtype", DataType)
        if isinstance(self.value, str):  # the wire spelling of a non-finite float
            object.__setattr__(self, "value", _decode_float(self.value))


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
        _enum(self, "name", BuiltinName)


@node_class
class Unary(Node):
    kind: Literal["unary"] = "unary"
    op: UnOp
    arg: Expr

    def __post_init__(self) -> None:
        _enum(self, "op", UnOp)


@node_class
class Binary(Node):
    kind: Literal["binary"] = "binary"
    op: BinOp
    lhs: Expr
    rhs: Expr

    def __post_init__(self) -> None:
        _enum(self, "op", BinOp)


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
        _enum(self, "dtype", DataType)


@node_class
class Bitcast(Node):
    """Reinterpret the bits of a 32-bit value (or vector) as another type of the same size."""

    kind: Literal["bitcast"] = "bitcast"
    dtype: DataType
    arg: Expr

    def __post_init__(self) -> None:
        _enum(self, "dtype", DataType)


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
        _enum(self, "op", AtomicOp)


@node_class
class VecNew(Node):
    """Build a vector from its components (or splat a single scalar)."""

    kind: Literal["vec"] = "vec"
    dtype: DataType
    args: list[Expr]

    def __post_init__(self) -> None:
        _enum(self, "dtype", DataType)
        _own_list(self, "args")


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
        _enum(self, "op", SubgroupOp)


Expr = Annotated[
    Lit | Var | Load | BufLen | Builtin | Unary | Binary | Select | Cast | Bitcast | Fma | Atomic | VecNew | Extract
    | Subgroup,
    _TaggedByKind(),
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
        _enum(self, "dtype", DataType)


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
        _own_list(self, "then")
        _own_list(self, "otherwise")


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
        _own_list(self, "body")


@node_class
class While(Node):
    kind: Literal["while"] = "while"
    cond: Expr
    body: list[Stmt] = field(default_factory=list)

    def __post_init__(self) -> None:
        _own_list(self, "body")


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
        _enum(self, "scope", BarrierScope)


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
    _TaggedByKind(),
]
STMT_TYPES = (Let, VarDecl, Assign, Store, If, For, While, Break, Continue, Barrier, Return, Eval)

__all__ = [
    "Node", *_opcodes_all, "Subgroup",
    "Lit", "Var", "Load", "BufLen", "Builtin", "Unary", "Binary", "Select", "Cast", "Bitcast", "Fma",
    "Atomic", "VecNew", "Extract", "Expr", "EXPR_TYPES",
    "Let", "VarDecl", "Assign", "Store", "If", "For", "While", "Break", "Continue", "Barrier", "Return",
    "Eval", "Stmt", "STMT_TYPES",
]
