"""Resident buffers of the reference backend: numpy byte arrays on the host, named by handles.

The same contract as the GPU's resident buffers (vyre/backends/wgpu/resident.py and
sequence.py), checked the same way and with the same typed errors:

* a :class:`~vyre.backends.handles.ResidentHandle` names one zero-filled uint8 array owned by
  the backend (sizes are positive multiples of 4 bytes); the handle's ``owner`` is the
  store's id (negative, so never equal to a GPU backend's), so a foreign handle is refused,
  and a freed one raises DispatchError. There is no device to lose: ``generation`` is 0;
* uploads: offsets and sizes are multiples of 4 bytes; downloads: any byte range;
* ``dispatch_resident`` plans with :func:`vyre.backends.host.plan_resident`, runs the
  interpreter over the storage bytes (writable buffers on copies, written back when the
  program finished, so a failing program leaves them unchanged) and never clears ``write``
  buffers, like the GPU;
* sequences run their steps in order after every step and every range was checked (a step
  that fails at run time, e.g. over the loop limit, leaves the earlier steps' writes).

Every method runs under the store's lock, so a backend may be shared by threads.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import DispatchError, StaleCaptureError
from ..ir.program import Program
from .captured import HandleCopy, check_copies
from .config import DispatchConfig
from .handles import ResidentHandle
from .host import DispatchPlan, as_u8, check_outs, storage_dtype
from .plan_checks import check_resident_bindings
from .planning import UNIFORM_MIN, PlanLimits, plan_step

_IDS = itertools.count(1)
_OWNERS = itertools.count(-1, -1)  # negative: GPU backends count their owner ids up from 1
_DEFAULT_CONFIG = DispatchConfig()

#: Largest uniform binding (bytes), as on WebGPU by default (the validator checks declared ones).
UNIFORM_LIMIT = UNIFORM_MIN


def as_config(config: Any) -> DispatchConfig:
    """``config`` as a DispatchConfig (None: the default); anything invalid raises DispatchError."""
    return DispatchConfig.coerce(config) or _DEFAULT_CONFIG


def _int(value: Any, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise DispatchError(f"{what} must be an int, got {value!r}")
    return int(value)


def _step_config(extra: Any, what: str) -> DispatchConfig:
    """The config of a sequence step from its optional third element (a grid or a DispatchConfig)."""
    return DispatchConfig.coerce(extra, what) or _DEFAULT_CONFIG


@dataclass
class PreparedStep:
    """One checked resident dispatch: its plan and the byte array of each buffer (binding order)."""

    plan: DispatchPlan
    raws: list[np.ndarray]


class HostResidentStore:
    """The resident buffers of one reference backend.

    ``validate(program)`` raises for an invalid program; ``execute(plan, arrays)`` runs a
    plan's program over storage arrays (one per buffer name, modified in place).
    ``max_buffer_bytes`` bounds allocations and storage bindings.
    """

    def __init__(self, validate: Callable[[Program], None],
                 execute: Callable[[DispatchPlan, dict[str, np.ndarray]], None], max_buffer_bytes: int):
        self._validate = validate
        self._execute = execute
        self.max_buffer_bytes = int(max_buffer_bytes)
        self._limits = PlanLimits(max_storage_bytes=self.max_buffer_bytes)
        self.owner = next(_OWNERS)
        self._entries: dict[int, np.ndarray] = {}
        self._lock = threading.RLock()
        self.nbytes = 0

    @property
    def handles(self) -> int:
        """Number of live handles."""
        return len(self._entries)

    # ---- handles -----------------------------------------------------------------------
    def buffer(self, h: Any, what: str) -> np.ndarray:
        """The bytes of a live handle of this store; DispatchError otherwise."""
        if not isinstance(h, ResidentHandle):
            raise DispatchError(f"{what}: expected a ResidentHandle, got {type(h).__name__}",
                                fix="pass a handle returned by backend.allocate_resident(nbytes)")
        if h.owner != self.owner:
            raise DispatchError(f"{what}: resident handle {h.id} belongs to another backend",
                                fix="use handles with the backend that allocated them")
        raw = self._entries.get(h.id)
        if raw is None:
            raise DispatchError(f"{what}: resident handle {h.id} was freed", fix="allocate a new handle")
        return raw

    def byte_range(self, item: Any, what: str) -> tuple[np.ndarray, int, int]:
        """``handle`` or ``(handle, offset, nbytes)`` -> (bytes, offset, nbytes), bounds-checked."""
        if isinstance(item, ResidentHandle):
            return self.buffer(item, what), 0, item.nbytes
        if not isinstance(item, (tuple, list)) or len(item) != 3:
            raise DispatchError(f"{what}: expected a handle or (handle, offset, nbytes), got {item!r}")
        h, offset, nbytes = item
        raw = self.buffer(h, what)
        offset, nbytes = _int(offset, f"{what}: offset"), _int(nbytes, f"{what}: nbytes")
        if offset < 0 or nbytes < 0 or offset + nbytes > h.nbytes:
            raise DispatchError(f"{what}: range [{offset}, {offset + nbytes}) is outside resident handle {h.id} "
                                f"of {h.nbytes} bytes", fix="read inside the handle's bytes")
        return raw, offset, nbytes

    def allocate(self, nbytes: Any, label: str | None = None) -> ResidentHandle:
        """A new zero-filled buffer of ``nbytes`` bytes (a positive multiple of 4, within the limit)."""
        nbytes = _int(nbytes, "allocate_resident: nbytes")
        if nbytes <= 0 or nbytes % 4:
            raise DispatchError(f"allocate_resident: nbytes must be a positive multiple of 4, got {nbytes}",
                                fix="round the size up to a multiple of 4 bytes")
        if nbytes > self.max_buffer_bytes:
            raise DispatchError(f"allocate_resident: {nbytes} bytes is over the reference backend's buffer size "
                                f"limit of {self.max_buffer_bytes} bytes", fix="split the data over several handles")
        raw = np.zeros(nbytes, dtype=np.uint8)
        with self._lock:
            h = ResidentHandle(next(_IDS), nbytes, 0, self.owner)
            self._entries[h.id] = raw
            self.nbytes += nbytes
            return h

    def free(self, handle: Any) -> None:
        """Release a buffer; a freed, foreign or non-handle raises DispatchError."""
        with self._lock:
            self.buffer(handle, "free_resident")
            del self._entries[handle.id]
            self.nbytes -= handle.nbytes

    # ---- transfers -------------------------------------------------------------------------
    def upload_many(self, uploads: Iterable[Any]) -> None:
        """``(handle, data[, offset])`` items; all checked, then all written."""
        with self._lock:
            items = []
            for k, up in enumerate(uploads):
                what = f"upload {k}"
                if not isinstance(up, (tuple, list)) or len(up) not in (2, 3):
                    raise DispatchError(f"{what}: expected (handle, data, offset), got {up!r:.200}")
                h, data = up[0], up[1]
                offset = _int(up[2], f"{what}: offset") if len(up) == 3 else 0
                raw = self.buffer(h, what)
                src = as_u8(data, what)
                if offset % 4 or src.nbytes % 4:
                    raise DispatchError(f"{what}: offset {offset} and size {src.nbytes} must be multiples of 4 bytes",
                                        fix="pad the data to a multiple of 4 bytes")
                if offset < 0 or offset + src.nbytes > h.nbytes:
                    raise DispatchError(f"{what}: {src.nbytes} bytes at offset {offset} do not fit in resident "
                                        f"handle {h.id} of {h.nbytes} bytes",
                                        fix="allocate a larger handle or upload less")
                items.append((raw, offset, src))
            for raw, offset, src in items:
                raw[offset: offset + src.nbytes] = src

    def download_ranges(self, ranges: Iterable[Any],
                        outs: Iterable[np.ndarray | None] | None = None) -> list[np.ndarray]:
        """Each handle or ``(handle, offset, nbytes)`` as a new uint8 array, or copied into ``outs[k]``."""
        with self._lock:
            reads = [self.byte_range(r, f"range {k}") for k, r in enumerate(ranges)]
            targets = check_outs(outs, [n for _, _, n in reads]) or [None] * len(reads)
            result = []
            for (raw, offset, n), target in zip(reads, targets):
                src = raw[offset: offset + n]
                if target is None:
                    result.append(src.copy())
                else:
                    target.reshape(-1).view(np.uint8)[:] = src
                    result.append(target)
            return result

    # ---- dispatch --------------------------------------------------------------------------
    def prepare(self, program: Any, handles: Any, config: DispatchConfig, what: str) -> PreparedStep:
        """Check one resident dispatch completely (nothing runs)."""
        if not isinstance(program, Program):
            raise DispatchError(f"{what}: expected a vyre Program, got {type(program).__name__}",
                                fix="build one with vyre.ProgramBuilder(...).build()")
        if isinstance(handles, ResidentHandle) or not isinstance(handles, (list, tuple)):
            raise DispatchError(f"{what}: handles must be a list of ResidentHandle (one per buffer), "
                                f"got {handles!r:.200}",
                                fix="pass [handle, ...] with one handle per program buffer, in binding order")
        raws = [self.buffer(h, what) for h in handles]
        self._validate(program)
        # the limits every adapter has: a dispatch no GPU could run is refused here too
        plan = plan_step(program, None, config, self._limits, sizes=[h.nbytes for h in handles], what=what).plan
        ids = [h.id for h in handles]
        if len(set(ids)) != len(ids):  # a handle bound twice: refused when one of its bindings is writable
            check_resident_bindings(plan, ids, UNIFORM_LIMIT, what)
        return PreparedStep(plan, raws)

    def run(self, step: PreparedStep) -> None:
        """Run a prepared dispatch: writable buffers on copies, written back once it finished."""
        plan = step.plan
        if plan.total_workgroups == 0:
            return
        arrays: dict[str, np.ndarray] = {}
        back = []
        for b, raw in zip(plan.buffers, step.raws):
            view = raw[: b.nbytes].view(storage_dtype(b.decl.dtype))
            if b.is_output:
                arrays[b.decl.name] = view.copy()
                back.append((view, arrays[b.decl.name]))
            else:
                ro = view.view()
                ro.flags.writeable = False
                arrays[b.decl.name] = ro
        self._execute(plan, arrays)
        for view, data in back:
            view[:] = data

    def dispatch(self, program: Any, handles: Any, config: Any = None) -> None:
        """``Backend.dispatch_resident``."""
        config = as_config(config)
        with self._lock:
            name = getattr(program, "name", type(program).__name__)
            self.run(self.prepare(program, handles, config, f"dispatch_resident({name})"))

    def _prepare_all(self, steps: Any) -> list[PreparedStep]:
        if isinstance(steps, tuple) and len(steps) in (2, 3) and not isinstance(steps[0], (tuple, list)):
            raise DispatchError("steps must be a list of (program, handles[, grid]) steps, got one step",
                                fix="wrap the step in a list: [(program, handles)]")
        prepared = []
        for k, step in enumerate(steps):
            where = f"step {k}"
            if not isinstance(step, (tuple, list)) or len(step) not in (2, 3):
                raise DispatchError(f"{where}: expected (program, handles) or (program, handles, grid), "
                                    f"got {step!r:.200}")
            config = _step_config(step[2] if len(step) == 3 else None, where)
            prepared.append(self.prepare(step[0], step[1], config, where))
        return prepared

    def capture(self, steps: Any, clears: Sequence[ResidentHandle]) -> HostCaptured:
        """``Backend.capture_resident_sequence``."""
        with self._lock:
            prepared = self._prepare_all(steps)
            return HostCaptured(self, prepared, [h for s in steps for h in s[1]], list(clears))

    def sequence(self, steps: Any, read: Any = None) -> list[np.ndarray]:
        """``Backend.dispatch_resident_sequence``: every step and range checked, steps run in order, reads."""
        with self._lock:
            prepared = self._prepare_all(steps)
            reads = [] if read is None else [self.byte_range(r, f"read {k}") for k, r in enumerate(read)]
            for p in prepared:
                self.run(p)
            return [raw[offset: offset + n].copy() for raw, offset, n in reads]


class HostCaptured:
    """A captured sequence of the reference backend (vyre/backends/captured.py): steps prepared once; a replay
    re-checks only that every handle they bind is still live (freeing one makes it StaleCaptureError)."""

    def __init__(self, store: HostResidentStore, prepared: list[PreparedStep], handles: list[ResidentHandle],
                 clears: list[ResidentHandle]) -> None:
        self._store, self._prepared = store, prepared
        self._handles = list({h.id: h for h in handles}.values())
        self._clears = [store.buffer(h, f"clear {k}") for k, h in enumerate(clears)]
        self._clear_handles = clears

    @property
    def steps(self) -> int:
        return len(self._prepared)

    def run(self, *, writes: Sequence[tuple[ResidentHandle, Any]] = (), before: Sequence[HandleCopy] = (),
            after: Sequence[HandleCopy] = (), read: Sequence[Any] | None = None) -> list[np.ndarray]:
        store = self._store
        with store._lock:
            for h in (*self._handles, *self._clear_handles):
                if h.id not in store._entries:
                    raise StaleCaptureError(f"captured sequence: resident handle {h.id} it binds was freed after "
                                            "the capture", fix="capture again; keep the handles it binds alive")
            check_copies(before, "before")
            check_copies(after, "after")
            pairs_before = [(store.buffer(s, f"before copy {k}"), store.buffer(d, f"before copy {k}"))
                            for k, (s, d) in enumerate(before)]
            pairs_after = [(store.buffer(s, f"after copy {k}"), store.buffer(d, f"after copy {k}"))
                           for k, (s, d) in enumerate(after)]
            reads = [] if read is None else [store.byte_range(r, f"read {k}") for k, r in enumerate(read)]
            if writes:
                store.upload_many(writes)
            for src, dst in pairs_before:
                dst[:] = src
            for raw in self._clears:
                raw[:] = 0
            for p in self._prepared:
                store.run(p)
            for src, dst in pairs_after:
                dst[:] = src
            return [raw[offset: offset + n].copy() for raw, offset, n in reads]


__all__ = ["HostResidentStore", "HostCaptured", "PreparedStep", "as_config", "UNIFORM_LIMIT"]
