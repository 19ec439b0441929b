"""Everything vyre sends across a process boundary pickles (vyre.distributed, multiprocessing, Ray):
every error class of vyre.errors, Program and DispatchConfig."""

from __future__ import annotations

import inspect
import pickle

import numpy as np
import pytest

from vyre import DispatchConfig, ProgramBuilder, errors
from vyre.backends.reference import ReferenceBackend
from vyre.errors import ValidationIssue

from programs import scale_program


def _classes() -> list[type[errors.VyreError]]:
    return [obj for obj in vars(errors).values()
            if inspect.isclass(obj) and issubclass(obj, errors.VyreError) and obj.__module__ == errors.__name__]


def _instance(cls: type[errors.VyreError]) -> errors.VyreError:
    issue = ValidationIssue("wire", "body[0]", "x = 1", "bad thing", "do the other thing")
    if cls is errors.KernelError:
        return errors.KernelError.at("blur", "blur.py", 12, "a / b", "mixed types", "cast one side")
    if issubclass(cls, errors.ValidationError):
        return cls("prog", [issue, issue])
    return cls(f"{cls.__name__} happened", fix="try again")


def test_every_error_class_is_covered():
    names = {c.__name__ for c in _classes()}
    # a new class is picked up by _classes(); this guards against the scan finding nothing
    assert {"VyreError", "ValidationError", "KernelError", "DispatchError", "DistributedError"} <= names


@pytest.mark.parametrize("cls", _classes(), ids=lambda c: c.__name__)
def test_error_round_trips_through_pickle(cls):
    err = _instance(cls)
    for protocol in range(2, pickle.HIGHEST_PROTOCOL + 1):
        back = pickle.loads(pickle.dumps(err, protocol=protocol))
        assert type(back) is cls
        assert str(back) == str(err) and back.args == err.args
        assert back.code == err.code and back.message == err.message and back.fix == err.fix
        assert vars(back) == vars(err)  # issues, program_name, kernel/filename/line/segment...
        if isinstance(err, errors.ValidationError):
            assert back.rules == err.rules and back.issues == err.issues


def test_error_raised_in_a_program_round_trips():
    b = ProgramBuilder("bad", workgroup_size=64)
    x = b.buffer("x", "f32")
    y = b.buffer("y", "f32", access="write")
    i = b.global_index()
    y[i] = x[i]
    program = b.build()
    with pytest.raises(errors.DispatchError) as info:
        ReferenceBackend().dispatch(program, [np.zeros(4, np.int32)])  # wrong dtype
    back = pickle.loads(pickle.dumps(info.value))
    assert type(back) is type(info.value) and str(back) == str(info.value)



def test_program_pickles_with_same_fingerprint_and_behaviour():
    program = scale_program("scale")
    back = pickle.loads(pickle.dumps(program))
    assert back == program and back.fingerprint == program.fingerprint
    assert back.to_wire() == program.to_wire()
    xs = np.arange(100, dtype=np.float32)
    ref = ReferenceBackend()
    (a,) = ref.dispatch(program, [xs, np.float32(3)])
    (b,) = ref.dispatch(back, [xs, np.float32(3)])
    assert np.array_equal(a, b) and np.array_equal(a, 3 * xs)


@pytest.mark.parametrize("config", [DispatchConfig(), DispatchConfig(grid=(3, 2, 1), counts={"y": 7}, label="l")])
def test_dispatch_config_pickles(config):
    back = pickle.loads(pickle.dumps(config))
    assert back == config and type(back) is DispatchConfig
