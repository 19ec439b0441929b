"""Static loop trip counts (vyre/ir/trips.py) and the validator's ``loop-iterations`` rule: the counts of
hand-built loop nests, what is not counted, and (on lavapipe) that the limit matches what llvmpipe does:
a program just under it runs whole, one over it is refused before any GPU work."""

from __future__ import annotations

import numpy as np
import pytest

from vyre.backends.config import DispatchConfig
from vyre.errors import ValidationError
from vyre.ir.builder import ProgramBuilder
from vyre.ir.trips import UNROLLED, static_loop_trips
from vyre.ir.validate import check

CAP = {"max-loop-iterations": 65535}


def nest(*counts: int, brk: bool = False, dynamic: bool = False):
    """Loops nested ``counts`` deep (outermost first) adding 1 to a counter; ``y[i]`` = the total."""
    b = ProgramBuilder("nest", 64)
    y = b.buffer("y", "u32", access="write")
    i = b.global_index()
    acc = b.var("u32", i * 0, name="acc")

    def level(k: int) -> None:
        if k == len(counts):
            acc.set(acc + 1)
            return
        end = y.len() * 0 + counts[k] if dynamic and k == 0 else counts[k]
        with b.for_range(0, end, name=f"r{k}"):
            level(k + 1)
            if brk and k == len(counts) - 1:
                with b.if_(acc > 1 << 30):
                    b.break_()

    level(0)
    y[i] = acc
    return b.build()


@pytest.mark.parametrize("counts, want", [
    ((10,), 0),  # unrolled by Mesa: not counted
    ((UNROLLED + 1,), UNROLLED + 1),
    ((1000,), 1000),
    ((1000, 4), 1000),  # the inner loop is unrolled; the outer one counts its own trips
    ((1000, 100), 1000 * 100 + 1000),
    ((100, 100, 10), 100 * 100 + 100),
])
def test_counts(counts, want):
    assert static_loop_trips(nest(*counts)).trips == want


def test_sequential_loops_and_both_branches_add_up():
    b = ProgramBuilder("seq", 64)
    y = b.buffer("y", "u32", access="write")
    i = b.global_index()
    acc = b.var("u32", i * 0, name="acc")
    with b.for_range(0, 40000, name="a"):
        acc.set(acc + 1)
    with b.if_(i < 3):
        with b.for_range(0, 20000, name="c"):
            acc.set(acc + 2)
    with b.else_():
        with b.for_range(0, 10000, name="d"):
            acc.set(acc + 3)
    y[i] = acc
    t = static_loop_trips(b.build())
    assert t.trips == 70000 and t.path == "body[1]"  # the loop contributing most
    assert [x.rule for x in check(b.build(), CAP)] == ["loop-iterations"]


def test_what_is_not_counted():
    assert static_loop_trips(nest(100000, brk=True)).trips == 0  # a break: the count is not fixed
    assert static_loop_trips(nest(100000, dynamic=True)).trips == 0  # a bound from len(): not fixed
    assert check(nest(100000), {}) == []  # no limit given: nothing checked


def test_the_rule_names_the_loop_and_a_fix():
    issues = check(nest(70000), CAP)
    assert len(issues) == 1
    issue = issues[0]
    assert issue.rule == "loop-iterations" and issue.path == "body[1]" and "70000" in issue.message
    assert "GPU adapter" in issue.fix
    assert check(nest(65535), CAP) == []


def count_to_len():
    """``y[i]`` = the length of ``x``, counted by a loop bounded by ``len(x)``: its count depends on the
    buffer sizes of a dispatch, so only the plan can check it."""
    b = ProgramBuilder("count_to_len", 64)
    x = b.buffer("x", "u32")
    y = b.buffer("y", "u32", access="write", count=64)
    i = b.global_index()
    acc = b.var("u32", i * 0, name="acc")
    with b.for_range(0, x.len(), name="r"):
        acc.set(acc + 1)
    with b.if_(i < y.len()):
        y[i] = acc
    return b.build()


def test_len_bounds_count_with_sizes():
    p = count_to_len()
    assert static_loop_trips(p).trips == 0
    assert static_loop_trips(p, {"x": 70000, "y": 4}).trips == 70000
    assert check(p, CAP) == []  # the validator cannot see it; the dispatch's plan does (below)


def test_lavapipe_limit_matches(gpu):
    """On llvmpipe: just under the limit runs whole (so the rule is not stricter than the driver); over it
    the program is refused before any GPU work (it would return 65535). Elsewhere nothing is refused and
    the long loop runs whole."""
    h = gpu.allocate_resident(64 * 4)
    if "llvmpipe" not in str(gpu.adapter_info.get("device", "")):
        try:
            gpu.dispatch_resident(nest(70000), [h], (1, 1, 1))
            assert int(gpu.download_resident_range(h, 0, 4).view(np.uint32)[0]) == 70000
        finally:
            gpu.free_resident(h)
        return
    try:
        for counts, total in (((65000,), 65000), ((2000, 32), 64000)):
            gpu.dispatch_resident(nest(*counts), [h], (1, 1, 1))
            assert int(gpu.download_resident_range(h, 0, 4).view(np.uint32)[0]) == total
        with pytest.raises(ValidationError, match="loop-iterations"):
            gpu.dispatch_resident(nest(70000), [h], (1, 1, 1))
        with pytest.raises(ValidationError, match="loop-iterations"):
            gpu.dispatch_resident(nest(2000, 40), [h], (1, 1, 1))
        # a len(x) bound: checked with each dispatch's sizes, on the dispatch and the resident paths
        p = count_to_len()
        one = DispatchConfig(grid=(1, 1, 1))
        (y,) = gpu.dispatch(p, [np.zeros(60000, np.uint32)], one)
        assert int(y.view(np.uint32)[0]) == 60000
        with pytest.raises(ValidationError, match="with these buffer sizes"):
            gpu.dispatch(p, [np.zeros(70000, np.uint32)], one)
        big = gpu.allocate_resident(70000 * 4)
        try:
            with pytest.raises(ValidationError, match="loop-iterations"):
                gpu.dispatch_resident(p, [big, h], (1, 1, 1))
        finally:
            gpu.free_resident(big)
    finally:
        gpu.free_resident(h)
