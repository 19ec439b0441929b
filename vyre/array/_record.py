"""The hook through which a recorder (vyre.autograd's ``GradientTape``) sees the namespace's public calls.

vyre.array knows nothing of autograd: it only offers this registry. Every public function of the namespace
(``vyre.array.<name>``, ``vyre.array.linalg.<name>``), the array's operators and function methods
(``a * b``, ``a @ b``, ``a[k]``, ``x.sum()``; vyre/array/_operators.py) and numpy's ufuncs on arrays go
through :func:`recorded`'s wrapper, installed once at import by :func:`install`. With no recorder active
the wrapper costs one truthiness test of :data:`ANY`; with one (a recorder sees its own thread's calls
only), the call runs with recording
suspended (the namespace's functions calling each other are recorded once, as the public call) and each
active recorder is handed ``(name, fn, args, kwargs, out)``.

Mutation: in-place operators, ``x[k] = v`` and a kernel writing into an array (``__vyre_write_handle__``)
ask every recorder in :data:`HOLDERS` (those holding recorded arrays: active, or finished but not yet
differentiated) whether the change is safe (``check_mutation``), so a recorded value can never change
under a gradient that reads it. numpy's functions on vyre arrays (``__array_function__``, whose adapters
call the functions directly) are refused while a recorder is active.
"""

from __future__ import annotations

import functools
import inspect
import threading
import weakref
from collections.abc import Callable, Iterable
from types import ModuleType
from typing import Any, Protocol

from ..errors import ArgumentTypeError
from ._array import Array


class Recorder(Protocol):
    def record(self, name: str, fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any],
               out: Any) -> None: ...

    def check_mutation(self, x: Array, value: Any) -> None: ...


class _ThreadRecorders:
    """The active recorders of the calling thread, innermost last (a tape records its own thread's calls
    only: another thread's arrays and calls are not part of it). ``ANY`` is non-empty while any thread has
    one: the wrappers' fast test (one list truthiness test when nothing records anywhere)."""

    def __init__(self) -> None:
        self._local = threading.local()
        self._lock = threading.Lock()

    def mine(self) -> list[Recorder]:
        try:
            return self._local.stack  # type: ignore[no-any-return]
        except AttributeError:
            self._local.stack = []
            return self._local.stack  # type: ignore[no-any-return]

    def __contains__(self, r: object) -> bool:
        return r in self.mine()

    def __bool__(self) -> bool:
        return bool(self.mine())

    def append(self, r: Recorder) -> None:
        self.mine().append(r)
        with self._lock:
            ANY.append(r)

    def remove(self, r: Recorder) -> None:
        self.mine().remove(r)
        with self._lock:
            ANY.remove(r)


ANY: list[Recorder] = []  # active recorders of every thread (see _ThreadRecorders)
RECORDERS = _ThreadRecorders()  # this thread's active recorders
HOLDERS: weakref.WeakSet[Any] = weakref.WeakSet()  # recorders holding arrays (see the module docstring)
_HOLDERS_LOCK = threading.Lock()


def hold(r: Any) -> None:
    """Add ``r`` to :data:`HOLDERS` (under a lock: tapes of several threads)."""
    with _HOLDERS_LOCK:
        HOLDERS.add(r)


def unhold(r: Any) -> None:
    with _HOLDERS_LOCK:
        HOLDERS.discard(r)
_WRAPPED: dict[Callable[..., Any], Callable[..., Any]] = {}

# public functions that take no array or give none: nothing for a recorder to see
_SKIP = frozenset({"use", "current_backend", "evaluate", "fusion_stats", "reset_fusion_stats",
                   "__array_namespace_info__", "result_type", "can_cast", "isdtype", "finfo", "iinfo",
                   "broadcast_shapes", "wgpu_buffer", "from_wgpu_buffer", "zeros", "ones", "empty", "full",
                   "arange", "linspace", "eye", "program_of",
                   "from_dlpack"})  # from host data (a vyre array's own goes through a host copy): a constant


def _call(name: str, fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    mine = RECORDERS.mine()
    if not mine:  # another thread records, or recording is suspended here
        return fn(*args, **kwargs)
    saved = mine[:]
    mine.clear()  # suspended: the calls fn makes are parts of this one
    try:
        out = fn(*args, **kwargs)
    finally:
        mine[:] = saved
    for r in saved:
        r.record(name, fn, args, kwargs, out)
    return out


def _arity(fn: Callable[..., Any]) -> int:
    """1 or 2 for ``f(x, /)`` / ``f(x1, x2, /)`` (no defaults), else 0."""
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return 0
    if 1 <= len(params) <= 2 and all(p.kind is p.POSITIONAL_ONLY and p.default is p.empty for p in params):
        return len(params)
    return 0


def recorded(fn: Callable[..., Any], name: str | None = None) -> Callable[..., Any]:
    """``fn`` as the recorders see it (one wrapper per function: ``recorded(f) is recorded(f)``). The
    elementwise functions get a wrapper of their own arity: ``*args, **kwargs`` would cost ~0.2 µs a call."""
    w = _WRAPPED.get(fn)
    if w is not None:
        return w
    key = name or fn.__name__
    active = ANY
    wrapper: Callable[..., Any]
    arity = _arity(fn)
    if arity == 1:
        def wrapper(x: Any, /) -> Any:
            if active:
                return _call(key, fn, (x,), {})
            return fn(x)
    elif arity == 2:
        def wrapper(x1: Any, x2: Any, /) -> Any:
            if active:
                return _call(key, fn, (x1, x2), {})
            return fn(x1, x2)
    else:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            if active:
                return _call(key, fn, args, kwargs)
            return fn(*args, **kwargs)

    functools.update_wrapper(wrapper, fn)
    setattr(wrapper, "__vyre_record_name__", key)  # noqa: B010 - the name recorders see (a function attribute)
    _WRAPPED[fn] = _WRAPPED[wrapper] = wrapper
    return wrapper


def check_mutation(x: Array, value: Any = None) -> None:
    """Ask each holding recorder whether ``x`` (being written, with ``value`` for ``x[k] = value``) may change."""
    with _HOLDERS_LOCK:
        holders = list(HOLDERS)
    for r in holders:
        r.check_mutation(x, value)


def _guard_mutations() -> None:
    inplace, write_handle, setitem = Array._inplace, Array.__vyre_write_handle__, Array.__setitem__

    def _inplace(self: Array, result: Array) -> Array:
        if HOLDERS:
            check_mutation(self)
        return inplace(self, result)

    def __vyre_write_handle__(self: Array) -> Any:  # noqa: N807 - the protocol's name
        if HOLDERS:
            check_mutation(self)
        return write_handle(self)

    def __setitem__(self: Array, key: Any, value: Any) -> None:  # noqa: N807
        if HOLDERS:
            check_mutation(self, value)
        setitem(self, key, value)

    Array._inplace = _inplace  # type: ignore[method-assign]
    Array.__vyre_write_handle__ = __vyre_write_handle__  # type: ignore[method-assign]
    Array.__setitem__ = __setitem__  # type: ignore[method-assign]


def _guard_numpy_functions() -> None:
    # numpy's functions reach vyre.array through adapters (_numpy_functions) that call the functions
    # themselves: not recorded, so refused while a recorder is active rather than giving a gradient of zero
    dispatch = Array.__array_function__  # type: ignore[attr-defined]

    def __array_function__(self: Array, func: Any, types: Any, args: Any, kwargs: Any) -> Any:  # noqa: N807
        if ANY and RECORDERS:
            name = getattr(func, "__name__", repr(func))
            raise ArgumentTypeError(f"numpy.{name} on vyre arrays is not recorded by a GradientTape",
                                    fix=f"call vyre.array's function (vyre.array.{name} or its equivalent) "
                                        "inside the tape")
        return dispatch(self, func, types, args, kwargs)

    Array.__array_function__ = __array_function__  # type: ignore[attr-defined]


def install(namespace: dict[str, Any], modules: Iterable[ModuleType], ufuncs: dict[Any, Callable[..., Any]]) -> None:
    """Wrap the public functions of ``namespace`` (vyre.array's globals) and of ``modules`` (vyre.array.linalg)
    and the values of ``ufuncs`` (numpy ufunc -> function) in place, and the array's copy protocol; guard the
    in-place operators, item assignment and numpy's functions. Run once, after the operators are bound
    (``_operators.bind``)."""
    tables = [namespace, *(vars(m) for m in modules)]
    for table in tables:
        for name in table.get("__all__", ()):
            fn = table.get(name)
            if name in _SKIP or isinstance(fn, (type, ModuleType)) or not callable(fn):
                continue
            table[name] = recorded(fn)
    for k, fn in ufuncs.items():
        ufuncs[k] = recorded(fn)
    for name in ("__copy__", "__deepcopy__"):  # copy.copy / copy.deepcopy: new arrays of the same values
        setattr(Array, name, recorded(getattr(Array, name), name))
    _guard_mutations()
    _guard_numpy_functions()


__all__ = ["RECORDERS", "ANY", "HOLDERS", "hold", "unhold", "Recorder", "recorded", "check_mutation", "install"]
