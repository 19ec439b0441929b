"""Handles to device buffers that outlive one dispatch (resident buffers), shared by every backend."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class ResidentHandle:
    """A resident device buffer of ``nbytes`` bytes, valid on device generation ``generation``."""

    id: int
    nbytes: int
    generation: int
    owner: int = field(repr=False)


__all__ = ["ResidentHandle"]
