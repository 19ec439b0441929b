"""What the :class:`~.executor.Executor` needs from a driver: the :class:`Driver` and :class:`Recorder`
protocols, met by :class:`~.native.NativeDriver` (wgpu-native's entry points) and
:class:`~.public.PublicDriver` (wgpu-py's public API), so the executor is typed against one interface
and either driver (or a test's stand-in) can sit behind it."""

from __future__ import annotations

from collections.abc import Iterable
from contextlib import AbstractContextManager
from typing import Any, Protocol

import numpy as np

from .types import CData, GPUBuffer, GPUCommandBuffer, GPUQuerySet
from .work import Dispatch


class Recorder(Protocol):
    """One command encoder: clears, copies, query resolves and compute passes, then ``finish``."""

    def clear(self, buffer: GPUBuffer, offset: int, size: int) -> None: ...

    def copy(self, src: GPUBuffer, src_offset: int, dst: GPUBuffer, dst_offset: int, size: int) -> None: ...

    def resolve(self, query_set: GPUQuerySet, count: int, dst: GPUBuffer, offset: int) -> None: ...

    def compute_pass(self, dispatches: Iterable[Dispatch], timer: tuple[GPUQuerySet, bool, bool] | None = None) -> int:
        """Record one compute pass of ``dispatches`` (timestamps at the start and/or end when ``timer`` is
        ``(query_set, at_start, at_end)``); how many were recorded."""
        ...

    def finish(self) -> GPUCommandBuffer | CData:
        """The recorded commands: a GPUCommandBuffer (public API) or a wgpu-native handle."""
        ...

    def release(self) -> None: ...


class Driver(Protocol):
    """Queue writes, encoding, submission and buffer maps on one device."""

    name: str
    spin_s: float  # seconds a wait spins before it blocks

    def checked(self) -> AbstractContextManager[Any]:
        """A block whose wgpu errors are raised (as wgpu's exceptions) when it ends."""
        ...

    def clean(self) -> bool:
        """Inside a ``checked()`` block: no wgpu error was reported in it so far (the executor submits in the
        block that encoded, one error scope per submission, and skips the submit after a failed encode)."""
        ...

    def write(self, buffer: GPUBuffer, offset: int, data: np.ndarray) -> None: ...

    def recorder(self, label: str) -> Recorder: ...

    def submit(self, commands: GPUCommandBuffer | CData) -> None: ...

    def discard(self, commands: GPUCommandBuffer | CData) -> None: ...

    def usable(self, buf: GPUBuffer) -> bool: ...

    def map(self, buf: GPUBuffer, mode: int, size: int) -> None: ...

    def view(self, buf: GPUBuffer, size: int) -> np.ndarray: ...

    def unmap(self, buf: GPUBuffer) -> None: ...

    def mapped_range(self, buf: GPUBuffer, offset: int, size: int) -> memoryview | None: ...

    def write_mapped(self, buf: GPUBuffer, data: np.ndarray, offset: int) -> None: ...

    def start_map(self, buf: GPUBuffer, size: int) -> Any:
        """Start mapping ``buf`` for reading; the pending map (each driver's own token) for the calls below."""
        ...

    def settled(self, pending: Any, timeout: float) -> bool: ...

    def finish_map(self, pending: Any) -> None: ...

    def abandon_map(self, pending: Any) -> None: ...

    def timestamp_period(self) -> float: ...


__all__ = ["Driver", "Recorder"]
