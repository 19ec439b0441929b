"""Issue 9: every bad argument to the builder is a vyre error (ValidationError with a located issue and
a fix), never a plain ValueError/TypeError/pydantic error; and unknown dtypes fail the same way
everywhere (``x.cast("float")`` like ``b.buffer("x", "float")``)."""

from __future__ import annotations

import numpy as np
import pytest

from vyre.errors import BuilderError, ValidationError
from vyre.ir.builder import ProgramBuilder

BAD = [None, "float", "f64", 1.5, -1, object(), [1], np.float64(2.0), True, "", {"a": 1}, 10**30,
       np.dtype(np.float64), float]


def mk():
    b = ProgramBuilder("p")
    x = b.buffer("x", "f32")
    u = b.buffer("u", "u32", "read_write")
    return b, x, u


CALLS = {
    "ProgramBuilder(name)": lambda v: ProgramBuilder(v),
    "ProgramBuilder(workgroup_size)": lambda v: ProgramBuilder("p", v),
    "ProgramBuilder(grid_from)": lambda v: ProgramBuilder("p", grid_from=v),
    "set_grid_from": lambda v: mk()[0].set_grid_from(v),
    "buffer name": lambda v: mk()[0].buffer(v, "f32"),
    "buffer dtype": lambda v: mk()[0].buffer("z", v),
    "buffer access": lambda v: mk()[0].buffer("z", "f32", v),
    "buffer count": lambda v: mk()[0].buffer("z", "f32", count=v),
    "buffer binding": lambda v: mk()[0].buffer("z", "f32", binding=v),
    "workgroup_array name": lambda v: mk()[0].workgroup_array(v, "f32", 4),
    "workgroup_array dtype": lambda v: mk()[0].workgroup_array("w", v, 4),
    "workgroup_array count": lambda v: mk()[0].workgroup_array("w", "f32", v),
    "global_id": lambda v: mk()[0].global_id(v),
    "local_id": lambda v: mk()[0].local_id(v),
    "workgroup_id": lambda v: mk()[0].workgroup_id(v),
    "num_workgroups": lambda v: mk()[0].num_workgroups(v),
    "lit value": lambda v: mk()[0].lit(v),
    "lit dtype": lambda v: mk()[0].lit(1, v),
    "select": lambda v: (lambda b, x, u: b.select(v, x[0], x[1]))(*mk()),
    "min": lambda v: (lambda b, x, u: b.min(x[0], v))(*mk()),
    "max": lambda v: (lambda b, x, u: b.max(v, x[0]))(*mk()),
    "fma": lambda v: (lambda b, x, u: b.fma(x[0], v, 1.0))(*mk()),
    "vec dtype": lambda v: mk()[0].vec(v, 1.0),
    "vec component": lambda v: mk()[0].vec("vec2<f32>", v, 1.0),
    "b.cast": lambda v: (lambda b, x, u: b.cast(x[0], v))(*mk()),
    "Val.cast": lambda v: (lambda b, x, u: x[0].cast(v))(*mk()),
    "Val.bitcast": lambda v: (lambda b, x, u: x[0].bitcast(v))(*mk()),
    "let value": lambda v: mk()[0].let(v),
    "let name": lambda v: (lambda b, x, u: b.let(x[0], v))(*mk()),
    "var dtype": lambda v: mk()[0].var(v),
    "var init": lambda v: mk()[0].var("f32", v),
    "var name": lambda v: mk()[0].var("f32", 0.0, v),
    "MutVar.set": lambda v: mk()[0].var("f32").set(v),
    "eval": lambda v: mk()[0].eval(v),
    "barrier": lambda v: mk()[0].barrier(v),
    "if_": lambda v: mk()[0].if_(v).__enter__(),
    "while_": lambda v: mk()[0].while_(v).__enter__(),
    "for_range start": lambda v: mk()[0].for_range(v, 4).__enter__(),
    "for_range step": lambda v: mk()[0].for_range(0, 4, v).__enter__(),
    "for_range name": lambda v: mk()[0].for_range(0, 4, 1, v).__enter__(),
    "index": lambda v: (lambda b, x, u: x[v])(*mk()),
    "store value": lambda v: (lambda b, x, u: u.__setitem__(0, v))(*mk()),
    "store index": lambda v: (lambda b, x, u: u.__setitem__(v, 1))(*mk()),
    "atomic value": lambda v: (lambda b, x, u: u.atomic_add(0, v))(*mk()),
    "atomic index": lambda v: (lambda b, x, u: u.atomic_add(v, 1))(*mk()),
    "operator": lambda v: (lambda b, x, u: x[0] + v)(*mk()),
    "vector lane": lambda v: mk()[0].vec("vec2<f32>", 1.0)[v],
}


@pytest.mark.parametrize("call", list(CALLS), ids=list(CALLS))
def test_bad_arguments_raise_vyre_errors(call):
    """Each public entry point with each bad value: it is accepted (a valid program may still fail
    validation at build) or raises ValidationError with a located issue and a fix, nothing else."""
    for value in BAD:
        try:
            CALLS[call](value)
        except ValidationError as exc:
            assert exc.issues and all(i.fix and i.path and i.message for i in exc.issues), str(exc)
        except Exception as exc:  # noqa: BLE001 - the point of the test
            pytest.fail(f"{call} with {value!r}: {type(exc).__name__} (not a vyre error): {exc}")


@pytest.mark.parametrize("dtype", ["float", "f128", "complex64", np.complex64, "vec5<f32>", 3, None])
def test_unknown_cast_dtype_is_the_same_error_as_an_unknown_buffer_dtype(dtype):
    b, x, _ = mk()
    with pytest.raises(ValidationError) as buf_err:
        b.buffer("z", dtype)
    for convert in (x[0].cast, x[0].bitcast, lambda d: b.cast(x[0], d)):
        with pytest.raises(ValidationError) as err:
            convert(dtype)
        assert type(err.value) is type(buf_err.value)
        (issue,) = err.value.issues
        assert issue.rule == "type" and issue.path == "dtype" and "unknown data type" in issue.message
        assert issue.message == buf_err.value.issues[0].message and "f32" in issue.fix


def test_floats_where_ints_are_needed_are_refused_not_truncated():
    b, x, u = mk()
    for bad in (lambda: b.for_range(0, 4, 1.5).__enter__(), lambda: b.buffer("z", "f32", count=2.0),
                lambda: b.buffer("z", "f32", binding=1.0), lambda: b.workgroup_array("w", "f32", 4.0),
                lambda: b.global_id(1.0), lambda: x[1.0], lambda: ProgramBuilder("p", (8.0, 8))):
        with pytest.raises(BuilderError, match="must be an int|must be an integer|tuple of 1 to 3 ints"):
            bad()


def test_misuse_is_a_builder_error_and_still_a_type_error():
    b, x, _ = mk()
    with pytest.raises(BuilderError, match="truth value") as err:
        bool(x[0] < 1)
    assert isinstance(err.value, TypeError) and err.value.issues[0].fix
    with pytest.raises(BuilderError, match="used as a value"):
        _ = x[0] + x
    with pytest.raises(BuilderError, match="else_"):
        with b.else_():
            pass
