"""Running a test's work in several threads at once (tests of backends and compiled functions shared by threads)."""

from __future__ import annotations

import threading
from collections.abc import Callable


def run_in_threads(work: Callable[[int], object], n: int) -> None:
    """``work(0)`` ... ``work(n - 1)``, each in its own thread, all started before any is joined; fails (an
    AssertionError listing them) when any of them raised."""
    errors: list[BaseException] = []

    def run(k: int) -> None:
        try:
            work(k)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(k,)) for k in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
