"""Namespaced op access: ``vyre.ops.<family>.<name>(backend, ...)`` next to the flat names.

Where an op lives (:func:`place`): an id ``head.rest`` whose ``head`` is not itself an op id is
in family ``head`` as ``rest`` with dots made underscores (``reduce.sum`` -> ``vyre.ops.reduce.sum``,
``hash.crc32.rows`` -> ``vyre.ops.hash.crc32_rows``); any other id is in the family of its category
under its flat name (``softmax`` -> ``vyre.ops.nn.softmax``, ``matmul.batched`` ->
``vyre.ops.linalg.matmul_batched``, ``histogram`` -> ``vyre.ops.reduce.histogram``).

A family that is an op subpackage (``vyre.ops.reduce``, ``nn``, ``sort``, ...) is that package: its
``__init__`` calls :func:`install`, which gives it a ``__getattr__``/``__dir__`` over its ops. Where
an op's name is also a submodule (``vyre.ops.sort.topk`` is ``vyre/ops/sort/topk.py``) the module
stays the module (imports keep working) and calling it runs the op. Other families (``map``,
``zip``, ``bits``) are :class:`Namespace` objects. Everything resolves lazily: importing a package
loads no registry; the first op name looked up does.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import threading
import types
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import vyre.ops as _package  # the flat op functions (its __getattr__); always loaded before this module

if TYPE_CHECKING:  # annotations only: importing an op package stays light (no backend modules)
    from ..backends.base import Backend

_TABLE: tuple[tuple, dict[str, dict[str, str]]] | None = None
_LOCK = threading.Lock()


def place(op_id: str, category: str, op_ids: Any) -> tuple[str, str]:
    """(family, name) of an op: see the module doc."""
    head, _, rest = op_id.partition(".")
    if rest and head not in op_ids:
        return head, _flat(rest)
    return category, _flat(op_id)


def _flat(text: str) -> str:
    return text.replace(".", "_").replace("-", "_")


def table() -> dict[str, dict[str, str]]:
    """{family: {name: op id}} over the whole registry (rebuilt when ops are registered)."""
    global _TABLE
    from .registry import all_ops  # on first use: importing an op package loads no registry (test_import_is_lazy)

    specs = all_ops()
    key = tuple(s.id for s in specs)
    with _LOCK:
        if _TABLE is not None and _TABLE[0] == key:
            return _TABLE[1]
    out = table_of(specs)
    for family in out:  # a family subpackage whose __init__ lacks the install() line still works
        mod = sys.modules.get(f"vyre.ops.{family}")
        if mod is not None and hasattr(mod, "__path__") and not isinstance(mod, FamilyPackage):
            install(mod.__name__)
    with _LOCK:
        _TABLE = (key, out)
    return out


def table_of(specs: Any) -> dict[str, dict[str, str]]:
    """{family: {name: op id}} of the given OpSpecs; ValueError when two ops take one name."""
    ids = frozenset(s.id for s in specs)
    out: dict[str, dict[str, str]] = {}
    for s in specs:
        family, name = place(s.id, s.category, ids)
        other = out.setdefault(family, {}).setdefault(name, s.id)
        if other != s.id:
            raise ValueError(f"ops {other!r} and {s.id!r} both map to vyre.ops.{family}.{name}")
    return out


def families() -> list[str]:
    return sorted(table())


def op_function(op_id: str) -> Callable[..., Any]:
    """The flat ``vyre.ops.<function>`` of ``op_id`` (the same object the namespaces return)."""
    fn: Callable[..., Any] = getattr(_package, _flat(op_id))
    return fn


def resolve(family: str, name: str) -> Callable[..., Any] | None:
    op_id = table().get(family, {}).get(name)
    return None if op_id is None else op_function(op_id)


def op_id_of(obj: Any) -> str | None:
    """The op id a namespaced or flat name runs (a function, or an op module such as sort.topk)."""
    if isinstance(obj, OpModule):
        family, _, name = obj.__name__.removeprefix("vyre.ops.").rpartition(".")
        return table().get(family, {}).get(name)
    return getattr(obj, "op_id", None)


def _loading() -> bool:
    from .registry import loading_here  # on first use, as in table(): no registry at import

    return loading_here()


def _missing(where: str, family: str, name: str) -> AttributeError:
    known = ", ".join(sorted(table().get(family, {})))
    return AttributeError(f"{where} has no attribute or op {name!r} (ops: {known})")


class Namespace:
    """An op family that is no subpackage (``vyre.ops.map``): its ops as attributes."""

    def __init__(self, family: str) -> None:
        self._family = family

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        fn = resolve(self._family, name)
        if fn is None:
            raise _missing(f"vyre.ops.{self._family}", self._family, name)
        return fn

    def __dir__(self) -> list[str]:
        return sorted(table().get(self._family, {}))

    def __repr__(self) -> str:
        return f"<vyre.ops.{self._family}: {len(self.__dir__())} ops>"


class OpModule(types.ModuleType):
    """An op package's submodule: calling it runs the op of the same name in the package's family
    (``vyre.ops.sort.topk(gpu, x, k=3)``); TypeError when no op has its name."""

    def __call__(self, backend: Backend, *args: Any, **kwargs: Any) -> Any:
        op_id = op_id_of(self)
        if op_id is None:
            raise TypeError(f"module {self.__name__} is not callable: no op is called {self.__name__[9:]!r}")
        return op_function(op_id)(backend, *args, **kwargs)


class FamilyPackage(types.ModuleType):
    """An op subpackage (``vyre.ops.reduce``) that is also its family's namespace."""

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        if importlib.util.find_spec(f"{self.__name__}.{name}") is not None:
            return importlib.import_module(f"{self.__name__}.{name}")  # a submodule: import it (lazily)
        if _loading():  # an import inside the registry's loading asks: no ops yet
            raise AttributeError(f"module {self.__name__!r} has no attribute {name!r}")
        family = self.__name__.rpartition(".")[2]
        fn = resolve(family, name)
        if fn is None:
            raise _missing(self.__name__, family, name)
        return fn

    def __dir__(self) -> list[str]:
        family = self.__name__.rpartition(".")[2]
        return sorted(set(super().__dir__()) | set(table().get(family, {})))

    def __setattr__(self, name: str, value: Any) -> None:
        # the import system sets each submodule on its package: make op-named ones callable
        if (isinstance(value, types.ModuleType) and type(value) is types.ModuleType and not name.startswith("_")
                and value.__name__ == f"{self.__name__}.{name}"):
            value.__class__ = OpModule
        super().__setattr__(name, value)


def install(package: str) -> None:
    """Make the op subpackage ``package`` its family's namespace (call it at the end of its ``__init__``)."""
    mod = sys.modules[package]
    if not isinstance(mod, FamilyPackage):
        mod.__class__ = FamilyPackage
    for name, value in list(vars(mod).items()):
        if isinstance(value, types.ModuleType):
            setattr(mod, name, value)


def submodule(name: str) -> Any:
    """``vyre.ops.<name>`` when it is a submodule or subpackage (imported now) or FlatIndex; else None."""
    if name == "FlatIndex":
        if not _has_module("vyre.ops.search.index"):
            raise AttributeError("vyre.ops.FlatIndex needs vyre.ops.search.index, which this vyre lacks")
        return importlib.import_module("vyre.ops.search.index").FlatIndex
    if importlib.util.find_spec(f"vyre.ops.{name}") is not None:
        return importlib.import_module(f"vyre.ops.{name}")
    return None


def family(name: str) -> Namespace | None:
    """``vyre.ops.<name>`` for an op family that is no subpackage (``map``, ``zip``, ``bits``); else None."""
    if _loading():
        raise AttributeError(f"vyre.ops.{name} was asked for while the op modules are being imported")
    return Namespace(name) if name in table() else None


def _has_module(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except ModuleNotFoundError:  # the parent package is missing
        return False


def top_level_names() -> list[str]:
    """What ``dir(vyre.ops)`` lists besides the flat op names."""
    out = set(families()) | {"api", "registry", "namespace", "variants"}
    if _has_module("vyre.ops.search.index"):
        out.add("FlatIndex")
    return sorted(out)


__all__ = ["place", "table", "table_of", "families", "resolve", "op_id_of", "op_function", "Namespace", "OpModule",
           "FamilyPackage", "install", "submodule", "family", "top_level_names"]
