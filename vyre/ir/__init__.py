"""vyre IR: types, nodes, programs, the builder, validation, passes and the wire format.

Importing ``vyre.ir`` loads only the data (types, nodes, programs). The builder names
(``ProgramBuilder``, ``Val``, ``MutVar``, ``BufRef``) load :mod:`vyre.ir.builder` on first
use: building validates, so the builder brings the validator in with it.
"""

from typing import TYPE_CHECKING, Any

from .nodes import *  # noqa: F403
from .nodes import __all__ as _nodes_all
from .program import BufferDecl, Program, WorkgroupDecl
from .types import Access, DataType

if TYPE_CHECKING:
    from .builder import BufRef, MutVar, ProgramBuilder, Val

_BUILDER_NAMES = frozenset({"ProgramBuilder", "Val", "MutVar", "BufRef"})


def __getattr__(name: str) -> Any:
    if name in _BUILDER_NAMES:
        from . import builder  # why: import time (the builder and its validator load on first use)

        return getattr(builder, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["Access", "DataType", "BufferDecl", "WorkgroupDecl", "Program", "ProgramBuilder", "Val", "MutVar",
           "BufRef", *_nodes_all]
