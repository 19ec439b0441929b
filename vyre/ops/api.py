"""Convenience layer: ``vyre.ops.<name>(backend, *arrays, **params)``.

Builds the op's pipeline (cached per op and params), runs it and returns numpy: one
array for single-output ops, a tuple otherwise. ``<name>`` is the op id with dots
replaced by underscores (``reduce.sum`` -> ``vyre.ops.reduce_sum``).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

import numpy as np

from ..backends.base import Backend
from ..backends.schedule import Pipeline, host_inputs
from .registry import all_ops, get

_CACHE: OrderedDict[tuple, Pipeline] = OrderedDict()
_CACHE_CAP = 256
_LOCK = threading.Lock()


def _freeze(v):
    if isinstance(v, dict):
        return tuple(sorted((k, _freeze(x)) for k, x in v.items()))
    if isinstance(v, (list, tuple)):
        return tuple(_freeze(x) for x in v)
    if isinstance(v, np.dtype):
        return str(v)
    return v


def pipeline_for(op_id: str, params: dict) -> Pipeline:
    key = (op_id, _freeze(params))
    with _LOCK:
        hit = _CACHE.get(key)
        if hit is not None:
            _CACHE.move_to_end(key)
            return hit
    pipe = get(op_id).build(**params)
    with _LOCK:
        _CACHE[key] = pipe
        while len(_CACHE) > _CACHE_CAP:
            _CACHE.popitem(last=False)
    return pipe


def call(op_id: str, backend: Backend, *arrays: Any, **kwargs: Any) -> Any:
    spec = get(op_id)
    arrays = tuple(np.asarray(a) for a in arrays)
    params = spec.params_for(*arrays, **kwargs)
    inputs = spec.to_device(*arrays) if spec.to_device else arrays
    outs = execute(backend, pipeline_for(op_id, params), inputs)
    if spec.from_device:
        outs = spec.from_device(outs, arrays)
    return outs[0] if len(outs) == 1 else tuple(outs)


def execute(backend: Backend, pipe: Pipeline, arrays: Any) -> list[np.ndarray]:
    """Run a built pipeline the way the convenience layer does: inputs through
    :func:`~vyre.backends.schedule.host_inputs` (byte data packed, vector arrays flattened),
    then ``backend.run_pipeline`` (every backend has one: see :class:`vyre.backends.base.Backend`;
    ``backend.capabilities().native_pipelines`` tells whether it keeps intermediates on the device)."""
    return backend.run_pipeline(pipe, host_inputs(pipe, arrays))


def function_name(op_id: str) -> str:
    return op_id.replace(".", "_").replace("-", "_")


def lookup(name: str) -> Callable[..., Any] | None:
    for spec in all_ops():
        if function_name(spec.id) == name:
            def fn(backend, *arrays, _id=spec.id, **kwargs):
                return call(_id, backend, *arrays, **kwargs)

            fn.__name__ = name
            fn.__doc__ = f"{spec.summary}\n\nop id: {spec.id}; tolerance: {spec.tolerance.describe()}"
            return fn
    return None


def names() -> list[str]:
    return [function_name(s.id) for s in all_ops()]
