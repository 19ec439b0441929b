"""Canonical wire form of IR models: the bytes behind ``Program.to_wire`` and ``Program.fingerprint``.

Canonical bytes: keys sorted, no insignificant white space, ASCII only, every field
present (defaults included), non-finite floats as the strings "nan"/"inf"/"-inf", inside a
``{"format", "version", "program"}`` envelope. The fingerprint is the sha256 of these bytes,
so it is the same in every process and on every machine.

This is a leaf of vyre.ir: it imports no other vyre.ir module and takes the model class as
an argument, so :mod:`vyre.ir.program` (the data) and :mod:`vyre.ir.wire` (the public wire
functions) both use it without importing each other.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, TypeVar

from pydantic import BaseModel
from pydantic import ValidationError as PydanticValidationError

from ..errors import ValidationError, ValidationIssue

WIRE_FORMAT = "vyre.program"
WIRE_VERSION = 1

M = TypeVar("M", bound=BaseModel)


def wire_dict(model: BaseModel) -> dict[str, Any]:
    """The JSON document of ``model`` inside the format/version envelope."""
    return {"format": WIRE_FORMAT, "version": WIRE_VERSION, "program": model.model_dump(mode="json")}


def wire_bytes(model: BaseModel) -> bytes:
    """The canonical bytes of ``model``."""
    return json.dumps(
        wire_dict(model), sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False
    ).encode("ascii")


def wire_fingerprint(model: BaseModel) -> str:
    """sha256 hex digest of :func:`wire_bytes`."""
    return hashlib.sha256(wire_bytes(model)).hexdigest()


def _wire_error(message: str, fix: str) -> ValidationError:
    return ValidationError("<wire>", [ValidationIssue("wire", "<wire>", "", message, fix)])


def read_wire(model_cls: type[M], data: bytes | str) -> M:
    """Parse canonical bytes back into a ``model_cls``; :class:`vyre.errors.ValidationError` when malformed."""
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
        return model_cls.model_validate(doc.get("program"))
    except PydanticValidationError as exc:
        raise _wire_error(f"malformed program: {exc}", "pass bytes produced by Program.to_wire()") from None


__all__ = ["WIRE_FORMAT", "WIRE_VERSION", "wire_dict", "wire_bytes", "wire_fingerprint", "read_wire"]
