"""Wire format: canonical JSON with a format-version field, and content fingerprints.

Canonical bytes: keys sorted, no insignificant white space, ASCII only, every field
present (defaults included), non-finite floats as the strings "nan"/"inf"/"-inf".
The fingerprint is the sha256 of these bytes, so it is the same in every process
and on every machine. The encoding itself lives in :mod:`vyre.ir.canonical`, which
:class:`~vyre.ir.program.Program` also uses (for ``to_wire``, ``from_wire`` and the cached
``fingerprint``) without importing this module.
"""

from __future__ import annotations

from typing import Any

from .canonical import WIRE_FORMAT, WIRE_VERSION, json_dict, read_wire, wire_bytes, wire_dict, wire_fingerprint
from .program import Program


def to_wire_dict(program: Program) -> dict[str, Any]:
    return wire_dict(program)


def to_wire(program: Program) -> bytes:
    return wire_bytes(program)


def from_wire(data: bytes | str) -> Program:
    return read_wire(Program, data)


def fingerprint(program: Program) -> str:
    """sha256 of the canonical bytes, computed afresh (``program.fingerprint`` caches the same value)."""
    return wire_fingerprint(program)


__all__ = ["WIRE_FORMAT", "WIRE_VERSION", "to_wire", "to_wire_dict", "from_wire", "fingerprint", "json_dict"]
