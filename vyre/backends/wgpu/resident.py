"""Resident buffers: device buffers the caller owns through handles, and dispatch over them.

A :class:`ResidentHandle` names one device buffer (STORAGE | UNIFORM | COPY_SRC | COPY_DST,
so any binding kind can use it). Uploads go through the backend's mapped staging buffer
(one map, one submit for any number of uploads); downloads copy every requested range
into the readback staging buffer in one command encoder and map it once.

``dispatch_resident`` binds one handle per program buffer (binding order) and moves no
host data: bind groups are cached per (pipeline, handles, params) and the hidden params
uniform per (grid, element counts), so a repeated dispatch creates no GPU object.

Handles carry the device generation they were made on: after a device loss (and after
``try_recover``) an old handle raises DeviceLostError, never reads garbage. Everything
here runs under the backend's lock. Sequences of resident dispatches are in sequence.py.
"""

from __future__ import annotations

import itertools
from collections import OrderedDict
from contextlib import contextmanager
from dataclasses import dataclass, field

import numpy as np

from ...errors import DeviceLostError, DispatchError, VyreError
from ...ir.program import Program
from ...ir.types import Access
from ..config import DispatchConfig
from ..host import fold_grid, params_words, plan_resident
from ..handles import ResidentHandle
from .device import translate_error
from .pipeline_run import PipelineMixin
from . import hostcopy
from .sequence import Prepared, SequenceMixin, align, as_config

_IDS = itertools.count(1)
_OWNERS = itertools.count(1)
BIND_CACHE_CAP = 1024
PARAMS_CACHE_CAP = 256


@dataclass
class ResidentStore:
    """Resident state of one device generation (dropped as a whole when the device changes)."""

    generation: int
    limits: dict
    entries: dict = field(default_factory=dict)  # handle id -> (handle, GPUBuffer)
    params: OrderedDict = field(default_factory=OrderedDict)  # params words bytes -> uniform buffer
    binds: OrderedDict = field(default_factory=OrderedDict)  # (pipeline key, ids, words) -> (compiled, groups)
    pipelines: OrderedDict = field(default_factory=OrderedDict)  # op-pipeline shape -> {name: handle}
    timer: object = None  # timestamps.QueryPair for timed sequences
    nbytes: int = 0


def as_u8(data, what: str) -> np.ndarray:
    """A 1-D contiguous uint8 view of an array or any buffer-protocol object."""
    if isinstance(data, np.ndarray):
        arr = data
    else:
        try:
            arr = np.asarray(memoryview(data))
        except TypeError:
            raise DispatchError(f"{what}: {type(data).__name__} is not a buffer",
                                fix="pass a numpy array, bytes, bytearray or memoryview") from None
    return np.ascontiguousarray(arr).reshape(-1).view(np.uint8)


def _int(value, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise DispatchError(f"{what} must be an int, got {value!r}")
    return int(value)


class ResidentMixin(SequenceMixin, PipelineMixin):
    """Resident-buffer API of WgpuBackend (see the module docstring)."""

    #: Uploads totalling at most this many bytes use queue.write_buffer (no map round trip).
    resident_write_threshold = 64 << 10

    # ---- state -------------------------------------------------------------------------
    def _rstore(self) -> ResidentStore:
        """The resident state of the current device (a fresh one after a device change)."""
        st = self.__dict__.get("_resident_store")
        if st is None or st.generation != self._generation:
            limits = {str(k): int(v) for k, v in dict(self._limits).items() if isinstance(v, (int, np.integer))}
            st = ResidentStore(self._generation, limits)
            self.__dict__["_resident_store"] = st
        return st

    def _ready(self) -> ResidentStore:
        self._check_alive()
        return self._rstore()

    @property
    def _resident_owner(self) -> int:
        owner = self.__dict__.get("_resident_owner_id")
        if owner is None:
            owner = self.__dict__["_resident_owner_id"] = next(_OWNERS)
        return owner

    @property
    def _resident_bytes(self) -> int:
        """Bytes held by live resident handles of the current device."""
        st = self.__dict__.get("_resident_store")
        return st.nbytes if st is not None and st.generation == self._generation else 0

    @property
    def _resident_handles(self) -> int:
        """Number of live resident handles of the current device."""
        st = self.__dict__.get("_resident_store")
        return len(st.entries) if st is not None and st.generation == self._generation else 0

    @contextmanager
    def _gpu_guard(self, program: str | None = None):
        """Turn wgpu exceptions into vyre errors (marking the device lost when it is); a failure may have
        left a staging buffer mapped, so the staging buffers are dropped."""
        try:
            yield
        except Exception as exc:
            if not isinstance(exc, VyreError):
                self._staging.reset()
            err = translate_error(exc, stage="dispatch", program=program)
            if isinstance(err, DeviceLostError):
                self._mark_lost()
            if err is exc:
                raise
            raise err from exc

    def _buffer(self, st: ResidentStore, h, what: str):
        """The device buffer of a live handle; DeviceLostError for a stale one, DispatchError otherwise."""
        if not isinstance(h, ResidentHandle):
            raise DispatchError(f"{what}: expected a ResidentHandle, got {type(h).__name__}",
                                fix="pass a handle returned by backend.allocate_resident(nbytes)")
        if h.owner != self._resident_owner:
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

    def _range(self, st: ResidentStore, item, what: str):
        """``handle`` or ``(handle, offset, nbytes)`` -> (buffer, offset, nbytes), bounds-checked."""
        if isinstance(item, ResidentHandle):
            return self._buffer(st, item, what), 0, item.nbytes
        if not isinstance(item, (tuple, list)) or len(item) != 3:
            raise DispatchError(f"{what}: expected a handle or (handle, offset, nbytes), got {item!r}")
        h, offset, nbytes = item
        buf = self._buffer(st, h, what)
        offset, nbytes = _int(offset, f"{what}: offset"), _int(nbytes, f"{what}: nbytes")
        if offset < 0 or nbytes < 0 or offset + nbytes > h.nbytes:
            raise DispatchError(f"{what}: range [{offset}, {offset + nbytes}) is outside resident handle {h.id} "
                                f"of {h.nbytes} bytes", fix="read inside the handle's bytes")
        return buf, offset, nbytes

    # ---- allocation ----------------------------------------------------------------------
    def allocate_resident(self, nbytes: int, label: str | None = None) -> ResidentHandle:
        """A new zero-filled resident buffer of ``nbytes`` bytes (a positive multiple of 4)."""
        import wgpu

        nbytes = _int(nbytes, "allocate_resident: nbytes")
        with self._lock:
            st = self._ready()
            limit = st.limits.get("max-buffer-size")
            if nbytes <= 0 or nbytes % 4:
                raise DispatchError(f"allocate_resident: nbytes must be a positive multiple of 4, got {nbytes}",
                                    fix="round the size up to a multiple of 4 bytes")
            if limit is not None and align(nbytes) > limit:
                raise DispatchError(f"allocate_resident: {nbytes} bytes is over this adapter's buffer size "
                                    f"limit of {limit} bytes", fix="split the data over several handles")
            BU = wgpu.BufferUsage
            with self._gpu_guard():
                buf = self._device.create_buffer(label=label or "vyre-resident", size=align(nbytes),
                                                 usage=BU.STORAGE | BU.UNIFORM | BU.COPY_SRC | BU.COPY_DST)
            self._stats.bump("buffers_created")
            self._stats.bump("resident_allocations")
            h = ResidentHandle(next(_IDS), nbytes, st.generation, self._resident_owner)
            st.entries[h.id] = (h, buf)
            st.nbytes += nbytes
            return h

    def free_resident(self, handle: ResidentHandle) -> None:
        """Release a resident buffer. Freeing it twice (or an unknown handle) raises DispatchError."""
        with self._lock:
            st = self._ready()
            buf = self._buffer(st, handle, "free_resident")
            del st.entries[handle.id]
            st.nbytes -= handle.nbytes
            for key in [k for k in st.binds if handle.id in k[1]]:
                del st.binds[key]
            buf.destroy()

    # ---- transfers -------------------------------------------------------------------------
    def upload_resident(self, handle: ResidentHandle, data, offset: int = 0) -> None:
        """Write ``data`` (bytes, numpy, any buffer) at byte ``offset``; offset and size multiples of 4."""
        self.upload_resident_many([(handle, data, offset)])

    def upload_resident_many(self, uploads) -> None:
        """Several ``(handle, data, offset)`` (or ``(handle, data)``) uploads as one staging operation."""
        with self._lock:
            st = self._ready()
            items = []
            for k, up in enumerate(uploads):
                what = f"upload {k}"
                if not isinstance(up, (tuple, list)) or len(up) not in (2, 3):
                    raise DispatchError(f"{what}: expected (handle, data, offset), got {up!r}")
                h, data = up[0], up[1]
                offset = _int(up[2], f"{what}: offset") if len(up) == 3 else 0
                buf = self._buffer(st, h, what)
                raw = as_u8(data, what)
                if offset % 4 or raw.nbytes % 4:
                    raise DispatchError(f"{what}: offset {offset} and size {raw.nbytes} must be multiples of 4 bytes",
                                        fix="pad the data to a multiple of 4 bytes")
                if offset < 0 or offset + raw.nbytes > h.nbytes:
                    raise DispatchError(f"{what}: {raw.nbytes} bytes at offset {offset} do not fit in resident "
                                        f"handle {h.id} of {h.nbytes} bytes",
                                        fix="allocate a larger handle or upload less")
                if raw.nbytes:
                    items.append((buf, offset, raw))
            if not items:
                return
            with self._gpu_guard():
                encoder = self._device.create_command_encoder(label="vyre-resident-upload")
                if self._encode_uploads(encoder, items):  # else written by queue.write_buffer
                    self._queue.submit([encoder.finish()])

    def _encode_uploads(self, encoder, items) -> bool:
        """Upload ``(buffer, offset, uint8 data)`` items: small totals by queue.write_buffer, else through
        the mapped staging buffer with copies recorded in ``encoder``. True when copies were recorded.

        Data whose size is not a multiple of 4 bytes (an odd number of f16) is zero-padded: copies and
        writes move whole words, and every device buffer is allocated in whole words."""
        items = [(buf, offset, d if d.nbytes % 4 == 0 else _pad4(d)) for buf, offset, d in items]
        total = sum(d.nbytes for _, _, d in items)
        self._stats.bump("bytes_uploaded", total)
        if total <= self.resident_write_threshold:
            for buf, offset, d in items:
                self._queue.write_buffer(buf, offset, d)
            self._stats.bump("resident_uploads_direct", len(items))
            return False
        stage = self._staging.map_upload(sum(align(d.nbytes) for _, _, d in items))
        copies, pos = [], 0
        try:
            for buf, offset, d in items:
                hostcopy.write_mapped(stage, d, pos)
                copies.append((pos, buf, offset, d.nbytes))
                pos += align(d.nbytes)
        finally:
            stage.unmap()
        for pos, buf, offset, n in copies:
            encoder.copy_buffer_to_buffer(stage, pos, buf, offset, n)
        self._stats.bump("resident_upload_maps")
        return True

    def download_resident(self, handle: ResidentHandle, out: np.ndarray | None = None) -> np.ndarray:
        """The whole buffer as a uint8 array (use ``.view(dtype)``), or written into ``out``.

        ``out`` (any dtype, C-contiguous, writeable, exactly ``handle.nbytes`` bytes) is the fast
        path for repeated reads: a reused array skips the page faults of fresh host memory,
        which dominate large readbacks on some machines."""
        return self.download_resident_ranges([handle], None if out is None else [out])[0]

    def download_resident_range(self, handle: ResidentHandle, offset: int, nbytes: int,
                                out: np.ndarray | None = None) -> np.ndarray:
        return self.download_resident_ranges([(handle, offset, nbytes)], None if out is None else [out])[0]

    def download_resident_ranges(self, ranges, outs=None) -> list[np.ndarray]:
        """Each ``(handle, offset, nbytes)`` (or whole ``handle``) as a uint8 array, in one readback.
        ``outs`` (optional): one caller-owned array per range (None entries allocate), see
        :meth:`download_resident`; those arrays are filled and returned."""
        with self._lock:
            st = self._ready()
            reads = [self._range(st, r, f"range {k}") for k, r in enumerate(ranges)]
            targets = _check_outs(outs, reads)
            with self._gpu_guard():
                encoder = self._device.create_command_encoder(label="vyre-resident-download")
                layout, total = self._encode_reads(encoder, reads)
                if total:
                    self._queue.submit([encoder.finish()])
                return self._collect_reads(layout, total, targets)

    def _encode_reads(self, encoder, reads):
        """Record copies of ``(buffer, offset, nbytes)`` into the readback staging buffer (any offset:
        4-byte aligned spans are copied and trimmed). Returns (layout, total bytes)."""
        layout, spans, pos = [], [], 0
        for buf, offset, n in reads:
            if n == 0:
                layout.append(None)
                continue
            start, end = offset & ~3, align(offset + n, 4)
            spans.append((buf, start, end - start, pos))
            layout.append((pos, offset - start, n, end - start))
            pos += align(end - start)
        if pos:
            rb = self._staging.ensure_readback(pos)
            for buf, start, span, dst in spans:
                encoder.copy_buffer_to_buffer(buf, start, rb, dst, span)
        return layout, pos

    def _collect_reads(self, layout, total, targets=None) -> list[np.ndarray]:
        """Map the readback staging buffer once (waits for the submission) and copy each range out
        (into ``targets[k]`` where given)."""
        targets = targets or [None] * len(layout)
        if not total:
            return [np.zeros(0, np.uint8) if t is None else t for t in targets]
        rb = self._staging.map_readback(total)
        out = []
        try:
            for item, target in zip(layout, targets):
                if item is None:
                    out.append(np.zeros(0, np.uint8) if target is None else target)
                    continue
                pos, lead, n, span = item
                mv = rb.read_mapped(pos, span, copy=False)
                src = np.frombuffer(mv, np.uint8, count=n, offset=lead)
                dst = np.empty(n, np.uint8) if target is None else target.reshape(-1).view(np.uint8)
                hostcopy.copy_bytes(dst, src)
                out.append(dst if target is None else target)
                del dst
                del src, mv
        finally:
            rb.unmap()
        self._stats.bump("bytes_read_back", sum(item[2] for item in layout if item is not None))
        return out

    # ---- dispatch ----------------------------------------------------------------------------
    def _prepare(self, st: ResidentStore, program, handles, config: DispatchConfig, what: str) -> Prepared:
        """Check one resident dispatch completely (no GPU work) and find or make its bind groups."""
        if not isinstance(program, Program):
            raise DispatchError(f"{what}: expected a vyre Program, got {type(program).__name__}")
        if isinstance(handles, ResidentHandle) or not isinstance(handles, (list, tuple)):
            raise DispatchError(f"{what}: handles must be a list of ResidentHandle (one per buffer), got {handles!r}")
        bufs = [self._buffer(st, h, what) for h in handles]
        self._validate(program)
        plan = plan_resident(program, [h.nbytes for h in handles], config,
                             max_storage_bytes=st.limits.get("max-storage-buffer-binding-size"))
        uniform_limit = st.limits.get("max-uniform-buffer-binding-size", 65536)
        writers: dict[int, bool] = {}
        for b, h in zip(plan.buffers, handles):
            if b.decl.access is Access.UNIFORM and align(b.nbytes) > uniform_limit:
                raise DispatchError(f"{what}: uniform buffer {b.decl.name!r} needs {b.nbytes} bytes, over the "
                                    f"uniform binding limit of {uniform_limit}",
                                    fix="declare it with access='read' instead")
            writes = b.decl.access.writable
            if h.id in writers and (writes or writers[h.id]):
                raise DispatchError(f"{what}: resident handle {h.id} is bound to several buffers of "
                                    f"{program.name!r}, one of them writable",
                                    fix="bind a writable buffer to its own handle")
            writers[h.id] = writers.get(h.id, False) or writes
        workgroups = fold_grid(plan.grid, st.limits.get("max-compute-workgroups-per-dimension", 65535))
        compiled = self._compiled(program)
        words = params_words(plan)
        key = (compiled.key, tuple(h.id for h in handles), words.tobytes())
        hit = st.binds.get(key)
        if hit is not None and hit[0] is compiled:
            st.binds.move_to_end(key)
            groups = hit[1]
        else:
            groups = self._make_bind_groups(st, compiled, plan, bufs, words)
            st.binds[key] = (compiled, groups)
            while len(st.binds) > BIND_CACHE_CAP:
                st.binds.popitem(last=False)
        total = plan.grid[0] * plan.grid[1] * plan.grid[2]
        return Prepared(compiled, groups, workgroups, total)

    def _make_bind_groups(self, st: ResidentStore, compiled, plan, bufs, words) -> list:
        params = self._params_buffer(st, words)
        groups = []
        with self._gpu_guard(compiled.program_name):
            for g, slots in enumerate(compiled.groups):
                entries = []
                for s in slots:
                    if s.index < 0:
                        buf, size = params, params.size
                    else:
                        buf = bufs[s.index]
                        size = min(buf.size, align(max(16, plan.buffers[s.index].nbytes)))
                    entries.append({"binding": s.binding, "resource": {"buffer": buf, "offset": 0, "size": size}})
                groups.append(self._device.create_bind_group(label=f"vyre-resident:{compiled.program_name}:g{g}",
                                                             layout=compiled.group_layouts[g], entries=entries))
                self._stats.bump("bind_groups_created")
        return groups

    def _params_buffer(self, st: ResidentStore, words: np.ndarray):
        """The params uniform holding ``words`` (immutable once written, so shared by every user)."""
        import wgpu

        key = words.tobytes()
        buf = st.params.get(key)
        if buf is not None:
            st.params.move_to_end(key)
            return buf
        with self._gpu_guard():  # filled while mapped at creation: no queue work
            buf = self._device.create_buffer(label="vyre-resident-params", size=max(16, words.nbytes),
                                             usage=wgpu.BufferUsage.UNIFORM, mapped_at_creation=True)
            buf.write_mapped(words)
            buf.unmap()
        self._stats.bump("buffers_created")
        st.params[key] = buf
        while len(st.params) > PARAMS_CACHE_CAP:
            st.params.popitem(last=False)  # bind groups made with it keep it alive
        return buf

    def dispatch_resident(self, program, handles, config: DispatchConfig | None = None) -> None:
        """Run ``program`` over resident buffers (one handle per buffer, binding order), with no host
        transfer and no wait. ``config.grid`` and ``config.counts`` work as in ``dispatch``."""
        config = as_config(config)
        with self._lock:
            st = self._ready()
            step = self._prepare(st, program, handles, config,
                                 f"dispatch_resident({getattr(program, 'name', type(program).__name__)})")
            if step.total == 0:
                return
            label = config.label or f"vyre-resident:{program.name}"
            with self._gpu_guard(program.name):
                encoder = self._device.create_command_encoder(label=label)
                self._encode_passes(encoder, [((), [step])], label=label)
                self._queue.submit([encoder.finish()])


__all__ = ["ResidentHandle", "ResidentMixin", "ResidentStore", "as_u8"]


def _pad4(d: np.ndarray) -> np.ndarray:
    """``d`` (uint8) zero-padded to a multiple of 4 bytes."""
    out = np.zeros(align(d.nbytes, 4), dtype=np.uint8)
    out[: d.nbytes] = d
    return out


def _check_outs(outs, reads) -> list | None:
    """Validate caller-owned readback targets before any GPU work."""
    if outs is None:
        return None
    outs = list(outs)
    if len(outs) != len(reads):
        raise DispatchError(f"download: {len(reads)} range(s) but {len(outs)} output array(s)",
                            fix="pass one output array (or None) per range")
    for k, (o, (_, _, n)) in enumerate(zip(outs, reads)):
        if o is None:
            continue
        if not isinstance(o, np.ndarray) or not o.flags.c_contiguous or not o.flags.writeable:
            raise DispatchError(f"download: output {k} must be a writeable C-contiguous numpy array",
                                fix="pass np.empty(nbytes, np.uint8) (or any dtype of that many bytes)")
        if o.nbytes != n:
            raise DispatchError(f"download: output {k} holds {o.nbytes} bytes, the range has {n}",
                                fix=f"pass an array of exactly {n} bytes")
    return outs
