"""Canonical wire form of IR models: the bytes behind ``Program.to_wire`` and ``Program.fingerprint``.

Canonical bytes: keys sorted, no insignificant white space, ASCII only, every field
present (defaults included), non-finite floats as the strings "nan"/"inf"/"-inf", inside a
``{"format", "version", "program"}`` envelope. The fingerprint is the sha256 of these bytes,
so it is the same in every process and on every machine.

This is a leaf of vyre.ir: it imports no other vyre.ir module and takes the model class as
an argument, so :mod:`vyre.ir.program` (the data) and :mod:`vyre.ir.wire` (the public wire
functions) both use it without importing each other. The IR classes are plain dataclasses;
pydantic serialises and validates them here (a ``TypeAdapter`` per class, whose schema reads the
``kind``-tagged unions and literal encoding marked in :mod:`vyre.ir.nodes`), imported on first use
so that building programs never loads it.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from typing import Any, TypeVar

from ..errors import ValidationError, ValidationIssue

WIRE_FORMAT = "vyre.program"
WIRE_VERSION = 1

M = TypeVar("M")


_ADAPTERS: dict[type[Any], Any] = {}


def _adapter(cls: type[Any]) -> Any:
    """pydantic's TypeAdapter of an IR class (built once per class: schema building is the slow part); its
    config (unknown fields forbidden) is the classes' ``__pydantic_config__``."""
    adapter = _ADAPTERS.get(cls)
    if adapter is None:
        from pydantic import TypeAdapter  # why: import time (pydantic loads on the first wire use only)

        adapter = _ADAPTERS[cls] = TypeAdapter(cls)
    return adapter


def json_dict(model: object) -> Any:
    """The JSON form of any IR node or declaration (what the wire writes for it)."""
    return _adapter(type(model)).dump_python(model, mode="json")


def wire_dict(model: object) -> dict[str, Any]:
    """The JSON document of ``model`` inside the format/version envelope."""
    return {"format": WIRE_FORMAT, "version": WIRE_VERSION, "program": json_dict(model)}


def wire_bytes(model: object) -> bytes:
    """The canonical bytes of ``model``."""
    return json.dumps(
        wire_dict(model), sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False
    ).encode("ascii")


def wire_fingerprint(model: object) -> str:
    """sha256 hex digest of :func:`wire_bytes`."""
    return hashlib.sha256(wire_bytes(model)).hexdigest()


def _wire_error(message: str, fix: str, path: str = "<wire>") -> ValidationError:
    return ValidationError("<wire>", [ValidationIssue("wire", path, "", message, fix)])


_FIX = "pass bytes produced by Program.to_wire(), unchanged"
_JSON_TYPES = {bool: "true/false", int: "an integer", float: "a float", str: "a string",
               list: "a list", dict: "an object", type(None): "null"}


def _json_path(parts: tuple[Any, ...] | list[Any]) -> str:
    out = ""
    for part in parts:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out or "<document>"


def _doc_loc(doc: Any, loc: Sequence[int | str], missing: bool) -> list[int | str]:
    """pydantic's error location as a path in the document: union tags (a node's ``kind``) and
    union member names (``bool``, ``int``...) left out."""
    out: list[int | str] = []
    for i, part in enumerate(loc):
        if isinstance(doc, dict) and part in doc:
            doc = doc[part]
        elif isinstance(doc, list) and isinstance(part, int) and 0 <= part < len(doc):
            doc = doc[part]
        elif isinstance(doc, dict) and doc.get("kind") == part:
            continue
        elif missing and isinstance(doc, dict) and i == len(loc) - 1:
            out.append(part)  # a missing field
            break
        else:
            break
        out.append(part)
    return out


def _encode(doc: Any) -> bytes:
    return json.dumps(doc, sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False).encode("ascii")


def _first_difference(got: Any, want: Any, path: list[Any]) -> tuple[str, str] | None:
    """Where the document ``got`` first differs from the canonical ``want``: (path, message)."""
    if type(got) is not type(want):
        return _json_path(path), (
            f"expected {_JSON_TYPES.get(type(want), type(want).__name__)} ({_encode(want).decode()[:40]}), "
            f"got {_JSON_TYPES.get(type(got), type(got).__name__)} ({_encode(got).decode()[:40]})"
        )
    if isinstance(want, dict):
        for key in sorted(set(got) | set(want)):
            if key not in want:
                return _json_path([*path, key]), f"unknown field {key!r}"
            if key not in got:
                return _json_path([*path, key]), f"missing field {key!r} (every field is written, defaults included)"
            diff = _first_difference(got[key], want[key], [*path, key])
            if diff is not None:
                return diff
        return None
    if isinstance(want, list):
        if len(got) != len(want):
            return _json_path(path), f"expected a list of {len(want)} item(s), got {len(got)}"
        for i, (g, w) in enumerate(zip(got, want, strict=True)):
            diff = _first_difference(g, w, [*path, i])
            if diff is not None:
                return diff
        return None
    if _encode(got) != _encode(want):
        return _json_path(path), f"value {_encode(got).decode()[:40]} is written back as {_encode(want).decode()[:40]}"
    return None


def _reject_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise ValueError(f"duplicate key {key!r}")
        out[key] = value
    return out


def read_wire(model_cls: type[M], data: bytes | str) -> M:
    """Parse canonical bytes back into a ``model_cls``; :class:`vyre.errors.ValidationError` when malformed.

    Only canonical documents are accepted: every field present, each with exactly the JSON type
    the canonical form writes (an int is a JSON integer, never a bool, float or string), no
    unknown fields, and re-serialising the result gives back the same document. Anything else
    is a ValidationError naming the first offending field.
    """
    try:
        doc = json.loads(data, object_pairs_hook=_reject_duplicates)
    except (ValueError, UnicodeDecodeError, TypeError, RecursionError) as exc:
        raise _wire_error(f"not JSON: {exc}", _FIX) from None
    if not isinstance(doc, dict) or doc.get("format") != WIRE_FORMAT:
        raise _wire_error("missing or wrong 'format' field", f"the document must have format={WIRE_FORMAT!r}",
                          "format")
    version = doc.get("version")
    if type(version) is not int or version != WIRE_VERSION:
        raise _wire_error(f"unsupported wire version {version!r}", f"this vyre reads version {WIRE_VERSION}",
                          "version")
    if not isinstance(doc.get("program"), dict):
        raise _wire_error("missing 'program' object", _FIX, "program")
    from pydantic import ValidationError as PydanticValidationError  # why: import time (see _adapter)

    try:
        model: M = _adapter(model_cls).validate_python(doc["program"])
    except PydanticValidationError as exc:
        errors = exc.errors(include_url=False)
        first = errors[0] if errors else {"loc": (), "msg": str(exc)}
        raise _wire_error(
            f"malformed program: {first['msg']} ({len(errors)} error(s))", _FIX,
            _json_path(["program", *_doc_loc(doc["program"], first["loc"], first.get("type") == "missing")]),
        ) from None
    except (TypeError, ValueError, KeyError, AttributeError, RecursionError) as exc:
        raise _wire_error(f"malformed program: {exc}", _FIX, "program") from None
    try:
        canonical_ok = _encode(doc) == wire_bytes(model)
        diff = None if canonical_ok else _first_difference(doc, wire_dict(model), [])
    except (ValueError, TypeError, RecursionError) as exc:
        canonical_ok, diff = False, ("program", f"not canonical: {exc}")
    if not canonical_ok:
        path, message = diff or ("program", "the document is not in canonical form")
        raise _wire_error(f"not canonical: {message}", _FIX + " (the wire format accepts only canonical documents)",
                          path)
    return model


__all__ = ["WIRE_FORMAT", "WIRE_VERSION", "json_dict", "wire_dict", "wire_bytes", "wire_fingerprint", "read_wire"]
