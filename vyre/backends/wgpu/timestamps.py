"""GPU timing: a pair of timestamp queries around the compute pass(es) of one submission.

With the device feature ``timestamp-query`` the first pass writes a timestamp when it begins
and the last one when it ends; the encoder resolves both into a small buffer that is copied
out with the results. The raw values are ticks; the driver's ``timestamp_period()`` gives
nanoseconds per tick (1.0 on lavapipe and NVIDIA). Without the feature the executor measures
wall-clock time instead and says so in ``source``.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from .types import GPUDevice

FEATURE = "timestamp-query"


class TimedDispatch(NamedTuple):
    """Outputs of a timed dispatch and how long it took.

    ``gpu_ns`` is the GPU time between the start and the end of the compute pass(es) when
    ``source == "timestamp"``; when the adapter has no timestamp queries it is the
    wall-clock time from submit to results (``source == "wall-clock"``). ``wall_ns`` is
    always the wall-clock time.
    """

    outputs: list[Any]  # one host array per output
    gpu_ns: int
    source: str
    wall_ns: int

    @property
    def seconds(self) -> float:
        return self.gpu_ns / 1e9


class QueryPair:
    """A query set of two timestamps and the buffer they resolve into (16 bytes)."""

    nbytes = 16

    def __init__(self, device: GPUDevice) -> None:
        import wgpu  # why: lazy, importing vyre must not import wgpu

        self.query_set = device.create_query_set(label="vyre-timestamps", type="timestamp", count=2)
        self.resolved = device.create_buffer(label="vyre-timestamps", size=256,
                                             usage=wgpu.BufferUsage.QUERY_RESOLVE | wgpu.BufferUsage.COPY_SRC)


def elapsed_ns(raw: np.ndarray, period: float) -> int:
    """Nanoseconds between the two resolved timestamps (``raw``: their 16 bytes)."""
    begin, end = (int(v) for v in np.frombuffer(np.ascontiguousarray(raw).tobytes(), np.uint64, count=2))
    return max(0, round((end - begin) * period))


__all__ = ["TimedDispatch", "QueryPair", "elapsed_ns", "FEATURE"]
