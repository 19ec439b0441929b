"""One typed description of GPU work, the only thing the :class:`~.executor.Executor` runs.

Every way of running work (a dispatch, a batch, a timed or async dispatch, raw WGSL, resident
dispatches and sequences, resident uploads and downloads, op pipelines) builds a :class:`Work`
and hands it over. A Work names only live wgpu objects (buffers, pipelines, bind groups) and
host bytes: what they mean (programs, plans, handles) stays with the builder.

In one submission, in this order: the writes (``queue.write_buffer``, or one mapped staging
buffer and copies for large totals), the ``before`` copies, then per :class:`Pass` its clears and
one compute pass holding its dispatches, the ``after`` copies, then the copies of every
:class:`Read` into the readback buffer (and the timestamps of a timed Work); one submit; one
map; each read converted while mapped.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .types import GPUBindGroup, GPUBuffer, GPUComputePipeline


@dataclass(slots=True)
class Dispatch:
    """``set_pipeline`` + ``set_bind_group`` per group + ``dispatch_workgroups`` (skipped when ``total`` is 0)."""

    pipeline: GPUComputePipeline
    bind_groups: Sequence[GPUBindGroup]  # per group number
    workgroups: tuple[int, int, int]
    total: int = 1  # logical workgroups; 0: nothing to run


@dataclass(slots=True)
class Encoded:
    """The dispatches of a captured sequence (checked once), iterable like any list of dispatches; a driver
    that can works out its encode calls once and keeps them in ``calls`` (the native driver: a flat tuple
    of entry points and arguments, so replaying 50 dispatches is 50-odd C calls and no per-step checks)."""

    dispatches: tuple[Dispatch, ...]
    calls: Any = None

    def __iter__(self) -> Iterator[Dispatch]:
        return iter(self.dispatches)


@dataclass(slots=True)
class Pass:
    """Buffers to zero (``(buffer, offset, nbytes)``), then one compute pass over ``dispatches`` in order."""

    dispatches: Iterable[Dispatch]
    clears: Sequence[tuple[GPUBuffer, int, int]] = ()


@dataclass(slots=True)
class Write:
    """Host bytes (1-D uint8, a multiple of 4 bytes) for ``buffer`` at byte ``offset``."""

    buffer: GPUBuffer
    offset: int
    data: np.ndarray


@dataclass(slots=True)
class Read:
    """``nbytes`` of ``buffer`` from byte ``offset`` (any offset), read after the work.

    ``convert(view)`` turns the mapped bytes (a uint8 view, valid only during the call) into the
    result and must copy what it keeps; without it the bytes are copied into ``out`` (a caller's
    C-contiguous array of exactly ``nbytes`` bytes) or a new uint8 array."""

    buffer: GPUBuffer
    offset: int
    nbytes: int
    convert: Callable[[np.ndarray], Any] | None = None
    out: np.ndarray | None = None


#: A buffer-to-buffer copy recorded outside the passes: (source, source offset, destination, offset, nbytes).
Copy = tuple[GPUBuffer, int, GPUBuffer, int, int]


@dataclass(slots=True)
class Work:
    """One submission. ``program`` and ``wgsl`` only word error messages. ``before``/``after``: copies
    recorded before the first pass and after the last (a captured sequence's inputs and outputs)."""

    label: str
    writes: Sequence[Write] = ()
    passes: Sequence[Pass] = ()
    reads: Sequence[Read] = ()
    timed: bool = False  # timestamps around the passes (wall clock where the device has none)
    program: str | None = None
    wgsl: str | None = None
    dispatches: int = field(default=0)  # filled by the executor: dispatches recorded
    trap_at: int | None = None  # filled by the executor: where the loop trap's word sits in the readback
    before: Sequence[Copy] = ()
    after: Sequence[Copy] = ()


@dataclass(slots=True)
class Timed:
    """Results of a timed Work: ``gpu_ns`` from timestamps (``source == "timestamp"``) or the wall clock."""

    results: list[Any]  # what each Read's convert returned (the bytes without one)
    gpu_ns: int
    source: str
    wall_ns: int


__all__ = ["Dispatch", "Encoded", "Pass", "Write", "Read", "Work", "Timed", "Copy"]
