"""Issue 9: no silent partial work from the grid.

* an explicit grid with a dimension of 0 is a DispatchError (it used to run nothing and hand the
  inputs back as outputs), on every dispatch path of both backends;
* without an explicit grid, the default grid is one invocation per element of ``grid_from`` when the
  program names one, else of the first writable buffer, and only where that cannot cover part of the
  work: a program reading a y/z grid built-in, or with a readable storage buffer larger than the first
  writable one, is a DispatchError naming the buffers and the fix, raised before any GPU work.
"""

from __future__ import annotations

import numpy as np
import pytest

from vyre.backends.config import DispatchConfig
from vyre.backends.schedule import BufferSpec, Pipeline, Step
from vyre.errors import DispatchError, ValidationError
from vyre.ir.builder import ProgramBuilder
from vyre.ir.program import Program
from vyre.ir.types import DataType
from vyre.lower import lower

U32 = np.uint32


@pytest.fixture(params=["reference", "gpu"])
def backend(request):
    """Each backend in turn: the reference interpreter, then the session's GPU backend."""
    return request.getfixturevalue(request.param)


def blur_rows(grid_from: str | None = None) -> Program:
    """A 2-D kernel (the reported blur): one invocation per (column, row), rows on global_id(1)."""
    b = ProgramBuilder("blur", (8, 8, 1), grid_from=grid_from)
    src = b.buffer("src", "u32")
    dst = b.buffer("dst", "u32", access="write")
    x, y = b.global_id(0), b.global_id(1)
    with b.if_((x < 32) & (y < src.len() / 32)):
        dst[y * 32 + x] = src[y * 32 + x] + 1
    return b.build()


def histogram(grid_from: str | None = None) -> Program:
    """The reported histogram: 1 input element per invocation, a 16-bin read_write output."""
    b = ProgramBuilder("hist", 64, grid_from=grid_from)
    x = b.buffer("x", "u32")
    hist = b.buffer("hist", "u32", access="read_write", count=16)
    i = b.global_index()
    with b.if_(i < x.len()):
        hist.atomic_add(x[i] % 16, 1, discard=True)
    return b.build()


def copy_program(workgroup_size=(64, 1, 1)) -> Program:
    b = ProgramBuilder("copy", workgroup_size)
    x = b.buffer("x", "u32")
    y = b.buffer("y", "u32", access="write")
    i = b.global_index()
    with b.if_(i < y.len()):
        y[i] = x[i] * 2
    return b.build()


# ------------------------------------------------------------------------------------------ grid = 0
@pytest.mark.parametrize("grid", [0, (0,), (0, 1, 1), (4, 0), (1, 1, 0), [2, 0, 3]])
def test_zero_grid_dimension_is_a_dispatch_error(grid):
    with pytest.raises(DispatchError, match="dimension of 0") as info:
        DispatchConfig(grid=grid)
    assert info.value.fix and ">= 1" in info.value.fix
    with pytest.raises(DispatchError, match="dimension of 0"):
        DispatchConfig.coerce(grid)


def test_zero_grid_on_every_path(backend):
    p = copy_program()
    x = np.arange(10, dtype=U32)
    with pytest.raises(DispatchError, match="dimension of 0"):
        backend.dispatch(p, [x], (0, 1, 1))
    try:  # a batch reports a bad job as its result (the GPU backend checks every job first)
        err = backend.dispatch_batch([(p, [x], 0)])[0]
    except DispatchError as exc:
        err = exc
    assert isinstance(err, DispatchError) and "dimension of 0" in str(err)
    with pytest.raises(DispatchError, match="dimension of 0"):
        backend.dispatch_compiled(backend.compile(p), [x], DispatchConfig(grid=(1, 0)))
    hx, hy = backend.allocate_resident(40), backend.allocate_resident(40)
    try:
        with pytest.raises(DispatchError, match="dimension of 0"):
            backend.dispatch_resident(p, [hx, hy], 0)
        with pytest.raises(DispatchError, match="dimension of 0"):
            backend.dispatch_resident_sequence([(p, [hx, hy]), (p, [hx, hy], (0, 2))], read=[hy])
    finally:
        backend.free_resident(hx)
        backend.free_resident(hy)
    pipe = Pipeline(name="copy", buffers={"x": BufferSpec(DataType.U32, 10), "y": BufferSpec(DataType.U32, 10)},
                    inputs=("x",), outputs=("y",), steps=(Step(p, ("x", "y"), (0, 1, 1)),))
    with pytest.raises(DispatchError, match="dimension of 0"):
        backend.run_pipeline(pipe, [x])


def test_zero_grid_async_and_timed(gpu):
    p = copy_program()
    x = np.arange(10, dtype=U32)
    with pytest.raises(DispatchError, match="dimension of 0"):
        gpu.dispatch_async(p, [x], 0)
    with pytest.raises(DispatchError, match="dimension of 0"):
        gpu.dispatch_timed(p, [x], (0, 1))


# ------------------------------------------------------------------------------- default grid rules
def test_multi_dimensional_builtin_needs_a_grid(backend):
    """The reported blur: workgroup (8, 8, 1) and global_id(1); the old default ran 1 workgroup row."""
    src = np.arange(32 * 512, dtype=U32)
    with pytest.raises(DispatchError, match=r"global_id\(1\)") as info:
        backend.dispatch(blur_rows(), [src])
    assert "grid=" in info.value.fix
    (dst,) = backend.dispatch(blur_rows(), [src], (4, 64))
    np.testing.assert_array_equal(dst, src + 1)


@pytest.mark.parametrize("builtin", ["global_id", "workgroup_id", "num_workgroups"])
@pytest.mark.parametrize("axis", [1, 2])
def test_every_grid_shaped_builtin_is_detected(reference, builtin, axis):
    b = ProgramBuilder("shaped", 4)
    y = b.buffer("y", "u32", access="write")
    i = b.global_index()
    with b.if_(i < y.len()):
        y[i] = getattr(b, builtin)(axis)
    with pytest.raises(DispatchError, match=rf"{builtin}\({axis}\)"):
        reference.dispatch(b.build(), [], DispatchConfig(counts={"y": 8}))


def test_two_dimensional_workgroup_with_linear_builtins_keeps_the_default(backend):
    """A workgroup size like (8, 8, 1) with only global_index / local ids is fine under the default."""
    x = np.arange(1000, dtype=U32)
    (y,) = backend.dispatch(copy_program((8, 8, 1)), [x])
    np.testing.assert_array_equal(y, x * 2)


def test_larger_input_than_output_needs_a_grid(backend):
    """The reported histogram: 16 bins, 1000 inputs; the old default counted 16 values."""
    x = np.arange(1000, dtype=U32)
    hist0 = np.zeros(16, U32)
    with pytest.raises(DispatchError, match=r"'hist', 16 elements.*'x' \(1000\)") as info:
        backend.dispatch(histogram(), [x, hist0])
    assert "grid_from" in info.value.fix and "grid=" in info.value.fix
    want = np.bincount(x % 16, minlength=16).astype(U32)
    (h,) = backend.dispatch(histogram(grid_from="x"), [x, hist0])
    np.testing.assert_array_equal(h, want)
    (h,) = backend.dispatch(histogram(), [x, hist0], -(-1000 // 64))
    np.testing.assert_array_equal(h, want)


def test_default_grid_rule_on_resident_paths(backend):
    x = np.arange(1000, dtype=U32)
    hx, hh = backend.allocate_resident(x.nbytes), backend.allocate_resident(64)
    try:
        backend.upload_resident_many([(hx, x), (hh, np.zeros(16, U32))])
        with pytest.raises(DispatchError, match="cannot tell whether the inputs or the outputs"):
            backend.dispatch_resident(histogram(), [hx, hh])
        with pytest.raises(DispatchError, match="cannot tell whether the inputs or the outputs"):
            backend.dispatch_resident_sequence([(histogram(), [hx, hh])], read=[hh])
        (h,) = backend.dispatch_resident_sequence([(histogram(grid_from="x"), [hx, hh])], read=[hh])
        np.testing.assert_array_equal(h.view(U32), np.bincount(x % 16, minlength=16))
    finally:
        backend.free_resident(hx)
        backend.free_resident(hh)


def test_default_grid_rule_on_op_pipelines(backend):
    p = histogram()
    pipe = Pipeline(name="h", buffers={"x": BufferSpec(DataType.U32, 1000), "hist": BufferSpec(DataType.U32, 16)},
                    inputs=("x", "hist"), outputs=("hist",), steps=(Step(p, ("x", "hist")),))
    with pytest.raises(DispatchError, match="cannot tell whether the inputs or the outputs"):
        backend.run_pipeline(pipe, [np.arange(1000, dtype=U32), np.zeros(16, U32)])


def test_grid_from_covers_its_buffer(backend):
    """grid_from='x': one invocation per element of x, whatever the workgroup size."""
    for n in (0, 1, 63, 64, 65, 1000):
        b = ProgramBuilder("mark", 64)
        x = b.buffer("x", "u32")
        seen = b.buffer("seen", "u32", access="read_write", count=1)
        b.set_grid_from(x)
        i = b.global_index()
        with b.if_(i < x.len()):
            seen.atomic_add(0, 1, discard=True)
        (s,) = backend.dispatch(b.build(), [np.zeros(n, U32), np.zeros(1, U32)])
        assert int(s[0]) == n


def test_smaller_or_uniform_inputs_keep_the_default(reference):
    """Inputs no larger than the first writable buffer, and uniform buffers of any size, are fine."""
    b = ProgramBuilder("scale", 64)
    x = b.buffer("x", "u32")
    k = b.buffer("k", "u32", access="uniform", count=64)
    y = b.buffer("y", "u32", access="write")
    i = b.global_index()
    with b.if_(i < y.len()):
        y[i] = x[i] * k[0]
    (y,) = reference.dispatch(b.build(), [np.arange(10, dtype=U32), np.full(64, 3, U32)])
    np.testing.assert_array_equal(y, np.arange(10) * 3)


# --------------------------------------------------------------------------------------- the IR field
def test_grid_from_is_validated():
    b = ProgramBuilder("bad", 64, grid_from="nope")
    b.buffer("x", "u32")
    b.buffer("k", "u32", access="uniform", count=1)
    with pytest.raises(ValidationError) as info:
        b.build()
    (issue,) = info.value.issues
    assert issue.rule == "grid-from" and issue.path == "grid_from" and "'x'" in issue.fix
    b.grid_from = "k"
    with pytest.raises(ValidationError, match="uniform buffer 'k'") as info:
        b.build()
    assert info.value.issues[0].rule == "grid-from"
    with pytest.raises(ValidationError, match="grid_from must be a str"):
        b.set_grid_from(3)  # type: ignore[arg-type]


def test_grid_from_is_part_of_identity_wire_and_text():
    a, b = histogram(), histogram(grid_from="x")
    assert a.fingerprint != b.fingerprint
    assert Program.from_wire(b.to_wire()) == b
    assert b'"grid_from":"x"' in b.to_wire() and b'"grid_from":null' in a.to_wire()
    assert "@grid_from(x)" in b.to_text() and "grid_from" not in a.to_text()
    assert lower(a).wgsl == lower(b).wgsl  # the WGSL does not depend on it


def test_empty_input_keeps_one_guarded_workgroup(backend):
    (y,) = backend.dispatch(copy_program(), [np.zeros(0, U32)])
    assert y.shape == (0,)
