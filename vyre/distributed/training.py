"""Data-parallel training over a pool: one model replica per worker, gradients averaged in a fixed order.

``DataParallel(pool, build)``: every worker calls ``build()`` (with its backend current) and gets
``(model, loss_fn, optimizer)``: a ``vyre.nn`` module, ``loss_fn(values, x, y)`` (a scalar loss of the
parameter values, as ``value_and_grad`` takes it) and a ``vyre.optim`` optimizer over the module. Worker
0's initial parameters are copied to the others, so the replicas start equal. ``step(x, y)`` splits the
batch (host arrays) along its first axis into one shard per worker (``numpy.array_split``), each worker
computes its shard's loss and gradients (``value_and_grad``), the caller sums them weighted by shard size in
worker order (float64, then float32: the same bits for the same pool size on every run), every worker
applies the same averaged gradients with its optimizer: the replicas stay identical. Returns the batch's
mean loss. Two trips through Ray's object store per step (gradients in, averaged gradients out): the
cost this design sets is the gradients' bytes twice per step (docs/distributed.md).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..errors import ArgumentTypeError, InvalidArgumentError

#: what ``build`` returns on each worker: (module, loss_fn(values, x, y), optimizer)
Built = tuple[Any, Callable[..., Any], Any]


def _setup(backend: Any, state: dict[str, Any], build: Callable[[], Built]) -> dict[str, np.ndarray]:
    from ..autograd import value_and_grad  # why: import time (vyre.autograd, loaded in the worker)

    model, loss_fn, opt = build()
    state["dp"] = (model, value_and_grad(loss_fn), opt)
    return {k: np.asarray(v) for k, v in model.parameter_values().items()}


def _load(backend: Any, state: dict[str, Any], values: dict[str, np.ndarray]) -> None:
    from ..array import asarray  # why: import time

    model = state["dp"][0]
    for name, p in model.named_parameters():
        p.value._adopt(asarray(values[name]))  # in place: the optimizer holds these arrays


def _grads(backend: Any, state: dict[str, Any], x: np.ndarray, y: np.ndarray
           ) -> tuple[float, dict[str, np.ndarray]]:
    from ..array import asarray  # why: import time

    model, vg, _ = state["dp"]
    loss, grads = vg(model.parameter_values(), asarray(x), asarray(y))
    return float(loss), {k: np.asarray(g) for k, g in grads.items()}


def _apply(backend: Any, state: dict[str, Any], grads: dict[str, np.ndarray]) -> None:
    from ..array import asarray  # why: import time

    _, _, opt = state["dp"]
    opt.step({k: asarray(g) for k, g in grads.items()})


def _values(backend: Any, state: dict[str, Any]) -> dict[str, np.ndarray]:
    return {k: np.asarray(v) for k, v in state["dp"][0].parameter_values().items()}


class DataParallel:
    """See the module doc. ``pool``: a :class:`~vyre.distributed.Pool`; ``build``: a picklable callable
    (module-level, or a closure cloudpickle can send) returning ``(model, loss_fn, optimizer)``."""

    def __init__(self, pool: Any, build: Callable[[], Built]) -> None:
        if not callable(build):
            raise ArgumentTypeError(f"DataParallel needs a build() callable, not {type(build).__name__}",
                                    fix="def build(): return model, loss_fn, optimizer")
        self.pool = pool
        first = pool.call_each(_setup, [(build,)] * pool.size, what="DataParallel build")[0]
        pool.call_each(_load, [(first,)] * pool.size, what="DataParallel initial weights")
        self.steps = 0

    def step(self, x: Any, y: Any) -> float:
        """One data-parallel step on the batch ``(x, y)`` (host arrays, first axis the batch); the mean loss."""
        xs, ys = np.asarray(x), np.asarray(y)
        n = self.pool.size
        if xs.shape[:1] != ys.shape[:1] or xs.shape[0] < n:
            raise InvalidArgumentError(f"DataParallel.step: x {xs.shape} and y {ys.shape} need one batch axis of "
                                       f"at least {n} rows (one shard per worker)", fix="a larger batch")
        shards = list(zip(np.array_split(xs, n), np.array_split(ys, n), strict=True))
        got = self.pool.call_each(_grads, shards, what="DataParallel gradients")
        total = xs.shape[0]
        weights = [len(sy) / total for _, sy in shards]
        loss = sum(w * lv for w, (lv, _) in zip(weights, got, strict=True))
        avg = {k: sum(w * g[k].astype(np.float64) for w, (_, g) in zip(weights, got, strict=True)).astype(np.float32)
               for k in got[0][1]}
        self.pool.call_each(_apply, [(avg,)] * n, what="DataParallel update")
        self.steps += 1
        return float(loss)

    def parameter_values(self, worker: int = 0) -> dict[str, np.ndarray]:
        """A replica's parameters, downloaded (every replica holds the same ones)."""
        return self.pool.call_each(_values, what="DataParallel parameters")[worker]


__all__ = ["DataParallel"]
