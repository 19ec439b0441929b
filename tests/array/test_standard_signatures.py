"""Signatures the array API standard (2023.12 / 2024.12) fixes and array-api-tests' test_signatures checks:
parameter kinds (positional-only, positional-or-keyword, keyword-only) and names where they are not
positional-only, for the methods and functions that once differed; and Python ints in uint32's range."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

from vyre import array_api as xp
from vyre.errors import UnsupportedDTypeError

P, PK, K = inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY


def _kinds(fn) -> list[tuple[str, inspect._ParameterKind]]:
    return [(p.name, p.kind) for p in inspect.signature(fn).parameters.values()]


def test_expand_dims_axis_is_positional_or_keyword(xb):
    params = inspect.signature(xp.expand_dims).parameters
    assert params["axis"].kind is PK and params["axis"].default is inspect.Parameter.empty  # the standard's
    x = xp.asarray(np.arange(6, dtype=np.float32).reshape(2, 3))
    assert xp.expand_dims(x, 1).shape == xp.expand_dims(x, axis=1).shape == (2, 1, 3)
    with pytest.raises(TypeError):
        xp.expand_dims(x)  # axis is required


@pytest.mark.parametrize("name,arity", [("__int__", 0), ("__index__", 0), ("__float__", 0), ("__bool__", 0),
                                        ("__lshift__", 1), ("__rshift__", 1), ("__rlshift__", 1)])
def test_method_signatures(xb, name, arity):
    x = xp.asarray(np.int32(5))
    params = _kinds(getattr(x, name))  # bound: self is gone, as array-api-tests inspects it
    assert len(params) == arity, params
    assert all(kind is P for _, kind in params), params  # (self, other, /) and (self, /)
    if arity:
        assert int(getattr(x, name)(1)) == {"__lshift__": 10, "__rshift__": 2, "__rlshift__": 32}[name]
    else:
        assert getattr(x, name)() in (5, 5.0, True)


def test_python_ints_in_uint32_range(xb):
    a = xp.asarray([3_000_000_000, 0, 2**32 - 1], dtype=xp.uint32)
    assert a.dtype == xp.uint32
    np.testing.assert_array_equal(np.asarray(a), np.array([3_000_000_000, 0, 2**32 - 1], np.uint32))
    with pytest.raises(UnsupportedDTypeError, match="range"):
        xp.asarray([2**32], dtype=xp.uint32)
