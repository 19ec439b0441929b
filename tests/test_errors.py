"""Every vyre error survives pickling (e.g. across process pools) with its fields."""

from __future__ import annotations

import inspect
import pickle

import pytest

import vyre.errors as errors

ERROR_CLASSES = [c for _, c in inspect.getmembers(errors, inspect.isclass) if issubclass(c, errors.VyreError)]


def _make(cls):
    if issubclass(cls, errors.ValidationError):
        issue = errors.ValidationIssue("rule-x", "body[0]", "store(o, 0, 1)", "bad", "do better")
        return cls("prog", [issue])
    return cls("something failed", fix="do this instead")


def test_every_error_class_is_listed():
    assert len(ERROR_CLASSES) >= 9


@pytest.mark.parametrize("cls", ERROR_CLASSES, ids=lambda c: c.__name__)
def test_error_pickle_round_trip(cls):
    err = _make(cls)
    back = pickle.loads(pickle.dumps(err))
    assert type(back) is cls
    assert str(back) == str(err)
    assert back.message == err.message
    assert back.fix == err.fix
    assert back.code == err.code
    assert back.args == err.args
    if issubclass(cls, errors.ValidationError):
        assert back.issues == err.issues
        assert back.program_name == "prog"
        assert back.rules == ["rule-x"]
