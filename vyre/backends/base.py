"""The backend protocol every vyre backend implements."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import numpy as np

from ..ir.program import Program
from .config import DispatchConfig


@runtime_checkable
class Backend(Protocol):
    """Runs programs: numpy arrays in (one per input buffer), numpy arrays out (one per output)."""

    name: str

    def dispatch(self, program: Program, inputs, config: DispatchConfig | None = None) -> list[np.ndarray]:
        ...


__all__ = ["Backend"]
