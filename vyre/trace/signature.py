"""Arguments of a compiled function as a signature: the structure of the arguments (tuples, lists,
dicts -- pytrees), each array's shape, dtype and backend, and every other leaf by value. Two calls with
equal signatures replay one trace; anything else that differs (a Python int steering a loop, a flag)
makes a new trace. numpy arrays are arguments like vyre arrays (uploaded at each call)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..array._array import Array
from ..errors import TraceError

#: Python values that are part of a signature by value.
_SCALARS = (bool, int, float, complex, str, bytes, type(None))


def flatten(tree: Any, leaves: list[Any], what: str) -> Any:
    """Append ``tree``'s array leaves to ``leaves``; returns its structure (hashable), other leaves inside."""
    t = type(tree)
    if t is Array:
        leaves.append(tree)
        return ("A", tree._shape, tree._dtype, id(tree._device))
    if t is tuple or t is list:
        return (t.__name__, tuple(flatten(x, leaves, f"{what}[{k}]") for k, x in enumerate(tree)))
    if t is dict:
        keys = list(tree)
        if not all(isinstance(k, str) for k in keys):
            raise TraceError(f"vyre.compile: {what} is a dict with non-string keys", fix="use string keys")
        return ("dict", tuple((k, flatten(tree[k], leaves, f"{what}[{k!r}]")) for k in sorted(keys)))
    if isinstance(tree, _SCALARS) or isinstance(tree, np.generic):
        return ("S", t.__name__, tree.item() if isinstance(tree, np.generic) else tree)
    if isinstance(tree, np.dtype) or (isinstance(tree, type) and issubclass(tree, np.generic)):
        return ("S", "dtype", str(np.dtype(tree)))
    raise TraceError(f"vyre.compile: {what} is a {t.__name__}, which cannot be part of a signature",
                     fix="pass vyre arrays, numpy arrays, Python scalars, strings, None, and tuples, lists or "
                         "dicts of them; close over other objects (they are read at trace time)")


def unflatten(struct: Any, leaves: list[Any], pos: list[int]) -> Any:
    """The tree of ``struct`` with its array leaves taken from ``leaves`` in order (``pos``: the cursor)."""
    tag = struct[0]
    if tag == "A":
        v = leaves[pos[0]]
        pos[0] += 1
        return v
    if tag == "tuple":
        return tuple(unflatten(s, leaves, pos) for s in struct[1])
    if tag == "list":
        return [unflatten(s, leaves, pos) for s in struct[1]]
    if tag == "dict":
        return {k: unflatten(s, leaves, pos) for k, s in struct[1]}
    return struct[2] if struct[1] != "dtype" else np.dtype(struct[2])


def arguments(args: tuple[Any, ...], kwargs: dict[str, Any], to_array: Callable[[np.ndarray], Array]
              ) -> tuple[Any, list[Array], tuple[Any, ...], dict[str, Any]]:
    """(signature key, array leaves, args, kwargs) with numpy arrays replaced by vyre arrays (``to_array``)."""
    def conv(x: Any) -> Any:
        t = type(x)
        if t is np.ndarray:
            return to_array(x)
        if t is tuple or t is list:
            return t(conv(v) for v in x)
        if t is dict:
            return {k: conv(v) for k, v in x.items()}
        return x
    args = tuple(conv(a) for a in args)
    kwargs = {k: conv(v) for k, v in kwargs.items()}
    leaves: list[Array] = []
    key = (flatten(args, leaves, "argument"), flatten(kwargs, leaves, "keyword argument"))
    return key, leaves, args, kwargs


__all__ = ["flatten", "unflatten", "arguments"]
