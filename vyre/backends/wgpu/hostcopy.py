"""Host-side copies between numpy arrays and mapped staging memory, split across threads.

One thread copies at most ~10 GB/s (less into write-combined mapped memory, and far less
into fresh host memory in a VM, where every first touch of a page faults). numpy releases
the GIL while it copies plain bytes, so large copies are cut into chunks that a small
thread pool copies at once.
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np

#: Copies smaller than this run in the calling thread.
PARALLEL_MIN_BYTES = 8 << 20
#: At most this many threads copy one buffer.
MAX_THREADS = 8

_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()


def _threads() -> int:
    return max(1, min(MAX_THREADS, os.cpu_count() or 1))


def _executor() -> ThreadPoolExecutor:
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(max_workers=_threads(), thread_name_prefix="vyre-copy")
        return _pool


def copy_bytes(dst: np.ndarray, src: np.ndarray) -> None:
    """``dst[:] = src`` for 1-D uint8 arrays of one size, in parallel chunks when large."""
    n = src.nbytes
    if n < PARALLEL_MIN_BYTES:  # the common small read: no thread-count query (os.cpu_count costs ~10 µs)
        np.copyto(dst, src)
        return
    workers = _threads()
    if workers == 1:
        np.copyto(dst, src)
        return
    step = (-(-n // workers) + 63) // 64 * 64  # ceil(n / workers), rounded up to a cache line
    futures = [_executor().submit(np.copyto, dst[a:a + step], src[a:a + step]) for a in range(0, n, step)]
    for f in futures:
        f.result()


__all__ = ["copy_bytes", "PARALLEL_MIN_BYTES", "MAX_THREADS"]
