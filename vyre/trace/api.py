"""``vyre.compile``: trace a function over arrays once per signature, then replay it as one submission.

The first call with a new signature (vyre/trace/signature.py) runs the function eagerly while recording
the resident work it does (vyre/backends/recording.py) and returns its results; the record becomes a
:class:`~vyre.trace.replay.Replay`. Later calls with that signature copy the arguments in, run every
captured step and copy the results out in one submission, without running the Python function: no
graph building, no planning, no per-step checks. Outputs are new arrays (materialised on the device; a
download waits for the submission).

What a replay could not repeat is refused while tracing with :class:`~vyre.errors.TraceError` (and nothing
is cached): reading values on the host (so Python control flow cannot depend on array data),
host-in/host-out dispatches, resident work on another backend. Arrays the function closes over are bound
as they are (their current contents are read at each call); if one of them is collected or gets a new
buffer, the next call traces again. An argument the function assigns into (``x[...] = v``) gets the new
contents on replay too.

Inside another traced function a compiled function runs inline (its work joins the outer trace).
"""

from __future__ import annotations

import functools
import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Any, Generic, TypeVar, overload

from ..array._array import Array
from ..array._creation import asarray
from ..array._device import current_backend
from ..array._kernels.fused import evaluate
from ..backends import recording
from ..errors import DeviceLostError, DeviceMismatchError, StaleCaptureError, TraceError
from .replay import Replay, build
from .signature import arguments, flatten, unflatten

R = TypeVar("R")

#: Signatures kept per compiled function (least recently used dropped first, with their buffers).
CACHE_SIZE = 64


class _Entry:
    __slots__ = ("replay", "struct")

    def __init__(self, replay: Replay, struct: Any) -> None:
        self.replay, self.struct = replay, struct


class Compiled(Generic[R]):
    """A function compiled with :func:`compile`: call it like the function. ``traces``: how many times it
    was traced; ``replays``: calls served by a replay; :meth:`explain`: the captured steps."""

    def __init__(self, fn: Callable[..., R], device: Any = None) -> None:
        if not callable(fn):
            raise TraceError(f"vyre.compile: {fn!r} is not callable", fix="pass a function")
        functools.update_wrapper(self, fn)
        self._name: str = getattr(fn, "__name__", type(fn).__name__)
        self._fn = fn
        self._device = device
        self._cache: OrderedDict[Any, _Entry] = OrderedDict()
        self._lock = threading.RLock()
        self.traces = 0
        self.replays = 0

    def __call__(self, *args: Any, **kwargs: Any) -> R:
        if recording.active() is not None:  # inside another trace: inline, so the outer trace records it
            return self._fn(*args, **kwargs)
        key, dev, leaves, args, kwargs = self._signature(args, kwargs)
        with self._lock:
            entry = self._cache.get(key)
            if entry is not None:
                self._cache.move_to_end(key)
        if entry is not None:
            try:
                out = self._replay(entry, leaves)
                with self._lock:
                    self.replays += 1
                return out
            except (StaleCaptureError, DeviceLostError):  # a closed-over buffer went away, or the device did
                with self._lock:
                    if self._cache.get(key) is entry:
                        del self._cache[key]
                entry.replay.free()
        return self._trace(key, dev, leaves, args, kwargs)

    # ---- the two paths ------------------------------------------------------------------------------
    def _signature(self, args: tuple[Any, ...], kwargs: dict[str, Any]
                   ) -> tuple[Any, Any, list[Array], tuple[Any, ...], dict[str, Any]]:
        if not kwargs and args and all(type(a) is Array for a in args):  # the common call: arrays only
            leaves = list(args)
            dev = self._device if self._device is not None else leaves[0]._device
            if all(a._device is dev and a._expr is None and a._buf is not None and a._buf.pending is None
                   for a in leaves):
                seen: dict[int, int] = {}
                key = (("tuple", tuple(("A", a._shape, a._dtype, id(dev)) for a in leaves)), ("dict", ()))
                alias = tuple(seen.setdefault(id(a._buf), k) for k, a in enumerate(leaves))
                return (key, alias, id(dev)), dev, leaves, args, kwargs
        dev = self._device
        if dev is None:
            probe: list[Array] = []
            flatten_quiet(args, probe)
            dev = probe[0].device if probe else current_backend()
        key, leaves, args, kwargs = arguments(args, kwargs, lambda h: asarray(h, device=dev))
        for a in leaves:
            if a.device is not dev:
                raise DeviceMismatchError(f"vyre.compile({self._name}): arguments on two backends "
                                          f"({dev!r} and {a.device!r})", fix="move one with x.to_device(...)")
        evaluate(leaves)  # pending arguments: computed first (one submission), so each is one buffer
        first: dict[int, int] = {}
        alias = tuple(first.setdefault(id(a._buf), k) for k, a in enumerate(leaves))  # one array passed twice
        return (key, alias, id(dev)), dev, leaves, args, kwargs

    def _replay(self, entry: _Entry, leaves: list[Array]) -> R:
        outs, news = entry.replay.run(leaves)
        for (k, _), new in zip(entry.replay.updates, news):  # the argument's new contents, as eagerly
            a = leaves[k]
            a._buf, a._expr = new._buf, None
        return unflatten(entry.struct, outs, [0])  # type: ignore[no-any-return]

    def _trace(self, key: Any, dev: Any, leaves: list[Array], args: tuple[Any, ...], kwargs: dict[str, Any]) -> R:
        start = [a._storage() for a in leaves]
        bufs = [a._buf for a in leaves]
        with recording.recording(dev) as rec:
            out = self._fn(*args, **kwargs)
            results: list[Array] = []
            struct = flatten(out, results, "result")
            changed = [k for k, a in enumerate(leaves) if a._buf is not bufs[k] or a.is_lazy]
            kept = _kept_state(rec, start)
            evaluate([*results, *(leaves[k] for k in changed), *(a for a, _ in kept)])
        # an argument written in place (x[...] = v, a kernel's InOut): on replay it gets the new contents too
        hit = {h.id for ev in rec.events if ev[0] == "step"
               for h, w in zip(ev[1].handles, recording.written(ev[1])) if w}
        changed += [k for k, h in enumerate(start) if h.id in hit and k not in changed]
        for r in results:
            if r.device is not dev:
                raise TraceError(f"vyre.compile({self._name}): a result lives on {r.device!r}, not {dev!r}",
                                 fix="return arrays of the arguments' backend")
        kept = [(a, old) for a, old in kept if a._buf is not old]
        replay = build(rec, start, [(r._storage(), r.shape, r.dtype) for r in results],
                       [(k, leaves[k]._storage()) for k in changed],
                       [(a._storage(), old.handle) for a, old in kept])
        _write_back(dev, kept)
        dropped: list[Replay] = []
        with self._lock:
            self.traces += 1
            if key in self._cache:  # another thread traced this signature meanwhile: keep the one in use
                dropped.append(replay)
            else:
                self._cache[key] = _Entry(replay, struct)
                while len(self._cache) > CACHE_SIZE:
                    dropped.append(self._cache.popitem(last=False)[1].replay)
        for rp in dropped:
            rp.free()
        return out

    # ---- inspection -------------------------------------------------------------------------------
    def explain(self, *args: Any, **kwargs: Any) -> str:
        """The captured steps: of the signature of ``args`` (traced now if it is new: the function runs
        once), else of every signature traced so far."""
        if args or kwargs:
            key = self._signature(args, kwargs)[0]
            if key not in self._cache:
                self(*args, **kwargs)
            entries = [self._cache[key]]
        else:
            entries = list(self._cache.values())
        if not entries:
            return f"{self._name}: not traced yet"
        return "\n".join(f"{self._name} signature {k}: " + e.replay.explain() for k, e in enumerate(entries))

    def clear(self) -> None:
        """Drop every trace (and the buffers they own)."""
        with self._lock:
            entries = list(self._cache.values())
            self._cache.clear()
        for e in entries:
            e.replay.free()

    def __repr__(self) -> str:
        return f"<vyre.compile({self._name}): {len(self._cache)} signature(s), {self.traces} trace(s)>"


def _kept_state(rec: recording.Recorder, start: list[Any]) -> list[tuple[Array, Any]]:
    """Closed-over arrays that got a new buffer while traced (``(array, old Buffer)``): an optimizer's
    parameters and state, ``x += y`` on a global. Arrays made during the trace and the arguments (their
    updates are copied out) are not among them."""
    made = {ev[1].id for ev in rec.events if ev[0] == "alloc"} | {h.id for h in start}
    return [(a, old) for a, old in rec.rebinds.values()
            if type(a) is Array and old.handle.id not in made and a.size]


def _write_back(dev: Any, kept: list[tuple[Array, Any]]) -> None:
    """Give each kept array its old buffer back with the new contents, so the buffer the trace bound stays
    the array's (a replay writes the same buffer: see Replay.state)."""
    if not kept:
        return
    from ..array._kernels.fused import Plan
    from ..array._kernels.gather import copy_step
    p = Plan(dev)
    for a, old in kept:
        copy_step(p, a._storage(), old.handle, a.size, a.dtype)
    with recording.paused():
        p.run()
    for a, old in kept:
        a._buf, a._expr = old, None


def flatten_quiet(tree: Any, out: list[Array]) -> None:
    """The vyre arrays in ``tree`` (tuples, lists, dicts), ignoring everything else."""
    t = type(tree)
    if t is Array:
        out.append(tree)
    elif t is tuple or t is list:
        for x in tree:
            flatten_quiet(x, out)
    elif t is dict:
        for x in tree.values():
            flatten_quiet(x, out)


@overload
def compile(fn: Callable[..., R], /, *, device: Any = None) -> Compiled[R]: ...


@overload
def compile(fn: None = None, /, *, device: Any = None) -> Callable[[Callable[..., R]], Compiled[R]]: ...


def compile(fn: Callable[..., R] | None = None, /, *, device: Any = None
            ) -> Compiled[R] | Callable[[Callable[..., R]], Compiled[R]]:
    """Trace ``fn`` once per signature and replay it as one submission (see the module doc). Use it as
    ``step = vyre.compile(step)``, ``@vyre.compile`` or ``@vyre.compile(device=backend)`` (the backend of
    calls without array arguments; else the arguments' backend, else the current one)."""
    if fn is None:
        return lambda f: Compiled(f, device)
    return Compiled(fn, device)


__all__ = ["compile", "Compiled"]
