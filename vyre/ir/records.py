"""The base of the IR's data classes (:class:`Node`, :func:`node_class`), the constructor coercions
they share, and the markers that shape their wire schema.

Nodes (:mod:`vyre.ir.nodes`) and declarations (:mod:`vyre.ir.decls`) are frozen slotted stdlib
dataclasses; pydantic never sees them until the wire format (:mod:`vyre.ir.canonical`) builds a schema
from their annotations, on first use.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import Enum
from operator import attrgetter
from typing import Annotated, Any, ClassVar, TypeVar, dataclass_transform

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


def coerce_enum(node: Node, name: str, enum: type[Enum]) -> None:
    """A str given for an enum field becomes the member (``Lit(dtype="f32", ...)``), as pydantic coerced it;
    an unknown value is a ValueError."""
    value = getattr(node, name)
    if type(value) is not enum:
        object.__setattr__(node, name, enum(value))


def own_list(node: Node, name: str) -> None:
    """A list field holds a list of its own (any iterable given is copied), so a caller's later
    appends never reach the frozen node."""
    object.__setattr__(node, name, list(getattr(node, name)))


# --------------------------------------------------------------------------- wire markers
# Annotated metadata that pydantic reads when it builds the wire schema (vyre.ir.canonical, on the first
# to_wire/from_wire/fingerprint); nothing else looks at them, and they import nothing until then.
class TaggedByKind:
    """An expression/statement union is tagged by ``kind`` on the wire."""

    def __get_pydantic_core_schema__(self, source: Any, handler: Any) -> Any:
        from pydantic import Field  # why: import time (pydantic loads for the wire only)

        return handler.generate_schema(Annotated[source, Field(discriminator="kind")])


def _encode_float(v: bool | int | float) -> bool | int | float | str:
    if isinstance(v, float) and not math.isfinite(v):
        return "nan" if math.isnan(v) else ("inf" if v > 0 else "-inf")
    return v


def decode_float(v: object) -> object:
    if isinstance(v, str) and v in ("nan", "inf", "-inf"):
        return float(v)
    return v


class LiteralValue:
    """A literal's value: non-finite floats travel as the strings "nan"/"inf"/"-inf"."""

    def __get_pydantic_core_schema__(self, source: Any, handler: Any) -> Any:
        from pydantic_core import core_schema  # why: import time (pydantic loads for the wire only)

        return core_schema.no_info_before_validator_function(
            decode_float, handler(source), serialization=core_schema.plain_serializer_function_ser_schema(
                _encode_float))


__all__ = ["Node", "node_class", "coerce_enum", "own_list", "TaggedByKind", "LiteralValue", "decode_float"]
