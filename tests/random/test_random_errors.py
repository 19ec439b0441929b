"""Bad arguments raise vyre's typed errors (ArgumentTypeError is a TypeError, InvalidArgumentError a
ValueError) before any GPU work: no submission, no program built."""

from __future__ import annotations

import numpy as np
import pytest

import vyre.array as va
import vyre.random as vr
from vyre.errors import ArgumentTypeError, InvalidArgumentError


@pytest.fixture
def key(ref_backend):
    return vr.key(1, device=ref_backend)


def _bad(ref_backend, key):
    p = va.asarray(np.array([0.5, 0.5], dtype=np.float32), device=ref_backend)
    k2 = va.asarray(np.zeros(3, np.uint32), device=ref_backend)
    kf = va.asarray(np.zeros(2, np.float32), device=ref_backend)
    return [
        (ArgumentTypeError, lambda: vr.key(1.5)),
        (ArgumentTypeError, lambda: vr.key(True)),
        (InvalidArgumentError, lambda: vr.key(2**64)),
        (InvalidArgumentError, lambda: vr.key(-(2**63) - 1)),
        (ArgumentTypeError, lambda: vr.uniform(7, (3,))),
        (ArgumentTypeError, lambda: vr.uniform(np.zeros(2, np.uint32), (3,))),
        (ArgumentTypeError, lambda: vr.normal(kf, (3,))),
        (InvalidArgumentError, lambda: vr.bits(k2, (3,))),
        (ArgumentTypeError, lambda: vr.split(key, 2.0)),
        (InvalidArgumentError, lambda: vr.split(key, -1)),
        (ArgumentTypeError, lambda: vr.fold_in(key, "a")),
        (InvalidArgumentError, lambda: vr.uniform(key, (-1, 3))),
        (ArgumentTypeError, lambda: vr.uniform(key, (2.0,))),
        (InvalidArgumentError, lambda: vr.uniform(key, (3,), minval=1.0, maxval=1.0)),
        (InvalidArgumentError, lambda: vr.uniform(key, (3,), minval=2.0, maxval=1.0)),
        (InvalidArgumentError, lambda: vr.uniform(key, (3,), minval=float("nan"))),
        (InvalidArgumentError, lambda: vr.uniform(key, (3,), minval=-3e38, maxval=3e38)),
        (ArgumentTypeError, lambda: vr.uniform(key, (3,), dtype=va.int32)),
        (InvalidArgumentError, lambda: vr.normal(key, (3,), stddev=-1.0)),
        (InvalidArgumentError, lambda: vr.randint(key, (3,), 5, 5)),
        (InvalidArgumentError, lambda: vr.randint(key, (3,), -1, 5, dtype=va.uint32)),
        (InvalidArgumentError, lambda: vr.randint(key, (3,), 0, 2**31 + 1)),
        (ArgumentTypeError, lambda: vr.randint(key, (3,), 0.0, 5)),
        (ArgumentTypeError, lambda: vr.randint(key, (3,), 0, 5, dtype=va.float32)),
        (InvalidArgumentError, lambda: vr.bernoulli(key, 1.5, (3,))),
        (InvalidArgumentError, lambda: vr.bernoulli(key, -0.1, (3,))),
        (ArgumentTypeError, lambda: vr.bernoulli(key, "x", (3,))),
        (InvalidArgumentError, lambda: vr.permutation(key, -3)),
        (ArgumentTypeError, lambda: vr.permutation(key, 3.0)),
        (InvalidArgumentError, lambda: vr.permutation(key, va.asarray(1, device=ref_backend))),
        (InvalidArgumentError, lambda: vr.choice(key, 3, (4,), replace=False)),
        (InvalidArgumentError, lambda: vr.choice(key, 0, (1,))),
        (ArgumentTypeError, lambda: vr.choice(key, 3, (2,), p=p)),
    ]


def test_bad_arguments_raise_typed_errors_before_gpu_work(ref_backend, key):
    cases = _bad(ref_backend, key)
    va.reset_fusion_stats()
    for k, (err, call) in enumerate(cases):
        with pytest.raises(err):
            call()
        stats = va.fusion_stats()
        assert stats["submissions"] == 0 and stats["kernels_built"] == 0, k
    assert issubclass(ArgumentTypeError, TypeError) and issubclass(InvalidArgumentError, ValueError)
