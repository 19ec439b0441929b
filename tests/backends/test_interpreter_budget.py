"""The reference interpreter's loop budget (issue 27): an endless loop raises DispatchError within
seconds (wall time or trips, whichever is spent first), naming the program and the loop."""

from __future__ import annotations

import time

import numpy as np
import pytest

import vyre
from vyre import Out, ProgramBuilder, tid, u32
from vyre.backends.interpreter import DEFAULT_MAX_LOOP_SECONDS, stmt_path
from vyre.backends.reference import ReferenceBackend
from vyre.errors import DispatchError


def _forever() -> vyre.Program:
    b = ProgramBuilder("forever", workgroup_size=4)
    out = b.buffer("out", "u32", access="write", count=4)
    v = b.var("u32", 0)
    with b.if_(b.global_index() < 4):
        with b.while_(True):
            v.set(v + 1)
    out[b.global_index()] = v
    return b.build()


def test_default_budget_is_seconds() -> None:
    backend = ReferenceBackend()
    assert backend.max_loop_seconds == DEFAULT_MAX_LOOP_SECONDS == 10.0
    assert backend.max_loop_iterations == 10_000_000


def test_builder_while_true_raises_within_seconds() -> None:
    t0 = time.monotonic()
    with pytest.raises(DispatchError) as info:
        ReferenceBackend().dispatch(_forever())
    elapsed = time.monotonic() - t0
    assert elapsed < 10.0 + 20.0  # the default budget plus slack for a loaded machine, not 30 minutes
    err = info.value
    assert "'forever'" in err.message
    assert "the while loop at body[1].then[0] (while true {...})" in err.message
    assert "infinite loop" in err.message and "trips" in err.message
    assert err.fix is not None and "max_loop_seconds" in err.fix


def test_budget_is_configurable() -> None:
    t0 = time.monotonic()
    with pytest.raises(DispatchError, match=r"after 0\.\d s.*body\[1\]\.then\[0\]"):
        ReferenceBackend(max_loop_seconds=0.3).dispatch(_forever())
    assert time.monotonic() - t0 < 5.0
    with pytest.raises(DispatchError, match=r"body\[1\]\.then\[0\].*more than 100 iterations"):
        ReferenceBackend(max_loop_iterations=100, max_loop_seconds=None).dispatch(_forever())
    for bad in (0, -1.0):
        with pytest.raises(ValueError, match="max_loop_seconds"):
            ReferenceBackend(max_loop_seconds=bad)


@vyre.kernel
def spin(out: Out[u32]):
    i = tid()
    j: u32 = 0
    while True:
        j += 1
    out[i] = j


def test_kernel_while_true_raises() -> None:
    backend = ReferenceBackend(max_loop_seconds=0.5)
    t0 = time.monotonic()
    with pytest.raises(DispatchError) as info:
        spin[8](np.zeros(8, np.uint32), backend=backend)
    assert time.monotonic() - t0 < 5.0
    assert "program 'spin'" in info.value.message
    assert "the while loop at body[" in info.value.message and "infinite loop" in info.value.message


def test_nested_loops_name_the_endless_one() -> None:
    b = ProgramBuilder("nested", workgroup_size=1)
    out = b.buffer("out", "u32", access="write", count=1)
    v = b.var("u32", 0)
    with b.while_(True):
        with b.for_range(0, 3) as k:
            v.set(v + k)
    out[0] = v
    with pytest.raises(DispatchError) as info:
        ReferenceBackend(max_loop_seconds=0.3).dispatch(b.build())
    msg = info.value.message
    # the outer while loop has the most trips: it is named, whichever loop was checking the time; the inner
    # for loop is listed when it was running at the time
    assert "the while loop at body[1] (while true {...}) had run" in msg
    if "loops running" in msg:
        assert "(loops running: the for loop at body[1].body[0] (for " in msg


def test_long_loop_that_ends_still_completes() -> None:
    # 50,000 trips over a few lanes take under a second here (more on a loaded 2-core CI machine): inside
    # the default budget
    b = ProgramBuilder("long", workgroup_size=4)
    out = b.buffer("out", "u32", access="write", count=4)
    v = b.var("u32", 0)
    with b.while_(v < 50_000):
        v.set(v + 1)
    out[b.global_index()] = v
    (got,) = ReferenceBackend().dispatch(b.build())
    np.testing.assert_array_equal(got, np.full(4, 50_000, np.uint32))


def test_budget_covers_compacted_lanes() -> None:
    # a divergent loop over many lanes continues on a compacted copy: the budget still holds there
    n = 4096
    b = ProgramBuilder("divergent", workgroup_size=64)
    out = b.buffer("out", "u32", access="write", count=n)
    i = b.global_index()
    v = b.var("u32", 0)
    with b.while_((i != 7) | (v < 1_000_000_000)):
        v.set(v + 1)
        with b.if_((i != 7) & (v >= 3)):
            b.break_()
    out[i] = v
    with pytest.raises(DispatchError, match=r"while loop at body\[1\] .* had run \d+ trips"):
        ReferenceBackend(max_loop_seconds=0.5).dispatch(b.build())


def test_stmt_path_not_found() -> None:
    from vyre.ir.nodes import Break
    assert stmt_path(_forever(), Break()) == "?"
