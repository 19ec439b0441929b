"""The loop trap (vyre/lower/trap.py, vyre/backends/wgpu/loop_trap.py): on an adapter that ends loops after a
cap without an error (llvmpipe: 65,535 loop tests per invocation in all), a loop bounded by data that runs
into the cap is a DispatchError naming the program and the loop, never a wrong result; everything under the
cap is exact. On other adapters nothing is emitted and every count is exact."""

from __future__ import annotations

import re

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vyre.errors import DispatchError, ValidationError
from vyre.frontend import kernel
from vyre.frontend.intrinsics import tid
from vyre.frontend.types import In, Out, f32
from vyre.ir.builder import ProgramBuilder
from vyre.lower import lower

CAP = 65535


def capped(gpu) -> bool:
    return gpu._dev.loop_cap is not None


def loops_program(kinds: tuple[str, ...], name: str = "loops"):
    """out[0] = total iterations of loops run in sequence, each bounded by data: ``n[k]`` (a uniform
    parameter), ``len(x)`` with x of ``n[k]`` elements (kind "len", first loop only), or a while loop."""
    b = ProgramBuilder(name, 1)
    n = b.buffer("n", "u32", access="uniform", count=4)
    x = b.buffer("x", "u32")
    out = b.buffer("out", "u32", access="write", count=1)
    acc = b.var("u32", 0)
    for k, kind in enumerate(kinds):
        if kind == "len":
            with b.for_range(0, x.len()) as j:
                acc.set(acc + 1 + x[j] * 0)
        elif kind == "for":
            with b.for_range(0, n[k]):
                acc.set(acc + 1)
        else:
            j = b.var("u32", 0)
            with b.while_(j < n[k]):
                acc.set(acc + 1)
                j.set(j + 1)
    out[0] = acc
    return b.build()


def run(gpu, kinds, counts):
    n = np.zeros(4, np.uint32)
    n[: len(counts)] = counts
    xlen = counts[0] if kinds[0] == "len" else 1
    (out,) = gpu.dispatch(loops_program(tuple(kinds)), [n, np.zeros(xlen, np.uint32)], 1)
    return int(out[0])


def llvmpipe_runs_whole(counts) -> bool:
    """Whether llvmpipe runs loops of these trip counts in sequence whole: it tests a loop's condition
    n + 1 times and forces the 65,536th test of an invocation false (measured on lavapipe 22.3)."""
    tests = 0
    for c in counts:
        if c and tests + c > CAP:  # an iteration would be the 65,536th test or later
            return False
        tests += c + 1
    return True


@pytest.mark.parametrize("kinds,counts,whole", [
    (("for",), (65_535,), True),  # exactly the cap: llvmpipe runs it whole
    (("for",), (65_536,), False),
    (("len",), (100_000,), False),  # the issue's kernel: for j in range(len(x))
    (("while",), (65_534,), True),
    (("while",), (70_000,), False),
    (("for", "for"), (65_000, 534), True),  # loop 1's final test counts: 534 more, not 535
    (("for", "for"), (65_000, 535), False),
    (("for", "for"), (65_535, 0), True),
    (("for", "while"), (60_000, 6_000), False),
])
def test_data_bounded_loops_are_exact_or_trapped(gpu, kinds, counts, whole):
    if capped(gpu) and not whole:
        # a len(x) bound is counted when the dispatch is planned (ValidationError before any GPU work); the
        # others are caught by the trap at run time
        with pytest.raises((DispatchError, ValidationError), match=r"65535") as info:
            run(gpu, kinds, counts)
        assert "GPU adapter" in str(info.value)
        if kinds[0] != "len":
            assert re.search(r"program 'loops': loop \d .*limit of 65535 loop iterations", str(info.value))
    else:
        assert run(gpu, kinds, counts) == sum(counts)


@kernel
def total(x: In[f32], y: Out[f32]):
    acc = 0.0
    for j in range(len(x)):
        acc += x[j]
    y[tid()] = acc


def test_the_issue_kernel_is_trapped_not_cut(gpu):
    # the translator moves the bound into a let: only the run-time trap sees it (it returned [65535.])
    for n, whole in ((65_000, True), (100_000, False)):
        if capped(gpu) and not whole:
            with pytest.raises(DispatchError, match=r"program 'total.*loop 1 .*65535"):
                total[1](np.ones(n, np.float32), np.zeros(1, np.float32), backend=gpu)
        else:
            (y,) = total[1](np.ones(n, np.float32), np.zeros(1, np.float32), backend=gpu)
            assert y[0] == n


def test_the_trap_names_the_loop(gpu):
    if not capped(gpu):
        assert run(gpu, ("for", "while"), (10, 70_000)) == 70_010
        return
    with pytest.raises(DispatchError, match=r"loop 2 \(`while \(v\d+ < n\[1u\]\) \{\.\.\.\}`\)"):
        run(gpu, ("for", "while"), (10, 70_000))


def test_resident_work_is_reported_at_the_next_download_and_the_trap_clears(gpu):
    prog = loops_program(("for",))
    n = gpu.allocate_resident(16)
    x = gpu.allocate_resident(4)
    out = gpu.allocate_resident(4)
    try:
        gpu.upload_resident(n, np.array([100_000, 0, 0, 0], np.uint32))
        gpu.dispatch_resident(prog, [n, x, out], 1)  # returns without reading anything
        if capped(gpu):
            with pytest.raises(DispatchError, match="resident work since the last download"):
                gpu.download_resident(out)
        else:
            assert gpu.download_resident(out).view(np.uint32)[0] == 100_000
        gpu.upload_resident(n, np.array([1_000, 0, 0, 0], np.uint32))
        gpu.dispatch_resident(prog, [n, x, out], 1)
        assert gpu.download_resident(out).view(np.uint32)[0] == 1_000  # read once, then clear
    finally:
        for h in (n, x, out):
            gpu.free_resident(h)


def test_other_adapters_get_no_trap():
    prog = loops_program(("for", "while"))
    plain = lower(prog).wgsl
    assert "_vyre_trap" not in plain and "_vyre_trips" not in plain
    trapped = lower(prog, loop_cap=CAP)
    assert "_vyre_trap" in trapped.wgsl and len(trapped.trap_loops) == 2
    assert any(b.name == "_vyre_trap" for b in trapped.bindings)


def test_small_literal_loops_are_not_instrumented():
    b = ProgramBuilder("small", 1)
    out = b.buffer("out", "u32", access="write", count=1)
    acc = b.var("u32", 0)
    with b.for_range(0, 32):  # Mesa unrolls it: llvmpipe never counts it
        acc.set(acc + 1)
    out[0] = acc
    assert lower(b.build(), loop_cap=CAP).trap_loops == ()


@settings(max_examples=25, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(kinds=st.lists(st.sampled_from(["for", "while"]), min_size=1, max_size=3).map(tuple),
       counts=st.lists(st.integers(0, 200_000), min_size=3, max_size=3),
       first_len=st.booleans())
def test_random_data_bounded_loops_give_the_exact_answer_or_the_trap(gpu, kinds, counts, first_len):
    kinds = (("len",) + kinds[1:]) if first_len else kinds
    counts = tuple(counts[: len(kinds)])
    try:
        got = run(gpu, kinds, counts)
    except (DispatchError, ValidationError) as exc:
        assert capped(gpu), f"no adapter but llvmpipe cuts loops: {exc}"
        assert "loop iterations per invocation" in exc.message or "loop-iterations" in str(exc)
        assert not llvmpipe_runs_whole(counts), f"trapped although llvmpipe runs {counts} whole"
        return
    assert got == sum(counts)  # never anything else
    if capped(gpu):
        assert llvmpipe_runs_whole(counts)
