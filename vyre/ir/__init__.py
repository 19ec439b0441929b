"""vyre IR: types, nodes, programs, the builder, validation, passes and the wire format."""

from .builder import BufRef, MutVar, ProgramBuilder, Val
from .nodes import *  # noqa: F401,F403
from .nodes import __all__ as _nodes_all
from .program import BufferDecl, Program, WorkgroupDecl
from .types import Access, DataType

__all__ = ["Access", "DataType", "BufferDecl", "WorkgroupDecl", "Program", "ProgramBuilder", "Val", "MutVar",
           "BufRef", *_nodes_all]
