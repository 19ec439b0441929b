"""The ResidentStore part of the wgpu backend: resident buffers the caller owns through handles.

A :class:`~vyre.backends.handles.ResidentHandle` names one device buffer (STORAGE | UNIFORM |
COPY_SRC | COPY_DST, so any binding kind can use it). Uploads and downloads are Work for the
executor: writes (any number of uploads in one staging operation) and reads (every requested
range copied into the readback buffer in one encoder, mapped once).

:meth:`ResidentStore.step` checks one dispatch over handles and gives its
:class:`~.work.Dispatch`: its plan comes from the backend's one plan memo
(:class:`~vyre.backends.planning.StepMemo`), the hidden params uniform from
:class:`~.bindings.Bindings`, and bind groups are cached per (pipeline, buffers, params), so a
repeated dispatch creates no GPU object. :meth:`ResidentStore.params_handle` gives the front ends
a handle on the same shared params buffers (scalars of an array evaluation, a kernel's dims).

Handles carry the device generation they were made on: after a device loss (and after
``try_recover``) an old handle raises DeviceLostError, never reads garbage. Callers hold the
device lock. Resident dispatches, sequences and op pipelines are built in sequence.py and
pipeline_run.py.
"""

from __future__ import annotations

import itertools
from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from ...errors import DeviceLostError, DispatchError
from ...ir.program import Program
from ..config import DispatchConfig
from ..handles import ResidentHandle
from ..host import as_u8, check_outs
from ..plan_checks import check_resident_bindings
from ..planning import StepMemo
from .bindings import Bindings
from .device import Device
from .failures import gpu_errors
from .pipeline_store import PipelineStore
from .pipelines import CompiledPipeline
from .transfer import Stats, align
from .types import GPUBindGroup, GPUBuffer
from .work import Dispatch, Read, Work, Write

if TYPE_CHECKING:  # why: annotations only; pipeline_run.py imports this module
    from .pipeline_run import Schedule

_IDS = itertools.count(1)
#: Params handles kept (their buffers are Bindings.params's; see params_handle).
PARAMS_HANDLES = 256
_OWNERS = itertools.count(1)
BIND_CACHE_CAP = 1024

#: What names a resident buffer in a bind-group key: its buffer serial, or ("params", id(buffer)) for a shared
#: params buffer (those have no serial).
Serial = int | tuple[str, int]
#: A bind-group cache key: (pipeline key, buffer per binding, handle sizes, params words).
BindKey = tuple[tuple[Any, ...], tuple[Serial, ...], tuple[int, ...], bytes]
#: An op pipeline's shape: (name, dtype, count) per buffer, sorted.
PipelineShape = tuple[tuple[str, str, int], ...]


@dataclass
class ResidentState:
    """Resident state of one device generation (dropped as a whole when the device changes)."""

    generation: int
    limits: dict[str, int]
    # handle id -> (handle, GPUBuffer, buffer serial)
    entries: dict[int, tuple[ResidentHandle, GPUBuffer, int]] = field(default_factory=dict)
    # params words -> the handle params_handle gave for them; the buffer is Bindings.params(words)'s
    params: OrderedDict[bytes, ResidentHandle] = field(default_factory=OrderedDict)
    params_ids: dict[int, bytes] = field(default_factory=dict)  # handle id -> words, of those handles
    # (pipeline key, buffer serials, handle sizes, words) -> (compiled, groups); keyed by the buffers, not the
    # handles, so a loop whose results reuse freed buffers (see ``spare``) finds its bind groups again
    binds: OrderedDict[BindKey, tuple[CompiledPipeline, tuple[GPUBindGroup, ...]]] = field(default_factory=OrderedDict)
    # buffer serial -> the keys of ``binds`` that bind it
    bind_keys: dict[Serial, set[BindKey]] = field(default_factory=dict)
    steps: StepMemo = field(default_factory=StepMemo)  # the plans of resident dispatches
    # op-pipeline shape -> {name: handle}
    pipelines: OrderedDict[PipelineShape, dict[str, ResidentHandle]] = field(default_factory=OrderedDict)
    schedules: OrderedDict[int, Schedule] = field(default_factory=OrderedDict)  # id(op pipeline) -> its schedule
    contents: dict[int, bytes] = field(default_factory=dict)  # handle id -> bytes an op pipeline last wrote there
    nbytes: int = 0
    # aligned size -> freed (GPUBuffer, serial) kept for reuse
    spare: dict[int, list[tuple[GPUBuffer, int]]] = field(default_factory=dict)
    spare_bytes: int = 0
    frees: int = 0  # handles freed so far: a captured sequence re-checks its handles when this moved

    def forget_binds(self, serial: int) -> None:
        """Drop the bind groups of a buffer that is being destroyed."""
        for key in self.bind_keys.pop(serial, ()):
            self.binds.pop(key, None)


#: Freed resident buffers are kept (up to SPARE_PER_SIZE of one size, SPARE_CAP bytes in all) and handed to
#: the next allocation of the same size, cleared unless the caller will overwrite it (``zeroed=False``):
#: creating a 256 MiB buffer costs 8.4 ms on the H200 (Vulkan), clearing it 0.07 ms; and a reused buffer
#: keeps its bind groups. Arrays allocate a result per evaluation, like torch's caching allocator.
SPARE_CAP = 1 << 30
SPARE_PER_SIZE = 16
#: Reused buffers up to this size are zeroed with queue.write_buffer (one call), larger ones by a GPU clear.
ZERO_BY_WRITE = 256 << 10
_SERIALS = itertools.count(1)


def as_int(value: object, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise DispatchError(f"{what} must be an int, got {value!r}")
    return int(value)


def _pad4(d: np.ndarray) -> np.ndarray:
    """``d`` (uint8) zero-padded to a multiple of 4 bytes: copies and writes move whole words."""
    if d.nbytes % 4 == 0:
        return d
    out = np.zeros(align(d.nbytes, 4), dtype=np.uint8)
    out[: d.nbytes] = d
    return out


class ResidentStore:
    """Handles and their buffers on the current device, and the bind groups of dispatches over them."""

    def __init__(self, dev: Device, store: PipelineStore, bindings: Bindings, stats: Stats) -> None:
        self._dev = dev
        self._store = store
        self._bindings = bindings
        self._stats = stats
        self.owner = next(_OWNERS)
        self._state: ResidentState | None = None

    def state(self) -> ResidentState:
        """The resident state of the current device (a fresh one after a device change); checks it is alive."""
        dev = self._dev
        dev.check_alive()
        st = self._state
        if st is None or st.generation != dev.generation:
            limits = {str(k): int(v) for k, v in dict(dev.limits).items() if isinstance(v, (int, np.integer))}
            st = self._state = ResidentState(dev.generation, limits)
        return st

    @property
    def nbytes(self) -> int:
        st = self._state
        return st.nbytes if st is not None and st.generation == self._dev.generation else 0

    @property
    def handles(self) -> int:
        st = self._state
        return len(st.entries) if st is not None and st.generation == self._dev.generation else 0

    def buffer(self, st: ResidentState, h: object, what: str) -> GPUBuffer:
        """The device buffer of a live handle; DeviceLostError for a stale one, DispatchError otherwise."""
        if not isinstance(h, ResidentHandle):
            raise DispatchError(f"{what}: expected a ResidentHandle, got {type(h).__name__}",
                                fix="pass a handle returned by backend.allocate_resident(nbytes)")
        if h.owner != self.owner:
            raise DispatchError(f"{what}: resident handle {h.id} belongs to another backend",
                                fix="use handles with the backend that allocated them")
        if h.generation != st.generation:
            raise DeviceLostError(
                f"{what}: resident handle {h.id} was allocated before the GPU device was lost or replaced; "
                "its contents are gone",
                fix="allocate a new handle (backend.allocate_resident) and upload the data again",
            )
        entry = st.entries.get(h.id)
        if entry is None:
            words = st.params_ids.get(h.id)
            if words is not None:
                return self._bindings.params(words)  # the shared buffer (made again if it left the cache)
            raise DispatchError(f"{what}: resident handle {h.id} was freed", fix="allocate a new handle")
        return entry[1]

    def range(self, st: ResidentState, item: object, what: str) -> tuple[GPUBuffer, int, int]:
        """``handle`` or ``(handle, offset, nbytes)`` -> (buffer, offset, nbytes), bounds-checked."""
        if isinstance(item, ResidentHandle):
            return self.buffer(st, item, what), 0, item.nbytes
        if not isinstance(item, (tuple, list)) or len(item) != 3:
            raise DispatchError(f"{what}: expected a handle or (handle, offset, nbytes), got {item!r}")
        h, offset, nbytes = item
        buf = self.buffer(st, h, what)
        offset, nbytes = as_int(offset, f"{what}: offset"), as_int(nbytes, f"{what}: nbytes")
        if offset < 0 or nbytes < 0 or offset + nbytes > h.nbytes:
            raise DispatchError(f"{what}: range [{offset}, {offset + nbytes}) is outside resident handle {h.id} "
                                f"of {h.nbytes} bytes", fix="read inside the handle's bytes")
        return buf, offset, nbytes

    # ---- allocation -----------------------------------------------------------------------------
    def allocate(self, nbytes: int, label: str | None = None, zeroed: bool = True) -> ResidentHandle:
        import wgpu  # why: import time (the backend imports wgpu lazily: `import vyre` stays light)

        nbytes = as_int(nbytes, "allocate_resident: nbytes")
        st = self.state()
        limit = st.limits.get("max-buffer-size")
        if nbytes <= 0 or nbytes % 4:
            raise DispatchError(f"allocate_resident: nbytes must be a positive multiple of 4, got {nbytes}",
                                fix="round the size up to a multiple of 4 bytes")
        if limit is not None and align(nbytes) > limit:
            raise DispatchError(f"allocate_resident: {nbytes} bytes is over this adapter's buffer size "
                                f"limit of {limit} bytes", fix="split the data over several handles")
        BU = wgpu.BufferUsage
        spares = st.spare.get(align(nbytes))
        if spares:
            buf, serial = spares.pop()
            st.spare_bytes -= buf.size
            if zeroed:  # zero-filled like a new buffer; queue order puts it after earlier work
                with gpu_errors(self._dev):
                    if buf.size <= ZERO_BY_WRITE:
                        self._dev.queue.write_buffer(buf, 0, np.zeros(buf.size, np.uint8))
                    else:
                        enc = self._dev.device.create_command_encoder(label="vyre-resident-clear")
                        enc.clear_buffer(buf, 0, buf.size)
                        self._dev.queue.submit([enc.finish()])
            self._stats.bump("resident_reused")
        else:
            with gpu_errors(self._dev):
                buf = self._dev.device.create_buffer(label=label or "vyre-resident", size=align(nbytes),
                                                     usage=BU.STORAGE | BU.UNIFORM | BU.COPY_SRC | BU.COPY_DST)
            serial = next(_SERIALS)
            self._stats.bump("buffers_created")
        self._stats.bump("resident_allocations")
        h = ResidentHandle(next(_IDS), nbytes, st.generation, self.owner)
        st.entries[h.id] = (h, buf, serial)
        st.nbytes += nbytes
        return h

    def params_handle(self, words: bytes | np.ndarray) -> ResidentHandle:
        """A handle on the shared params buffer holding ``words`` (:meth:`Bindings.params`): a front end binds
        it as its program's scalar/dims uniform; a repeated evaluation with the same values uploads nothing.
        It is the backend's: never freed or written by its user, and usable until the device changes."""
        key = words if isinstance(words, bytes) else np.ascontiguousarray(words).tobytes()
        if not key or len(key) % 4:
            raise DispatchError(f"params_handle: words must be a non-empty multiple of 4 bytes, got {len(key)}",
                                fix="pack the parameters as 32-bit words")
        st = self.state()
        h = st.params.get(key)
        if h is not None:
            st.params.move_to_end(key)
            return h
        with gpu_errors(self._dev):
            self._bindings.params(key)  # made now, so a failure is raised here
        h = ResidentHandle(next(_IDS), len(key), st.generation, self.owner)
        st.params[key] = h
        st.params_ids[h.id] = key
        while len(st.params) > PARAMS_HANDLES:
            st.params_ids.pop(st.params.popitem(last=False)[1].id, None)
        return h

    def _not_params(self, st: ResidentState, h: object, what: str) -> None:
        if isinstance(h, ResidentHandle) and h.id in st.params_ids:
            raise DispatchError(f"{what}: resident handle {h.id} is a shared params uniform (backend.params_handle): "
                                "it cannot be freed or written",
                                fix="leave it to the backend; allocate_resident gives a handle of your own")

    def free(self, handle: ResidentHandle) -> None:
        st = self.state()
        self.buffer(st, handle, "free_resident")  # a foreign, stale or freed handle first
        self._not_params(st, handle, "free_resident")
        _, buf, serial = st.entries.pop(handle.id)
        st.frees += 1
        st.contents.pop(handle.id, None)
        st.nbytes -= handle.nbytes
        kept = st.spare.setdefault(buf.size, [])
        if len(kept) < SPARE_PER_SIZE and st.spare_bytes + buf.size <= SPARE_CAP:
            kept.append((buf, serial))  # its bind groups stay valid: the next user of the buffer finds them
            st.spare_bytes += buf.size
        else:
            st.forget_binds(serial)
            buf.destroy()

    def release_spare(self) -> None:
        """Destroy the freed buffers kept for reuse (``clear_cache``); nothing to do once the device is gone."""
        st = self._state
        if st is None or st.generation != self._dev.generation:
            return
        for bufs in st.spare.values():
            for buf, serial in bufs:
                st.forget_binds(serial)
                buf.destroy()
        st.spare.clear()
        st.spare_bytes = 0

    # ---- transfers as Work ----------------------------------------------------------------------
    def upload_work(self, uploads: Iterable[Any]) -> Work:
        """The Work of ``(handle, data, offset)`` (or ``(handle, data)``) uploads, every one checked first."""
        st = self.state()
        writes: list[Write] = []
        for k, up in enumerate(uploads):
            what = f"upload {k}"
            if not isinstance(up, (tuple, list)) or len(up) not in (2, 3):
                raise DispatchError(f"{what}: expected (handle, data, offset), got {up!r}")
            h, data = up[0], up[1]
            offset = as_int(up[2], f"{what}: offset") if len(up) == 3 else 0
            buf = self.buffer(st, h, what)
            self._not_params(st, h, what)
            raw = as_u8(data, what)
            if offset % 4 or raw.nbytes % 4:
                raise DispatchError(f"{what}: offset {offset} and size {raw.nbytes} must be multiples of 4 bytes",
                                    fix="pad the data to a multiple of 4 bytes")
            if offset < 0 or offset + raw.nbytes > h.nbytes:
                raise DispatchError(f"{what}: {raw.nbytes} bytes at offset {offset} do not fit in resident "
                                    f"handle {h.id} of {h.nbytes} bytes",
                                    fix="allocate a larger handle or upload less")
            if raw.nbytes:
                writes.append(Write(buf, offset, raw))
        return Work(label="vyre-resident-upload", writes=writes)

    def download_work(self, ranges: Iterable[Any], outs: Iterable[np.ndarray | None] | None = None) -> Work:
        """The Work reading each ``(handle, offset, nbytes)`` (or whole handle), into ``outs`` where given."""
        st = self.state()
        reads = [self.range(st, r, f"range {k}") for k, r in enumerate(ranges)]
        targets = check_outs(outs, [n for _, _, n in reads]) or [None] * len(reads)
        return Work(label="vyre-resident-download",
                    reads=[Read(buf, off, n, out=t) for (buf, off, n), t in zip(reads, targets)])

    # ---- dispatch steps -------------------------------------------------------------------------
    def step(self, st: ResidentState, program: object, handles: object, config: DispatchConfig, what: str
             ) -> Dispatch:
        """Check one resident dispatch completely (no GPU work) and find or make its bind groups."""
        if not isinstance(program, Program):
            raise DispatchError(f"{what}: expected a vyre Program, got {type(program).__name__}")
        if isinstance(handles, ResidentHandle) or not isinstance(handles, (list, tuple)):
            raise DispatchError(f"{what}: handles must be a list of ResidentHandle (one per buffer), got {handles!r}")
        bufs = [self.buffer(st, h, what) for h in handles]
        sizes = tuple(h.nbytes for h in handles)
        # a loop repeats its steps over new handles of the same sizes (array results): planned (and the program
        # validated) once
        step = st.steps.step(program, sizes, config, self._bindings.plan_limits(), what, self._store.validate)
        plan = step.plan
        ids = [h.id for h in handles]
        if len(set(ids)) != len(ids):  # aliasing is only possible then (uniform sizes: checked with the plan)
            check_resident_bindings(plan, ids, st.limits.get("max-uniform-buffer-binding-size", 65536), what)
        params_ids = st.params_ids
        entries = st.entries
        if params_ids:
            for h, b in zip(handles, plan.buffers):
                if h.id in params_ids and b.decl.access.writable:
                    raise DispatchError(f"{what}: resident handle {h.id} is a shared params uniform "
                                        f"(backend.params_handle), bound to writable buffer {b.decl.name!r}",
                                        fix="bind params handles to read or uniform buffers only")
            serials: tuple[Serial, ...] = tuple(entries[h.id][2] if h.id in entries else ("params", id(b))
                                                for h, b in zip(handles, bufs))
        else:
            serials = tuple(entries[h.id][2] for h in handles)
        compiled = self._store.compiled(program)
        key = (compiled.key, serials, sizes, step.wbytes)
        hit = st.binds.get(key)
        if hit is not None and hit[0] is compiled:
            st.binds.move_to_end(key)
            groups = hit[1]
        else:
            with gpu_errors(self._dev, compiled.program_name):
                params = self._bindings.params(step.wbytes)
                groups = self._bindings.bind_all(
                    compiled, bufs, params, f"vyre-resident:{compiled.program_name}",
                    lambda k, buf: min(buf.size, align(max(16, plan.buffers[k].nbytes))))
            st.binds[key] = (compiled, groups)
            for s in set(serials):
                st.bind_keys.setdefault(s, set()).add(key)
            while len(st.binds) > BIND_CACHE_CAP:
                old, _ = st.binds.popitem(last=False)
                for s in set(old[1]):
                    keys = st.bind_keys.get(s)
                    if keys is not None:
                        keys.discard(old)
                        if not keys:
                            del st.bind_keys[s]
        total = plan.grid[0] * plan.grid[1] * plan.grid[2]
        return Dispatch(compiled.pipeline, groups, step.workgroups, total)

__all__ = ["ResidentStore", "ResidentState", "as_int"]
