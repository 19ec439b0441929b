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

#: Copies smaller than this run in the calling thread (chunked transfers copy 4 MiB chunks: in parallel too).
PARALLEL_MIN_BYTES = 2 << 20
#: At most this many threads copy one buffer (``VYRE_COPY_THREADS`` overrides it).
MAX_THREADS = 8
#: Bytes per thread at least: a thread's hand-off costs ~10-20 µs (a 4 MiB chunk still gets 8 threads).
PER_THREAD_MIN = 512 << 10

_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()


_n_threads: int | None = None


def _threads() -> int:
    """The copy threads (looked up once: os.cpu_count costs ~10 µs)."""
    global _n_threads
    if _n_threads is None:
        try:
            cap = int(os.environ.get("VYRE_COPY_THREADS", MAX_THREADS))
        except ValueError:
            cap = MAX_THREADS
        _n_threads = max(1, min(cap, os.cpu_count() or 1))
    return _n_threads


def _executor() -> ThreadPoolExecutor:
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(max_workers=_threads(), thread_name_prefix="vyre-copy")
        return _pool


def copy_bytes(dst: np.ndarray, src: np.ndarray) -> None:
    """``dst[:] = src`` for 1-D uint8 arrays of one size, in parallel chunks when large."""
    n = src.nbytes
    if n < PARALLEL_MIN_BYTES:  # the common small read: in this thread
        np.copyto(dst, src)
        return
    workers = min(_threads(), n // PER_THREAD_MIN)
    if workers <= 1:
        np.copyto(dst, src)
        return
    step = (-(-n // workers) + 63) // 64 * 64  # ceil(n / workers), rounded up to a cache line
    futures = [_executor().submit(np.copyto, dst[a:a + step], src[a:a + step]) for a in range(0, n, step)]
    for f in futures:
        f.result()


__all__ = ["copy_bytes", "PARALLEL_MIN_BYTES", "MAX_THREADS", "PER_THREAD_MIN"]
