"""The standard's inspection namespace (2024.12): ``__array_namespace_info__()`` returns an :class:`Info`
with ``capabilities``, ``default_device``, ``default_dtypes``, ``dtypes`` and ``devices``.

A device is a vyre backend (see _device). ``float16`` is not listed (it is no dtype name of the
standard; ``vyre.array.float16`` arrays still work where the device has ``shader-f16``); ``float64`` is
listed only with ``shader-f64`` and ``int64``/``uint64`` only with ``shader-int64`` (array-API clients such
as scikit-learn check ``dtypes()`` and fall back to float32). ``complex64`` is listed on every device (the
default of ``"complex floating"``), ``complex128`` with ``shader-f64``. "max dimensions" is 32: the
elementwise broadcasting and host transfers go through numpy, whose broadcasting takes at most 32 dimensions.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..errors import InvalidArgumentError
from . import _dtypes as D
from ._device import current_backend, default_backend, supports_dtype

if TYPE_CHECKING:
    from ..backends.base import Backend

_KINDS: dict[str, tuple[str, ...]] = {
    "bool": ("bool",),
    "signed integer": ("int32", "int64"),
    "unsigned integer": ("uint32", "uint64"),
    "integral": ("int32", "int64", "uint32", "uint64"),
    "real floating": ("float32", "float64"),
    "complex floating": ("complex64", "complex128"),
    "numeric": ("int32", "int64", "uint32", "uint64", "float32", "float64", "complex64", "complex128"),
}
# the standard's dtype names only: float16 is not one (clients iterate these names over their own namespace)
_ALL = ("bool", "int32", "int64", "uint32", "uint64", "float32", "float64", "complex64", "complex128")


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
        """float32, int32 (also the index dtype), the same on every device, also one with float64/int64 (a
        Python float stays float32 there); complex64 for "complex floating"."""
        return {"real floating": D.float32, "complex floating": D.complex64, "integral": D.int32,
                "indexing": D.int32}

    def dtypes(self, *, device: Backend | None = None, kind: str | tuple[str, ...] | None = None) -> dict[str, Any]:
        """The standard's dtypes ``device`` holds by name (float64 only with shader-f64, int64 and uint64
        only with shader-int64; float16, not a standard name, is never listed), optionally of
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
        return {n: getattr(D, n) for n in names if supports_dtype(dev, getattr(D, n))}

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
