"""Sharded array operations: arrays split along axis 0 into one shard per worker, each shard run
through ``vyre.ops`` on its worker's backend, the pieces combined on the host in shard order.

Shard boundaries depend only on the array's length and the number of workers, and partials are
combined in shard order, so float results are the same run to run on the same pool (a shard re-run
on another worker after a failure gives the same bits on identical adapters).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import ArgumentTypeError, InvalidArgumentError
from ._ray import ray
from .gather import Pending, gather
from .sharding import merge_sorted, row_bounds

if TYPE_CHECKING:
    from .pool import Pool

#: Op ids (prefixes) that act element by element, so rows can be split freely.
ELEMENTWISE = ("map.", "zip.", "bits.", "nn.gelu", "nn.silu")
REDUCTIONS = {"sum": np.add, "prod": np.multiply, "min": np.minimum, "max": np.maximum}


def _op_id(op: str) -> str:
    from ..ops.api import function_name  # why: import time (vyre.ops loads pydantic and every op, ~0.6 s)
    from ..ops.registry import all_ops  # why: import time (as above)

    _op_name("op", op)
    for spec in all_ops():
        if op in (spec.id, function_name(spec.id)):
            return spec.id
    raise InvalidArgumentError(f"no vyre op named {op!r}",
                               fix="use an op id from docs/ops.md, e.g. 'zip.add' or 'map.sqrt'")


def _op_name(what: str, op: object) -> None:
    if not isinstance(op, str):
        raise ArgumentTypeError(f"pool: {what} must be a string naming the operation, got {type(op).__name__}",
                                fix="e.g. pool.elementwise('zip.add', a, b) or pool.reduce('sum', x)")


def _timeout(pool: Pool, timeout_s: float | None) -> float:
    return pool.timeout_s if timeout_s is None else timeout_s


def run_shards(pool: Pool, op_id: str, kwargs: dict, shards: list[list[Any]], timeout_s: float | None) -> list:
    """``vyre.ops.<op>(backend, *shard, **kwargs)`` for each shard (shard ``i`` on worker ``i % size``),
    results in shard order. Object refs among a shard's arrays are resolved on the worker."""
    from ..ops.api import function_name  # why: import time (as in _op_id)

    name = function_name(op_id)
    workers = pool._workers
    out: list[Any] = [None] * len(shards)
    pending = Pending(lambda i, w, full: workers[w].run_op.remote(name, kwargs, *shards[i]), pool.size)
    for i in range(len(shards)):
        pending.start(i, i % pool.size)
    gather(pending, out.__setitem__, _timeout(pool, timeout_s), f"{op_id} over {len(shards)} shard(s)")
    return out


def _concat(parts: list[Any]) -> Any:
    if isinstance(parts[0], tuple):
        return tuple(_concat([p[k] for p in parts]) for k in range(len(parts[0])))
    return np.concatenate(parts, axis=0) if len(parts) > 1 else np.array(parts[0])


def elementwise(pool: Pool, op: str, xs: tuple, kwargs: dict, timeout_s: float | None) -> Any:
    """Rows of the arrays that span axis 0 are split; arrays of lower rank or one row (which numpy
    broadcasts along axis 0) go to every worker whole, through the object store once."""
    op_id = _op_id(op)
    if not op_id.startswith(ELEMENTWISE):
        raise InvalidArgumentError(f"{op_id} is not an elementwise op: its rows cannot be split",
                            fix="use pool.matmul/reduce/scan/sort, or pool.map/dispatch_batch for other work")
    if not xs:
        raise InvalidArgumentError(f"{op_id} needs at least one array", fix="pass the op's input arrays")
    arrays = [np.asarray(x) for x in xs]
    ndim = max(a.ndim for a in arrays)
    split = [ndim > 0 and a.ndim == ndim and a.shape[0] > 1 for a in arrays]
    rows = sorted({a.shape[0] for a, s in zip(arrays, split) if s})
    if len(rows) > 1:
        raise InvalidArgumentError(f"{op_id}: the arrays have {rows} rows along axis 0; they must agree (or be 1)",
                            fix="pass arrays that broadcast against each other, as numpy would")
    if not rows:
        return run_shards(pool, op_id, kwargs, [arrays], timeout_s)[0]
    r = ray()
    whole = {i: r.put(a) for i, a in enumerate(arrays) if not split[i]}
    shards = [[a[lo:hi] if split[i] else whole[i] for i, a in enumerate(arrays)]
              for lo, hi in row_bounds(rows[0], pool.size)]
    return _concat(run_shards(pool, op_id, kwargs, shards, timeout_s))


def matmul(pool: Pool, a: Any, b: Any, timeout_s: float | None) -> np.ndarray:
    a, b = np.asarray(a), np.asarray(b)
    if a.ndim != 2 or b.ndim != 2 or a.shape[1] != b.shape[0]:
        raise InvalidArgumentError(f"matmul needs (m, k) @ (k, n) arrays, got {a.shape} @ {b.shape}",
                            fix="pass 2-D float32 arrays whose inner dimensions agree")
    b_ref = ray().put(b)  # every worker reads the same object (zero-copy on its node)
    shards = [[a[lo:hi], b_ref] for lo, hi in row_bounds(a.shape[0], pool.size)]
    return _concat(run_shards(pool, "matmul", {}, shards, timeout_s))


def reduce(pool: Pool, op: str, x: Any, timeout_s: float | None) -> np.ndarray:
    """Whole-array ``op`` (sum, prod, min, max): one partial per shard, folded left to right in the
    array's dtype (integers wrap, as the op does)."""
    _op_name("the reduction", op)
    if op not in REDUCTIONS:
        raise InvalidArgumentError(f"pool.reduce: unknown reduction {op!r}", fix=f"use one of {sorted(REDUCTIONS)}")
    flat = np.asarray(x).reshape(-1)
    if flat.size == 0:  # the op's own error (or identity) for empty input, from one worker
        return run_shards(pool, f"reduce.{op}", {}, [[flat]], timeout_s)[0]
    shards = [[flat[lo:hi]] for lo, hi in row_bounds(flat.size, pool.size)]
    partials = run_shards(pool, f"reduce.{op}", {}, shards, timeout_s)
    combine = REDUCTIONS[op]
    acc = np.array(partials[0]).reshape(1)
    with np.errstate(all="ignore"):
        for p in partials[1:]:
            acc = combine(acc, np.asarray(p, dtype=acc.dtype).reshape(1))
    return acc.reshape(())


def scan(pool: Pool, x: Any, exclusive: bool, timeout_s: float | None) -> np.ndarray:
    """Prefix sum of flattened ``x``: each shard's inclusive scan plus the sum of the shards before it
    (accumulated left to right in the dtype); the exclusive scan is the inclusive one shifted right."""
    flat = np.asarray(x).reshape(-1)
    if flat.size == 0:
        return run_shards(pool, "scan.exclusive" if exclusive else "scan.inclusive", {}, [[flat]], timeout_s)[0]
    shards = [[flat[lo:hi]] for lo, hi in row_bounds(flat.size, pool.size)]
    parts = run_shards(pool, "scan.inclusive", {}, shards, timeout_s)
    out = np.empty(flat.size, dtype=np.asarray(parts[0]).dtype)
    offset = None
    start = 0
    with np.errstate(all="ignore"):
        for part in parts:
            part = np.asarray(part).reshape(-1)
            piece = part if offset is None else part + offset  # shard 0 unchanged (keeps -0.0 and exact bits)
            out[start:start + part.size] = piece
            start += part.size
            offset = piece[-1:].copy()
    if exclusive:
        out[1:] = out[:-1].copy()
        out[0] = 0
    return out


def sort(pool: Pool, x: Any, timeout_s: float | None) -> np.ndarray:
    """Ascending u32 keys: each shard sorted by ``sort.radix`` on its worker, the runs merged on the host."""
    keys = np.asarray(x)
    if keys.ndim != 1 or keys.size == 0:
        raise InvalidArgumentError(f"pool.sort: keys must be a non-empty 1-D array, got shape {keys.shape}",
                            fix="pass keys.ravel() with at least one element")
    shards = [[keys[lo:hi]] for lo, hi in row_bounds(keys.size, pool.size)]
    return merge_sorted(run_shards(pool, "sort.radix", {}, shards, timeout_s))
