"""Data-parallel training on the two-worker pool (one adapter, lavapipe under CI): the replicas stay
identical (bit for bit) and follow single-process training on the whole batch (tolerance rtol 1e-5 on the
losses, atol 1e-5 on the parameters: the gradient of a mean over shards is summed in another order)."""

from __future__ import annotations

import sys

import numpy as np
import pytest

import vyre
import vyre.array as xp
from vyre.errors import InvalidArgumentError

RNG = np.random.default_rng(3)
X = RNG.standard_normal((30, 8)).astype(np.float32)
Y = RNG.integers(0, 3, 30).astype(np.int32)


def build():
    import vyre.nn as nn
    import vyre.nn.functional as F
    import vyre.optim as optim
    import vyre.random as vr

    model = nn.Sequential(nn.Linear(8, 16, key=vr.key(1)), nn.ReLU(), nn.Linear(16, 3, key=vr.key(2)))

    def loss_fn(values, x, y):
        return F.cross_entropy(nn.functional_call(model, values, x), y)

    return model, loss_fn, optim.SGD(model, lr=0.5, momentum=0.9)


def test_data_parallel_matches_one_process(ray_pool, gpu):
    import ray.cloudpickle

    from vyre.autograd import value_and_grad
    from vyre.distributed import DataParallel

    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])  # the workers cannot import this module
    dp = DataParallel(ray_pool, build)
    with vyre.use(gpu):
        model, loss_fn, opt = build()
        vg = value_and_grad(loss_fn)
        for _ in range(4):
            want, grads = vg(model.parameter_values(), xp.asarray(X), xp.asarray(Y))
            opt.step(grads)
            got = dp.step(X, Y)
            np.testing.assert_allclose(got, float(want), rtol=1e-5)
        single = {k: np.asarray(v) for k, v in model.parameter_values().items()}
    replicas = ray_pool.call_each(lambda be, st: {k: np.asarray(v) for k, v in st["dp"][0].parameter_values().items()})
    for k in single:
        assert replicas[0][k].tobytes() == replicas[1][k].tobytes()
        np.testing.assert_allclose(replicas[0][k], single[k], atol=1e-5)
    assert dp.steps == 4
    with pytest.raises(InvalidArgumentError):
        dp.step(X[:1], Y[:1])                    # fewer rows than workers
