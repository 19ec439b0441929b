"""The backend protocol every vyre backend implements."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import numpy as np

from ..ir.program import Program
from .config import DispatchConfig


@dataclass(frozen=True)
class Capabilities:
    """What a backend can do, asked with ``backend.capabilities()`` instead of probing for methods.

    ``resident``: resident buffers (allocate/upload/download/dispatch_resident and sequences);
    ``native_pipelines``: ``run_pipeline`` keeps intermediates on the device in one submission
    (else it runs step by step through ``dispatch``); ``timestamps``: timed dispatches report
    GPU time; ``f16`` / ``subgroups``: programs may use them; ``async_dispatch``: ``dispatch_async``
    overlaps with host work. Limits are the ones programs are validated against.
    """

    backend: str
    device: str
    resident: bool
    native_pipelines: bool
    timestamps: bool
    f16: bool
    subgroups: bool
    async_dispatch: bool
    max_storage_buffer_bytes: int
    max_workgroups_per_dimension: int
    max_workgroup_size: tuple[int, int, int]
    max_invocations_per_workgroup: int


@runtime_checkable
class Backend(Protocol):
    """Runs programs: numpy arrays in (one per input buffer), numpy arrays out (one per output)."""

    name: str

    def dispatch(self, program: Program, inputs, config: DispatchConfig | None = None) -> list[np.ndarray]:
        ...


__all__ = ["Backend", "Capabilities"]
