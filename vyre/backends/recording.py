"""Recording the resident work a function does, for vyre.compile (vyre/trace/).

While a :class:`Recorder` is active (``with recording(backend) as rec:``, a context variable: other
threads and tasks are not recorded), every resident call on that backend is also written down:
allocations (with whether they were zero-filled), params handles, uploads and dispatched steps, in
order. The calls still run: the traced call computes its results eagerly. What a replay could not
reproduce is refused with :class:`~vyre.errors.TraceError` before it runs: reading values back to the
host (they could steer Python control flow), host-in/host-out dispatches (their results would be
baked into the trace), timed sequences, resident work on another backend.

:func:`recordable` installs the hooks on a backend class (both of vyre's backends use it), so every
front end that reaches the backend -- arrays, ``@vyre.kernel`` launches, op pipelines on arrays -- is
seen without knowing about tracing. With no recorder active a hook costs one context-variable read.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

import numpy as np

from ..errors import TraceError
from ..ir.program import Program
from .config import DispatchConfig
from .handles import ResidentHandle

_active: contextvars.ContextVar[Recorder | None] = contextvars.ContextVar("vyre_recorder", default=None)


@dataclass(frozen=True, slots=True)
class Step:
    """One recorded dispatch: program, handles (binding order), config (None: the default)."""

    program: Program
    handles: tuple[ResidentHandle, ...]
    config: DispatchConfig | None


@dataclass(slots=True)
class Recorder:
    """What one traced call did on ``backend``, in order (``events``: ``("alloc", handle, zeroed)``,
    ``("upload", handle, bytes, offset)``, ``("step", Step)``); ``params``: ids of params handles seen,
    ``words``: their words."""

    backend: Any
    events: list[tuple[Any, ...]] = field(default_factory=list)
    params: set[int] = field(default_factory=set)
    words: dict[int, bytes] = field(default_factory=dict)  # params handle id -> its words (vyre.export reads them)
    depth: int = 0  # > 0 inside a hooked call: a backend method calling another is recorded once
    # id(array) -> (array, its buffer object before the first rebinding in this call): arrays that got a
    # new buffer while traced (in-place operators, an optimizer's update); vyre.compile writes the new
    # contents back into the old buffers of the arrays it closed over, so a replay can too
    rebinds: dict[int, tuple[Any, Any]] = field(default_factory=dict)

    def refuse(self, what: str, why: str, fix: str) -> None:
        raise TraceError(f"vyre.compile: {what} inside a traced function {why}", fix=fix)

    def _same(self, backend: Any, what: str) -> None:
        if backend is not self.backend:
            self.refuse(f"{what} on {backend!r}", f"(traced on {self.backend!r}) would not be replayed",
                        "keep a compiled function's arrays on one backend (x.to_device(...) outside it)")


def active() -> Recorder | None:
    """The recorder of this thread or task, if any."""
    return _active.get()


def rebinding(obj: Any, old: Any) -> None:
    """``obj`` (an array) is about to give up its buffer object ``old`` for another: noted once per traced
    call (the first ``old`` is the one that matters)."""
    rec = _active.get()
    if rec is not None and old is not None:
        rec.rebinds.setdefault(id(obj), (obj, old))


@contextlib.contextmanager
def recording(backend: Any) -> Iterator[Recorder]:
    """Record the resident work done on ``backend`` inside the block (this thread or task only)."""
    rec = Recorder(backend)
    token = _active.set(rec)
    try:
        yield rec
    finally:
        _active.reset(token)


@contextlib.contextmanager
def paused() -> Iterator[None]:
    """Nothing inside the block is recorded (a replay's own work, the trace's bookkeeping)."""
    token = _active.set(None)
    try:
        yield
    finally:
        _active.reset(token)


def _steps(steps: Any) -> list[Step]:
    out = []
    for s in steps:
        extra = s[2] if len(s) == 3 else None
        out.append(Step(s[0], tuple(s[1]), DispatchConfig.coerce(extra)))
    return out


F = TypeVar("F", bound=Callable[..., Any])


def _hook(before: Callable[..., None] | None = None, after: Callable[..., None] | None = None
          ) -> Callable[[F], F]:
    def wrap(fn: F) -> F:
        @functools.wraps(fn)
        def method(self: Any, *args: Any, **kwargs: Any) -> Any:
            rec = _active.get()
            if rec is None or rec.depth:
                return fn(self, *args, **kwargs)
            if before is not None:
                before(rec, self, *args, **kwargs)
            rec.depth += 1
            try:
                out = fn(self, *args, **kwargs)
            finally:
                rec.depth -= 1
            if after is not None:
                after(rec, self, out, *args, **kwargs)
            return out
        return method  # type: ignore[return-value]
    return wrap


def _on_alloc(rec: Recorder, be: Any, h: ResidentHandle, nbytes: int, label: str | None = None, *,
              zeroed: bool = True) -> None:
    rec._same(be, "allocate_resident")
    rec.events.append(("alloc", h, bool(zeroed)))


def _on_params(rec: Recorder, be: Any, h: ResidentHandle, words: Any) -> None:
    rec._same(be, "params_handle")
    rec.params.add(h.id)
    rec.words[h.id] = words if isinstance(words, bytes) else np.ascontiguousarray(words).tobytes()


def _on_upload(rec: Recorder, be: Any, handle: ResidentHandle, data: Any, offset: int = 0) -> None:
    _on_upload_many(rec, be, [(handle, data, offset)])


def _on_upload_many(rec: Recorder, be: Any, uploads: Any) -> None:
    rec._same(be, "upload_resident")
    for up in uploads:  # checked by the call itself (after this); bytes copied: the caller may reuse its array
        raw = np.array(np.frombuffer(memoryview(up[1]).cast("B"), np.uint8)) if not isinstance(up[1], np.ndarray) \
            else np.ascontiguousarray(up[1]).reshape(-1).view(np.uint8).copy()
        rec.events.append(("upload", up[0], raw, int(up[2]) if len(up) == 3 else 0))


def _on_read(rec: Recorder, be: Any, *args: Any, **kwargs: Any) -> None:
    rec.refuse("reading array values on the host (float(x), bool(x), int(x), np.asarray(x), x.tolist(), "
               "or a function whose result shape depends on the data: nonzero, unique, boolean indexing)",
               "would make the trace depend on the data, which a replay does not see",
               "keep data-dependent Python outside the compiled function, or compute the branch with "
               "vyre.array.where; return the values and read them after the call")


def _on_host(name: str) -> Callable[..., None]:
    def refuse(rec: Recorder, be: Any, *args: Any, **kwargs: Any) -> None:
        rec.refuse(f"backend.{name} (host inputs, host results)", "would run once at trace time and never "
                   "again on replay", "call it outside the compiled function, or use vyre.array arrays "
                   "(and vyre.array.run_pipeline_on for op pipelines)")
    return refuse


def _on_step(rec: Recorder, be: Any, program: Program, handles: Any, config: Any = None) -> None:
    rec._same(be, "dispatch_resident")
    rec.events.append(("step", Step(program, tuple(handles), DispatchConfig.coerce(config))))


def _on_sequence(rec: Recorder, be: Any, steps: Any, read: Any = None) -> None:
    rec._same(be, "dispatch_resident_sequence")
    if read:
        _on_read(rec, be)
    rec.events.extend(("step", s) for s in _steps(steps))


def _on_repeated(rec: Recorder, be: Any, prefix: Any, repeated: Any, repeat_count: int, read: Any = None) -> None:
    rec._same(be, "dispatch_resident_repeated_sequence")
    if read:
        _on_read(rec, be)
    body = _steps(repeated)
    rec.events.extend(("step", s) for s in [*_steps(prefix), *(body * int(repeat_count))])


_HOST = ("dispatch", "dispatch_batch", "dispatch_async", "dispatch_timed", "dispatch_wgsl", "dispatch_compiled",
         "run_pipeline", "dispatch_resident_sequence_timed", "capture_resident_sequence")
_READS = ("download_resident", "download_resident_range", "download_resident_ranges")

C = TypeVar("C", bound=type)


def recordable(cls: C) -> C:
    """Install the recording hooks on a backend class's resident methods (the ones it defines)."""
    table: dict[str, tuple[Callable[..., None] | None, Callable[..., None] | None]] = {
        "allocate_resident": (None, _on_alloc),
        "params_handle": (None, _on_params),
        "upload_resident": (_on_upload, None),
        "upload_resident_many": (_on_upload_many, None),
        "dispatch_resident": (_on_step, None),
        "dispatch_resident_sequence": (_on_sequence, None),
        "dispatch_resident_repeated_sequence": (_on_repeated, None),
        **{n: (_on_read, None) for n in _READS},
        **{n: (_on_host(n), None) for n in _HOST},
    }
    for name, (before, after) in table.items():
        fn = cls.__dict__.get(name)
        if fn is not None:
            setattr(cls, name, _hook(before, after)(fn))
    return cls


def written(step: Step) -> list[bool]:
    """Per handle of ``step``, whether its binding is writable."""
    decls: Sequence[Any] = step.program.sorted_buffers
    return [d.access.writable for d in decls]


__all__ = ["Recorder", "Step", "active", "recording", "paused", "recordable", "written"]
