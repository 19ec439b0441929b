"""Program: buffers, workgroup arrays, workgroup size and a body of statements.

A Program is plain data. Validation (:func:`vyre.ir.validate.validate`) and the wire
functions (:mod:`vyre.ir.wire`) take one; this module imports neither. Its canonical
bytes and cached ``fingerprint`` come from the leaf :mod:`vyre.ir.canonical`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

from .decls import BufferDecl, WorkgroupDecl
from .nodes import Stmt
from .records import Node, own_list
from .text import program_to_text
from .types import pad3


# Not slotted (unlike node_class): the cached ``fingerprint`` lives in the instance dict; equality, hash and
# repr are Node's, over the fields only.
@dataclass(frozen=True, kw_only=True, eq=False, repr=False)
class Program(Node):
    """A compute kernel: buffers, workgroup arrays, workgroup size and statements.

    ``grid_from`` optionally names the buffer that drives the default grid: a dispatch
    without an explicit grid then runs one invocation per element of that buffer
    (``global_index`` covers ``[0, count)``). Without it, the default grid is one invocation
    per element of the first writable buffer, and only where that cannot silently cover
    part of the work (see :class:`vyre.DispatchConfig`).
    """

    name: str
    buffers: list[BufferDecl] = field(default_factory=list)
    workgroup: list[WorkgroupDecl] = field(default_factory=list)
    workgroup_size: tuple[int, int, int] = (64, 1, 1)
    body: list[Stmt] = field(default_factory=list)
    grid_from: str | None = None

    def __post_init__(self) -> None:
        # an int or a 1-3 tuple is padded to the (x, y, z) triple (the wire form is always the triple)
        object.__setattr__(self, "workgroup_size", pad3(self.workgroup_size))
        for name in ("buffers", "workgroup", "body"):
            own_list(self, name)

    # ---- buffer views ----------------------------------------------------
    @property
    def sorted_buffers(self) -> list[BufferDecl]:
        return sorted(self.buffers, key=lambda b: b.binding)

    @property
    def input_buffers(self) -> list[BufferDecl]:
        """Buffers the host supplies at dispatch, in binding order."""
        return [b for b in self.sorted_buffers if b.access.readable]

    @property
    def output_buffers(self) -> list[BufferDecl]:
        """Buffers returned by dispatch, in binding order."""
        return [b for b in self.sorted_buffers if b.access.writable]

    def buffer(self, name: str) -> BufferDecl:
        for b in self.buffers:
            if b.name == name:
                return b
        raise KeyError(name)

    @property
    def workgroup_invocations(self) -> int:
        x, y, z = self.workgroup_size
        return x * y * z

    # ---- wire / identity / text -------------------------------------------
    def to_wire(self) -> bytes:
        """Canonical JSON bytes (see :mod:`vyre.ir.canonical`)."""
        from .canonical import wire_bytes  # why: import time (json, hashlib and pydantic load for the wire only)

        return wire_bytes(self)

    @classmethod
    def from_wire(cls, data: bytes | str) -> Program:
        """Read bytes produced by :meth:`to_wire`; :class:`vyre.errors.ValidationError` when malformed."""
        from .canonical import read_wire  # why: import time (see to_wire)

        return read_wire(cls, data)

    @cached_property
    def fingerprint(self) -> str:
        """sha256 hex digest of the canonical wire bytes: stable across processes and machines.
        Computed on first access, then cached on the (immutable) program."""
        from .canonical import wire_fingerprint  # why: import time (see to_wire)

        return wire_fingerprint(self)

    def to_text(self) -> str:
        return program_to_text(self)


__all__ = ["BufferDecl", "WorkgroupDecl", "Program"]
