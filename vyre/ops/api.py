"""Convenience layer: ``vyre.ops.<name>(backend, *arrays, variant=None, **params)``.

Builds the op's pipeline (cached per op, kernel variant and params), runs it and returns numpy:
one array for single-output ops, a tuple otherwise. ``<name>`` is the op id with dots replaced
by underscores (``reduce.sum`` -> ``vyre.ops.reduce_sum``; ``vyre.ops.reduce.sum`` is the same op,
see :mod:`vyre.ops.namespace`).

Kernel variants (:mod:`vyre.ops.variants`): each call runs the best variant the backend can run
for these params (the generic kernel on the reference interpreter); ``variant="name"`` forces one
(UnsupportedFeatureError when the backend cannot run it). :func:`last_variant` says which ran,
:func:`variant_for` which would run.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

import numpy as np

from ..backends.base import Backend
from ..backends.schedule import Pipeline
from . import tuning
from . import variants as V
from .pipeline import execute
from .registry import OpSpec, all_ops, get

_CACHE: OrderedDict[tuple, Pipeline] = OrderedDict()
_CACHE_CAP = 256
_LOCK = threading.Lock()
_LAST = threading.local()  # .ran: {op id: variant} of this thread's calls


def _freeze(v: Any) -> Any:
    if isinstance(v, dict):
        return tuple(sorted((k, _freeze(x)) for k, x in v.items()))
    if isinstance(v, (list, tuple)):
        return tuple(_freeze(x) for x in v)
    if isinstance(v, np.dtype):
        return str(v)
    return v


def pipeline_for(op_id: str, params: dict[str, Any], variant: str = V.GENERIC) -> Pipeline:
    """The pipeline of ``op_id``'s kernel ``variant`` for ``params`` (cached on all three)."""
    key = (op_id, variant, _freeze(params))
    with _LOCK:
        hit = _CACHE.get(key)
        if hit is not None:
            _CACHE.move_to_end(key)
            return hit
    pipe = V.build(get(op_id), variant, params)
    with _LOCK:
        _CACHE[key] = pipe
        while len(_CACHE) > _CACHE_CAP:
            _CACHE.popitem(last=False)
    return pipe


def facts(backend: Backend) -> V.AdapterFacts:
    """What variant selection knows of ``backend`` (:func:`vyre.ops.variants.facts_of`, cached per backend)."""
    return V.facts_for(backend)


def _plan(op_id: str, backend: Backend, arrays: Any, variant: str | None,
          kwargs: dict[str, Any]) -> tuple[OpSpec, tuple[np.ndarray, ...], dict[str, Any], str]:
    spec = get(op_id)
    arrays = tuple(np.asarray(a) for a in arrays)
    params = spec.params_for(*arrays, **kwargs)
    if variant is None:  # a stored per-adapter winner (vyre.ops.tuning) when the caller named no tunable param
        params, variant = tuning.apply(op_id, backend, params, kwargs, lambda: facts(backend))
    # getattr: duck-typed specs (tests stand in objects with just params_for and build)
    chosen = V.choose(spec, params, facts(backend), variant) if getattr(spec, "variants", ()) or variant \
        else V.GENERIC
    return spec, arrays, params, chosen


def variant_for(op_id: str, backend: Backend, *arrays: Any, variant: str | None = None, **kwargs: Any) -> str:
    """The kernel variant ``call`` would run for these arguments (nothing runs)."""
    return _plan(op_id, backend, arrays, variant, kwargs)[3]


def call(op_id: str, backend: Backend, *arrays: Any, variant: str | None = None, **kwargs: Any) -> Any:
    """Run ``op_id`` on ``backend``: the chosen (or the forced ``variant``) kernel; see the module doc."""
    spec, arrays, params, chosen = _plan(op_id, backend, arrays, variant, kwargs)
    to_device, from_device = getattr(spec, "to_device", None), getattr(spec, "from_device", None)
    inputs = to_device(*arrays) if to_device else arrays
    outs = execute(backend, pipeline_for(op_id, params, chosen), inputs)
    if from_device:
        outs = from_device(outs, arrays)
    ran = getattr(_LAST, "ran", None)
    if ran is None:
        ran = _LAST.ran = {}
    ran[op_id] = chosen
    return outs[0] if len(outs) == 1 else tuple(outs)


def last_variant(op_id: str) -> str | None:
    """The kernel variant the last ``vyre.ops`` call of ``op_id`` in this thread ran (None: no call yet)."""
    return getattr(_LAST, "ran", {}).get(op_id)


def function_name(op_id: str) -> str:
    return op_id.replace(".", "_").replace("-", "_")


def lookup(name: str) -> Callable[..., Any] | None:
    for spec in all_ops():
        if function_name(spec.id) == name:
            def fn(backend: Backend, *arrays: Any, _id: str = spec.id, **kwargs: Any) -> Any:
                return call(_id, backend, *arrays, **kwargs)

            fn.__name__ = name
            fn.__qualname__ = name
            kernels = ", ".join(spec.variant_names())
            fn.__doc__ = (f"{spec.summary}\n\nop id: {spec.id}; tolerance: {spec.tolerance.describe()}; "
                          f"kernels: {kernels} (variant= forces one)")
            fn.op_id = spec.id  # type: ignore[attr-defined]
            return fn
    return None


def names() -> list[str]:
    return [function_name(s.id) for s in all_ops()]
