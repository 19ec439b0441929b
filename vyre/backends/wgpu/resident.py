"""The ResidentStore part of the wgpu backend: resident buffers the caller owns through handles.

A :class:`~vyre.backends.handles.ResidentHandle` names one device buffer (STORAGE | UNIFORM |
COPY_SRC | COPY_DST, so any binding kind can use it). Uploads and downloads are Work for the
executor: writes (any number of uploads in one staging operation) and reads (every requested
range copied into the readback buffer in one encoder, mapped once).

:meth:`ResidentStore.step` checks one dispatch over handles and gives its
:class:`~.work.Dispatch`: bind groups are cached per (pipeline, handles, params) and the hidden
params uniform per (grid, element counts), so a repeated dispatch creates no GPU object.

Handles carry the device generation they were made on: after a device loss (and after
``try_recover``) an old handle raises DeviceLostError, never reads garbage. Callers hold the
device lock. Resident dispatches, sequences and op pipelines are built in sequence.py and
pipeline_run.py.
"""

from __future__ import annotations

import itertools
from collections import OrderedDict
from dataclasses import dataclass, field

import numpy as np

from ...errors import DeviceLostError, DispatchError
from ...ir.program import Program
from ..config import DispatchConfig
from ..handles import ResidentHandle
from ..host import as_u8, check_outs, fold_grid, params_words, plan_resident
from ..plan_checks import check_loop_iterations, check_resident_bindings, check_uniform_sizes
from .failures import gpu_errors
from .transfer import Stats, align
from .work import Dispatch, Read, Work, Write

_IDS = itertools.count(1)
_OWNERS = itertools.count(1)
BIND_CACHE_CAP = 1024
PLAN_CACHE_CAP = 256
PARAMS_CACHE_CAP = 256


@dataclass
class ResidentState:
    """Resident state of one device generation (dropped as a whole when the device changes)."""

    generation: int
    limits: dict
    entries: dict = field(default_factory=dict)  # handle id -> (handle, GPUBuffer, buffer serial)
    params: OrderedDict = field(default_factory=OrderedDict)  # params words bytes -> uniform buffer
    # (pipeline key, buffer serials, handle sizes, words) -> (compiled, groups); keyed by the buffers, not the
    # handles, so a loop whose results reuse freed buffers (see ``spare``) finds its bind groups again
    binds: OrderedDict = field(default_factory=OrderedDict)
    bind_keys: dict = field(default_factory=dict)  # buffer serial -> the keys of ``binds`` that bind it
    plans: OrderedDict = field(default_factory=OrderedDict)  # (id program, sizes, id config) -> its plan
    pipelines: OrderedDict = field(default_factory=OrderedDict)  # op-pipeline shape -> {name: handle}
    schedules: OrderedDict = field(default_factory=OrderedDict)  # id(op pipeline) -> prepared schedule
    contents: dict = field(default_factory=dict)  # handle id -> bytes an op pipeline last wrote there (small inputs)
    nbytes: int = 0
    spare: dict = field(default_factory=dict)  # aligned size -> freed (GPUBuffer, serial) kept for reuse
    spare_bytes: int = 0

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


def as_int(value, what: str) -> int:
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

    def __init__(self, dev, store, stats: Stats):
        self._dev = dev
        self._store = store
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

    def buffer(self, st: ResidentState, h, what: str):
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
            raise DispatchError(f"{what}: resident handle {h.id} was freed", fix="allocate a new handle")
        return entry[1]

    def range(self, st: ResidentState, item, what: str) -> tuple:
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
    def allocate(self, nbytes, label: str | None = None, zeroed: bool = True) -> ResidentHandle:
        import wgpu

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

    def free(self, handle: ResidentHandle) -> None:
        st = self.state()
        self.buffer(st, handle, "free_resident")
        _, buf, serial = st.entries.pop(handle.id)
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
    def upload_work(self, uploads) -> Work:
        """The Work of ``(handle, data, offset)`` (or ``(handle, data)``) uploads, every one checked first."""
        st = self.state()
        writes = []
        for k, up in enumerate(uploads):
            what = f"upload {k}"
            if not isinstance(up, (tuple, list)) or len(up) not in (2, 3):
                raise DispatchError(f"{what}: expected (handle, data, offset), got {up!r}")
            h, data = up[0], up[1]
            offset = as_int(up[2], f"{what}: offset") if len(up) == 3 else 0
            buf = self.buffer(st, h, what)
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

    def download_work(self, ranges, outs=None) -> Work:
        """The Work reading each ``(handle, offset, nbytes)`` (or whole handle), into ``outs`` where given."""
        st = self.state()
        reads = [self.range(st, r, f"range {k}") for k, r in enumerate(ranges)]
        targets = check_outs(outs, [n for _, _, n in reads]) or [None] * len(reads)
        return Work(label="vyre-resident-download",
                    reads=[Read(buf, off, n, out=t) for (buf, off, n), t in zip(reads, targets)])

    # ---- dispatch steps -------------------------------------------------------------------------
    def step(self, st: ResidentState, program, handles, config: DispatchConfig, what: str) -> Dispatch:
        """Check one resident dispatch completely (no GPU work) and find or make its bind groups."""
        if not isinstance(program, Program):
            raise DispatchError(f"{what}: expected a vyre Program, got {type(program).__name__}")
        if isinstance(handles, ResidentHandle) or not isinstance(handles, (list, tuple)):
            raise DispatchError(f"{what}: handles must be a list of ResidentHandle (one per buffer), got {handles!r}")
        bufs = [self.buffer(st, h, what) for h in handles]
        sizes = tuple(h.nbytes for h in handles)
        # the plan depends only on (program, sizes, config): memoised, since a loop repeats its steps over
        # new handles of the same sizes (array results); the objects are kept with it, so ids stay unique
        pkey = (id(program), sizes, id(config))
        memo = st.plans.get(pkey)
        if memo is not None and memo[0] is program and memo[1] is config:
            plan, workgroups, words, wbytes = memo[2]
            st.plans.move_to_end(pkey)
        else:
            self._store.validate(program)
            plan = plan_resident(program, sizes, config,
                                 max_storage_bytes=st.limits.get("max-storage-buffer-binding-size"))
            check_uniform_sizes(plan, st.limits.get("max-uniform-buffer-binding-size", 65536), what)
            check_loop_iterations(plan, self._dev.loop_cap)
            workgroups = fold_grid(plan.grid, st.limits.get("max-compute-workgroups-per-dimension", 65535))
            words = params_words(plan)
            wbytes = words.tobytes()
            st.plans[pkey] = (program, config, (plan, workgroups, words, wbytes))
            while len(st.plans) > PLAN_CACHE_CAP:
                st.plans.popitem(last=False)
        ids = [h.id for h in handles]
        if len(set(ids)) != len(ids):  # aliasing is only possible then (uniform sizes: checked with the plan)
            check_resident_bindings(plan, ids, st.limits.get("max-uniform-buffer-binding-size", 65536), what)
        compiled = self._store.compiled(program)
        entries = st.entries
        serials = tuple(entries[h.id][2] for h in handles)
        key = (compiled.key, serials, sizes, wbytes)
        hit = st.binds.get(key)
        if hit is not None and hit[0] is compiled:
            st.binds.move_to_end(key)
            groups = hit[1]
        else:
            with gpu_errors(self._dev, compiled.program_name):
                groups = self._bind_groups(st, compiled, plan, bufs, words)
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
        return Dispatch(compiled.pipeline, groups, workgroups, total)

    def _bind_groups(self, st: ResidentState, compiled, plan, bufs, words) -> tuple:
        params = self._params_buffer(st, words)
        device = self._dev.device
        groups = []
        for g, slots in enumerate(compiled.groups):
            entries = []
            for s in slots:
                if s.index < 0:
                    buf, size = params, params.size
                else:
                    buf = bufs[s.index]
                    size = min(buf.size, align(max(16, plan.buffers[s.index].nbytes)))
                entries.append({"binding": s.binding, "resource": {"buffer": buf, "offset": 0, "size": size}})
            groups.append(device.create_bind_group(label=f"vyre-resident:{compiled.program_name}:g{g}",
                                                   layout=compiled.group_layouts[g], entries=entries))
            self._stats.bump("bind_groups_created")
        return tuple(groups)

    def _params_buffer(self, st: ResidentState, words: np.ndarray):
        """The params uniform holding ``words`` (immutable once written, so shared by every user)."""
        import wgpu

        key = words.tobytes()
        buf = st.params.get(key)
        if buf is not None:
            st.params.move_to_end(key)
            return buf
        # filled while mapped at creation: no queue work
        buf = self._dev.device.create_buffer(label="vyre-resident-params", size=max(16, words.nbytes),
                                             usage=wgpu.BufferUsage.UNIFORM, mapped_at_creation=True)
        buf.write_mapped(words)
        buf.unmap()
        self._stats.bump("buffers_created")
        st.params[key] = buf
        while len(st.params) > PARAMS_CACHE_CAP:
            st.params.popitem(last=False)  # bind groups made with it keep it alive
        return buf


__all__ = ["ResidentStore", "ResidentState", "as_int"]
