"""The op library: ops built from the IR, each with a numpy reference and witnesses.

``vyre.ops.<name>(backend, *arrays, **params)`` runs an op (``reduce.sum`` is
``vyre.ops.reduce_sum``); ``vyre.ops.registry`` lists them. Op modules load on first use.
"""

from __future__ import annotations


def __getattr__(name: str):
    if name.startswith("__"):
        raise AttributeError(name)
    from .api import lookup

    fn = lookup(name)
    if fn is None:
        raise AttributeError(f"vyre.ops has no op {name!r}")
    globals()[name] = fn
    return fn


def __dir__():
    from .api import names

    return sorted(names())
