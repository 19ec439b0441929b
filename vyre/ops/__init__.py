"""The op library: ops built from the IR, each with a numpy reference and witnesses.

``vyre.ops.<name>(backend, *arrays, **params)`` runs an op (``reduce.sum`` is
``vyre.ops.reduce_sum``); the same op is ``vyre.ops.<family>.<name>`` (``vyre.ops.reduce.sum``,
``vyre.ops.nn.softmax``, ``vyre.ops.hash.crc32_rows``: see :mod:`vyre.ops.namespace`).
``variant=`` forces one of an op's kernel variants (:mod:`vyre.ops.variants`).
``vyre.ops.registry`` lists the ops. Op modules load on first use.
"""

from __future__ import annotations

from typing import Any


def __getattr__(name: str) -> Any:
    if name.startswith("__"):
        raise AttributeError(name)
    # here, not at the top: `import vyre.ops` loads nothing (tests/ops/test_namespace.py::test_import_is_lazy);
    # not `from . import`: that asks this hook again
    from .namespace import family, submodule

    found = submodule(name)  # a subpackage or module (imported now), FlatIndex
    if found is None:
        from .api import lookup  # on first use: api loads the registry and the tuner

        found = lookup(name)  # a flat op name
    if found is None:
        found = family(name)  # map, zip, bits
    if found is None:
        raise AttributeError(f"vyre.ops has no op {name!r}")
    globals()[name] = found
    return found


def __dir__() -> list[str]:
    from .api import names  # on first use: api loads the registry and the tuner
    from .namespace import top_level_names  # on first use, like __getattr__'s

    return sorted(set(names()) | set(top_level_names()))
