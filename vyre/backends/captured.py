"""Captured resident sequences: steps checked once, replayed many times.

``backend.capture_resident_sequence(steps, clears=())`` checks every step (programs validated and
planned, bind groups made) and returns a :class:`CapturedSequence`; ``run`` replays it as one
submission: ``writes`` (host bytes into handles), the ``before`` copies, the ``clears`` (handles
zeroed), the steps, the ``after`` copies, then the ``read`` ranges. The copies are whole-handle
``(source, destination)`` pairs of equal size: how a replay takes new inputs and hands out new
outputs without binding new buffers (vyre.compile's path, vyre/trace/).

A replay does not re-check the steps. It re-checks the handles they bind only when something was
freed since the last run (a version counter of the resident store), and then raises
:class:`StaleCaptureError` if any of them was freed (its buffer may belong to someone else now) or the
device changed (DeviceLostError). Never a replay over a buffer that is not the one captured.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

import numpy as np

from ..errors import DispatchError, StaleCaptureError
from .handles import ResidentHandle

#: A whole-handle copy of a replay: (source, destination), equal sizes.
HandleCopy = tuple[ResidentHandle, ResidentHandle]


@runtime_checkable
class CapturedSequence(Protocol):
    """A resident sequence checked once (see the module doc)."""

    @property
    def steps(self) -> int:
        """Number of captured steps."""
        ...

    def run(self, *, writes: Sequence[tuple[ResidentHandle, Any]] = (), before: Sequence[HandleCopy] = (),
            after: Sequence[HandleCopy] = (), read: Sequence[Any] | None = None) -> list[np.ndarray]:
        """Replay in one submission (see the module doc); returns the reads (``[]`` without: may not wait)."""
        ...


def check_copies(copies: Sequence[HandleCopy], what: str) -> None:
    """Every copy is two handles of one size (DispatchError otherwise)."""
    for k, c in enumerate(copies):
        if (type(c) is not tuple or len(c) != 2
                or not isinstance(c[0], ResidentHandle) or not isinstance(c[1], ResidentHandle)):
            raise DispatchError(f"{what} copy {k}: expected (source handle, destination handle), got {c!r:.200}")
        if c[0].nbytes != c[1].nbytes:
            raise DispatchError(f"{what} copy {k}: handle sizes differ ({c[0].nbytes} and {c[1].nbytes} bytes)",
                                fix="copy between handles of one size")


__all__ = ["CapturedSequence", "HandleCopy", "StaleCaptureError", "check_copies"]
