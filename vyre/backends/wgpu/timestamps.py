"""GPU timing: a pair of timestamp queries around the compute pass(es) of one submission.

With the device feature ``timestamp-query`` the pass writes a timestamp when it begins and
one when it ends (``timestampWrites``); the encoder resolves both into a small buffer that
is copied out with the results. The raw values are ticks; wgpu-native's
``wgpuQueueGetTimestampPeriod`` gives nanoseconds per tick (1.0 on lavapipe and NVIDIA).
Without the feature the caller measures wall-clock time instead and says so in ``source``.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

FEATURE = "timestamp-query"


class TimedDispatch(NamedTuple):
    """Outputs of a timed dispatch and how long it took.

    ``gpu_ns`` is the GPU time between the start and the end of the compute pass(es) when
    ``source == "timestamp"``; when the adapter has no timestamp queries it is the
    wall-clock time from submit to results (``source == "wall-clock"``). ``wall_ns`` is
    always the wall-clock time.
    """

    outputs: list
    gpu_ns: int
    source: str
    wall_ns: int

    @property
    def seconds(self) -> float:
        return self.gpu_ns / 1e9


def timestamp_period(queue) -> float:
    """Nanoseconds per timestamp tick (1.0 when wgpu-native cannot tell)."""
    try:
        from wgpu.backends.wgpu_native._ffi import lib

        period = float(lib.wgpuQueueGetTimestampPeriod(queue._internal))
    except Exception:
        return 1.0
    return period if period > 0 else 1.0


class QueryPair:
    """A query set of two timestamps and the buffer they resolve into (16 bytes)."""

    nbytes = 16

    def __init__(self, device):
        import wgpu

        self.query_set = device.create_query_set(label="vyre-timestamps", type="timestamp", count=2)
        self.resolved = device.create_buffer(label="vyre-timestamps", size=256,
                                             usage=wgpu.BufferUsage.QUERY_RESOLVE | wgpu.BufferUsage.COPY_SRC)

    def writes(self, first: bool, last: bool) -> dict:
        """``timestamp_writes`` of one pass: begin on the first pass, end on the last."""
        tw: dict = {"query_set": self.query_set}
        if first:
            tw["beginning_of_pass_write_index"] = 0
        if last:
            tw["end_of_pass_write_index"] = 1
        return tw

    def resolve(self, encoder) -> tuple:
        """Record the resolve; returns the ``(buffer, offset, nbytes)`` range to read back."""
        encoder.resolve_query_set(self.query_set, 0, 2, self.resolved, 0)
        return (self.resolved, 0, self.nbytes)


def elapsed_ns(raw: np.ndarray, period: float) -> int:
    """Nanoseconds between the two resolved timestamps (``raw``: their 16 bytes)."""
    begin, end = (int(v) for v in np.frombuffer(np.ascontiguousarray(raw).tobytes(), np.uint64, count=2))
    return max(0, round((end - begin) * period))


__all__ = ["TimedDispatch", "QueryPair", "timestamp_period", "elapsed_ns", "FEATURE"]
