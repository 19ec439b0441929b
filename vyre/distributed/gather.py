"""Waiting for worker calls: one deadline, re-runs after worker death, every answer or a typed error.

Each unit of work is submitted with ``submit(unit, worker, full)`` (``full``: send every program's
wire bytes, not only those the worker is not known to hold) and answered ``(status, payload)``:
``"ok"`` (handed to ``on_ok``), ``"missing"`` (the worker lost its programs in a restart: send them
again), ``"lost"`` (the device was lost twice: raise the DeviceLostError), ``"error"`` (the work raised a
vyre error, whose message names the worker: raise it as it is). A worker that died past
Ray's own restarts and retries has its unit run again on the next worker in order.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from ..errors import DistributedError, WorkerTimeoutError
from ._ray import as_vyre_error, is_actor_death, ray


class Pending:
    """Calls in flight: ref -> (unit, worker, attempts)."""

    def __init__(self, submit: Callable[[Any, int, bool], Any], workers: int) -> None:
        self.submit = submit
        self.workers = workers
        self.calls: dict[Any, tuple[Any, int, int]] = {}

    def start(self, unit: Any, worker: int, attempts: int = 0, full: bool = False) -> None:
        self.calls[self.submit(unit, worker, full)] = (unit, worker, attempts)

    def cancel(self) -> None:
        r = ray()
        for ref in self.calls:
            try:
                r.cancel(ref)
            except Exception:  # noqa: BLE001, S110 - best effort: the worker may already be gone
                pass
        self.calls.clear()


def gather(pending: Pending, on_ok: Callable[[Any, Any], None], timeout_s: float, what: str) -> None:
    """Wait for every call of ``pending`` (re-running as described above) within ``timeout_s`` in all."""
    r = ray()
    deadline = time.monotonic() + timeout_s
    limit = 2 * pending.workers + 2  # re-runs per unit before giving up
    while pending.calls:
        remaining = deadline - time.monotonic()
        ready = r.wait(list(pending.calls), num_returns=1, timeout=max(remaining, 0.0))[0] if remaining > 0 else []
        if not ready:
            n = len(pending.calls)
            pending.cancel()
            raise WorkerTimeoutError(
                f"{what}: {n} worker call(s) unanswered after {timeout_s:g} s",
                fix="raise timeout_s (Pool/local_pool, or the call's timeout_s) or split the work; "
                    "pool.stats() shows whether the workers are alive")
        ref = ready[0]
        unit, worker, attempts = pending.calls.pop(ref)
        try:
            status, payload = r.get(ref, timeout=max(deadline - time.monotonic(), 0.001))
        except Exception as exc:  # noqa: BLE001 - every Ray failure becomes a re-run or a vyre error
            if is_actor_death(exc) and attempts < limit:
                pending.start(unit, (worker + 1) % pending.workers, attempts + 1, full=True)
                continue
            pending.cancel()
            err = as_vyre_error(exc, what)
            if is_actor_death(exc):
                err = DistributedError(f"{what}: every worker tried died ({type(exc).__name__})",
                                       fix="check the nodes (`ray status`) and pool.stats(); start a new pool")
            raise err from None
        if status == "ok":
            on_ok(unit, payload)
        elif status == "missing" and attempts < limit:
            pending.start(unit, worker, attempts + 1, full=True)
        elif status in ("lost", "error"):  # a second device loss, or the vyre error the work raised
            pending.cancel()
            raise payload
        else:
            pending.cancel()
            raise DistributedError(f"{what}: a worker kept answering {status!r}",
                                   fix="a bug in vyre: please report it")
