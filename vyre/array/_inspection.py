"""The standard's inspection namespace (2024.12): ``__array_namespace_info__()`` returns an :class:`Info`
with ``capabilities``, ``default_device``, ``default_dtypes``, ``dtypes`` and ``devices``.

A device is a vyre backend (see _device). ``float16`` is listed for a device only when it has the
``shader-f16`` feature. There are no complex dtypes, so ``default_dtypes`` has no ``"complex floating"``
entry and ``dtypes(kind="complex floating")`` is empty. "max dimensions" is 32: the elementwise
broadcasting and host transfers go through numpy, whose broadcasting takes at most 32 dimensions.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..errors import InvalidArgumentError
from . import _dtypes as D
from ._device import current_backend, default_backend

if TYPE_CHECKING:
    from ..backends.base import Backend

_KINDS: dict[str, tuple[str, ...]] = {
    "bool": ("bool",),
    "signed integer": ("int32",),
    "unsigned integer": ("uint32",),
    "integral": ("int32", "uint32"),
    "real floating": ("float16", "float32"),
    "complex floating": (),
    "numeric": ("int32", "uint32", "float16", "float32"),
}
_ALL = ("bool", "int32", "uint32", "float16", "float32")


def _has_f16(device: Backend) -> bool:
    return bool(device.capabilities().f16)


class Info:
    """What this namespace supports (the standard's inspection API); get one with
    ``xp.__array_namespace_info__()``."""

    def capabilities(self) -> dict[str, Any]:
        """``boolean indexing`` and ``data-dependent shapes`` (both supported: the size is downloaded
        first, see docs/arrays.md) and ``max dimensions``."""
        return {"boolean indexing": True, "data-dependent shapes": True, "max dimensions": 32}

    def default_device(self) -> Any:
        """The backend new arrays go to now (``device=`` absent): see ``vyre.use``."""
        return current_backend()

    def default_dtypes(self, *, device: Backend | None = None) -> dict[str, Any]:
        """float32, int32 (also the index dtype: no 64-bit integers), the same on every device; no complex
        entry (no complex dtypes)."""
        return {"real floating": D.float32, "integral": D.int32, "indexing": D.int32}

    def dtypes(self, *, device: Backend | None = None, kind: str | tuple[str, ...] | None = None) -> dict[str, Any]:
        """The supported dtypes by name (float16 only when ``device`` has shader-f16), optionally of
        ``kind`` (a kind name of the standard, or a tuple of them: the union)."""
        dev = current_backend(device)
        if kind is None:
            names: tuple[str, ...] = _ALL
        else:
            kinds = kind if isinstance(kind, tuple) else (kind,)
            for k in kinds:
                if k not in _KINDS:
                    raise InvalidArgumentError(f"dtypes: unknown kind {k!r}", fix=f"use one of {sorted(_KINDS)}")
            names = tuple(n for n in _ALL if any(n in _KINDS[k] for k in kinds))
        if "float16" in names and not _has_f16(dev):
            names = tuple(n for n in names if n != "float16")
        return {n: getattr(D, n) for n in names}

    def devices(self) -> list[Any]:
        """The backends available: the default one, and the one of the current ``vyre.use`` block when it
        differs (a ``vyre.ReferenceBackend()`` or ``vyre.WgpuBackend`` you create is a device too)."""
        out = [default_backend()]
        cur = current_backend()
        return out if cur is out[0] else [*out, cur]

    def __repr__(self) -> str:
        return "vyre.array.__array_namespace_info__()"


def __array_namespace_info__() -> Info:  # noqa: N807 - the standard's name
    """The inspection namespace of ``vyre.array`` (the standard's inspection API)."""
    return Info()


__all__ = ["__array_namespace_info__"]
