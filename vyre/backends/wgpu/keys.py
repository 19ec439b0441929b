"""Cache keys: what makes two compiled pipelines interchangeable.

A compiled pipeline is identified by

* the program's content fingerprint (``program.fingerprint``, sha256 of its wire form);
* the dispatch-config fields that change the generated code (:data:`CODEGEN_FIELDS`: none
  today, since grid, counts and label only change the hidden params uniform and the
  buffer sizes; a future field that changes the WGSL is added there and every key picks
  it up);
* the lowering contract (:func:`lowering_contract`: ``vyre.lower.LOWERING_VERSION`` plus
  the vyre version, or a custom lowering's own version);
* the adapter identity (:func:`adapter_identity`).

The disk cache adds a digest of the device limits the program was validated under
(:func:`limits_digest`) instead of the adapter identity: the lowered WGSL does not depend on
the adapter, but a disk hit skips validation, which does depend on the limits.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping
from typing import Any

# adapter_info fields that identify an adapter (try_recover refuses when they change); shared with the tuning store
from ... import __version__
from ..user_cache import IDENTITY_FIELDS

#: DispatchConfig fields whose value changes the generated WGSL (none today).
CODEGEN_FIELDS: tuple[str, ...] = ()


def _freeze(value: Any) -> Any:
    if isinstance(value, dict):
        return tuple(sorted((k, _freeze(v)) for k, v in value.items()))
    if isinstance(value, (list, tuple)):
        return tuple(_freeze(v) for v in value)
    return value


def codegen_key(config: Any) -> tuple[tuple[str, Any], ...]:
    """The part of ``config`` (a DispatchConfig or None) that changes the generated code."""
    return tuple((name, _freeze(getattr(config, name, None))) for name in CODEGEN_FIELDS)


def adapter_identity(info: Mapping[str, Any]) -> tuple[Any, ...]:
    """(vendor, vendor_id, device, device_id, backend_type, adapter_type, driver) of an adapter_info dict."""
    return tuple(info.get(k) for k in IDENTITY_FIELDS)


def lowering_contract(lower_fn: Callable[..., Any] | None = None) -> str:
    """The version string of a lowering: ``lowering=<LOWERING_VERSION>;vyre=<version>`` for vyre's own,
    ``custom:<lowering_version attribute or qualified name>`` for another function."""
    if lower_fn is None:
        from ...lower import LOWERING_VERSION  # why: import time (vyre.lower loads the IR passes and jinja2)

        return f"lowering={LOWERING_VERSION};vyre={__version__}"
    own = getattr(lower_fn, "lowering_version", None)
    name = own or f"{getattr(lower_fn, '__module__', '?')}.{getattr(lower_fn, '__qualname__', repr(lower_fn))}"
    return f"custom:{name}"


def limits_digest(limits: Mapping[Any, Any]) -> str:
    """Short sha256 of the device limits (sorted), for keys that depend on validation."""
    blob = json.dumps({str(k): v for k, v in limits.items()}, sort_keys=True, default=str).encode()
    return hashlib.sha256(blob).hexdigest()[:16]


def pipeline_key(fingerprint: str, config: Any, contract: str,
                 identity: tuple[Any, ...]) -> tuple[str, tuple[tuple[str, Any], ...], str, tuple[Any, ...]]:
    """The in-memory pipeline cache key."""
    return (fingerprint, codegen_key(config), contract, identity)


__all__ = ["CODEGEN_FIELDS", "IDENTITY_FIELDS", "codegen_key", "adapter_identity", "lowering_contract",
           "limits_digest", "pipeline_key"]
