"""A tape records its own thread's calls only: another thread working on arrays at the same time neither
joins the tape nor suspends it."""

from __future__ import annotations

import threading

import numpy as np

import vyre
import vyre.array as xp
from vyre.autograd import GradientTape


def test_a_tape_records_only_its_own_thread():
    be = vyre.ReferenceBackend()
    x = xp.asarray(np.arange(4, dtype=np.float32), device=be)
    stop = threading.Event()
    errors: list[BaseException] = []

    def busy():
        while not stop.is_set():
            try:
                (x * 3 + 1).evaluate()
            except BaseException as exc:  # noqa: BLE001 - reported below
                errors.append(exc)

    t = threading.Thread(target=busy)
    t.start()
    try:
        for _ in range(30):
            with GradientTape(persistent=True) as tape:
                y = xp.sum(x * x)
            assert len(tape._nodes) == 2  # multiply and sum: nothing of the other thread
            np.testing.assert_array_equal(np.asarray(tape.gradient(y, x)), 2 * np.arange(4, dtype=np.float32))
            tape.release()
    finally:
        stop.set()
        t.join()
    assert not errors
