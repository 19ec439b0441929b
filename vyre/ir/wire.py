"""Wire format: canonical JSON with a format-version field, and content fingerprints.

Canonical bytes: keys sorted, no insignificant white space, ASCII only, every field
present (defaults included), non-finite floats as the strings "nan"/"inf"/"-inf".
The fingerprint is the sha256 of these bytes, so it is the same in every process
and on every machine.
"""

from __future__ import annotations

import hashlib
import json

from pydantic import ValidationError as PydanticValidationError

from ..errors import ValidationError, ValidationIssue
from .program import Program

WIRE_FORMAT = "vyre.program"
WIRE_VERSION = 1


def to_wire_dict(program: Program) -> dict:
    return {"format": WIRE_FORMAT, "version": WIRE_VERSION, "program": program.model_dump(mode="json")}


def to_wire(program: Program) -> bytes:
    return json.dumps(
        to_wire_dict(program), sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False
    ).encode("ascii")


def _wire_error(message: str, fix: str) -> ValidationError:
    return ValidationError("<wire>", [ValidationIssue("wire", "<wire>", "", message, fix)])


def from_wire(data: bytes | str) -> Program:
    try:
        doc = json.loads(data)
    except (ValueError, UnicodeDecodeError, TypeError, RecursionError) as exc:
        raise _wire_error(f"not JSON: {exc}", "pass bytes produced by Program.to_wire()") from None
    if not isinstance(doc, dict) or doc.get("format") != WIRE_FORMAT:
        raise _wire_error("missing or wrong 'format' field", f"the document must have format={WIRE_FORMAT!r}")
    if doc.get("version") != WIRE_VERSION:
        raise _wire_error(
            f"unsupported wire version {doc.get('version')!r}", f"this vyre reads version {WIRE_VERSION}"
        )
    try:
        return Program.model_validate(doc.get("program"))
    except PydanticValidationError as exc:
        raise _wire_error(f"malformed program: {exc}", "pass bytes produced by Program.to_wire()") from None


def fingerprint(program: Program) -> str:
    return hashlib.sha256(to_wire(program)).hexdigest()


__all__ = ["WIRE_FORMAT", "WIRE_VERSION", "to_wire", "to_wire_dict", "from_wire", "fingerprint"]
