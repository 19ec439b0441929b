"""Asynchronous and timed dispatch.

``dispatch_async`` checks and submits a dispatch, starts mapping its readback buffer and
returns a :class:`PendingDispatch` at once; ``done()`` asks without blocking (wgpu-py's poll
thread settles the map), ``wait(timeout)`` returns the outputs. Each dispatch in flight owns
its device buffers, params uniform, bind groups and readback buffer (a "slot"), taken from
a small pool keyed by pipeline and size classes and given back by ``wait``, so several can
be in flight at once and a steady stream of them creates no GPU object. Inputs go through
``queue.write_buffer`` (it does not block, unlike mapping a shared staging buffer).

``dispatch_timed`` is the same path with timestamp queries around the compute pass (see
timestamps.py), waited at once.

A pending dispatch remembers the device generation it was submitted on: after a device
loss its ``wait`` raises DeviceLostError.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from dataclasses import dataclass, field

import numpy as np

from ...errors import DeviceLostError, DispatchError, VyreError
from ...ir.types import Access
from ..host import fold_grid, params_words, plan_dispatch, storage_to_host
from .device import translate_error
from .timestamps import FEATURE, QueryPair, TimedDispatch, elapsed_ns, timestamp_period

IDLE_PER_KEY = 4
IDLE_KEYS = 32
_POLL_SLICE_S = 0.05


def _size_class(nbytes: int) -> int:
    need = max(16, (nbytes + 15) // 16 * 16)
    return 1 << (need - 1).bit_length()


def _settled(promise, timeout: float | None) -> bool:
    """Whether the map promise has settled, waiting at most ``timeout`` seconds (0: just ask)."""
    event = getattr(promise, "_thread_event", None)
    if event is not None:
        return event.is_set() if timeout == 0 else event.wait(timeout)
    if str(getattr(promise, "_state", "pending")) != "pending":  # pragma: no cover - other wgpu-py versions
        return True
    if timeout:  # pragma: no cover
        time.sleep(min(timeout, 0.001))
    return False


def _bytes4(data: np.ndarray) -> np.ndarray:
    raw = np.ascontiguousarray(data).reshape(-1).view(np.uint8)
    if raw.nbytes % 4:
        raw = np.concatenate([raw, np.zeros(4 - raw.nbytes % 4, np.uint8)])
    return raw


@dataclass
class Slot:
    """Everything one dispatch in flight owns."""

    key: tuple
    compiled: object
    buffers: list  # per program buffer
    params: object
    bind_groups: list
    readback: object
    timer: QueryPair | None = None


@dataclass
class AsyncPool:
    generation: int
    idle: OrderedDict = field(default_factory=OrderedDict)  # slot key -> [Slot]


class PendingDispatch:
    """A submitted dispatch. ``done()`` never blocks; ``wait(timeout=None)`` returns the outputs
    (and raises DispatchError on timeout, after which waiting again is fine)."""

    def __init__(self, backend, program, plan=None, slot=None, promise=None, layout=(), total=0,
                 timed=False, outputs=None):
        self._backend = backend
        self.program = program
        self._plan, self._slot, self._promise = plan, slot, promise
        self._layout, self._total, self._timed = layout, total, timed
        self._generation = backend._generation
        self._t0 = time.perf_counter_ns()
        self._outputs = outputs
        self._error: BaseException | None = None
        self.gpu_ns: int | None = 0 if outputs is not None else None
        self.wall_ns: int | None = 0 if outputs is not None else None
        self.source = "none" if outputs is not None else None

    def __repr__(self) -> str:
        state = "done" if self._outputs is not None else ("failed" if self._error else "pending")
        return f"PendingDispatch({self.program.name!r}, {state})"

    def _lost(self) -> bool:
        b = self._backend
        return b._generation != self._generation or b.device_lost()

    def done(self) -> bool:
        """True once ``wait`` would return (or raise) without blocking."""
        if self._outputs is not None or self._error is not None or self._lost():
            return True
        return _settled(self._promise, 0)

    def wait(self, timeout: float | None = None) -> list[np.ndarray]:
        if self._outputs is not None:
            return self._outputs
        if self._error is not None:
            raise self._error
        deadline = None if timeout is None else time.monotonic() + max(0.0, float(timeout))
        while True:
            if self._lost():
                if getattr(self._backend, "_closed", False):
                    try:
                        self._backend._check_alive()  # raises BackendError: shut down
                    except VyreError as exc:
                        self._fail(exc)
                self._fail(DeviceLostError(f"dispatch of {self.program.name!r} was in flight when the GPU device "
                                           "was lost; its results are gone",
                                           fix="call backend.try_recover() and dispatch again"))
            left = _POLL_SLICE_S if deadline is None else min(_POLL_SLICE_S, deadline - time.monotonic())
            if _settled(self._promise, max(0.0, left)):
                break
            if deadline is not None and time.monotonic() >= deadline:
                raise DispatchError(f"dispatch of {self.program.name!r} did not finish within {timeout} s "
                                    "(it is still running)",
                                    fix="call wait() again, with a larger timeout or none")
        self._collect()
        return self._outputs

    def _fail(self, err: BaseException):
        self._error = err
        self._slot = None
        raise err

    def _collect(self) -> None:
        b = self._backend
        with b._lock:
            if self._outputs is not None:  # another thread collected them meanwhile
                return
            if self._error is not None:
                raise self._error
            slot = self._slot
            if self._lost():
                self._fail(DeviceLostError(f"the GPU device was lost before the results of {self.program.name!r} "
                                           "were read", fix="call backend.try_recover() and dispatch again"))
            rb = slot.readback
            try:
                self._promise.sync_wait()
                outs = []
                for b_plan, pos in self._layout:
                    mv = rb.read_mapped(pos, b_plan.nbytes, copy=False)
                    outs.append(storage_to_host(b_plan.decl, mv, b_plan.count))
                    del mv
                stamps = None
                if slot.timer is not None:
                    mv = rb.read_mapped(self._total - 16, 16, copy=False)
                    stamps = np.frombuffer(mv, np.uint8).copy()
                    del mv
                rb.unmap()
            except Exception as exc:
                err = translate_error(exc, stage="dispatch", program=self.program.name)
                if isinstance(err, DeviceLostError):
                    b._mark_lost()
                self._fail(err)
            self.wall_ns = time.perf_counter_ns() - self._t0
            if stamps is not None:
                self.gpu_ns, self.source = elapsed_ns(stamps, timestamp_period(b._queue)), "timestamp"
            else:
                self.gpu_ns, self.source = self.wall_ns, "wall-clock"
            b._give_back_slot(slot)
            self._slot = None
            self._outputs = outs


class AsyncMixin:
    """``dispatch_async`` and ``dispatch_timed`` of WgpuBackend."""

    def dispatch_async(self, program, inputs=None, config=None) -> PendingDispatch:
        """Submit a dispatch and return at once; ``.wait()`` on the result gives the outputs."""
        return self._launch(program, inputs, config, timed=False)

    def dispatch_timed(self, program, inputs=None, config=None) -> TimedDispatch:
        """Dispatch and wait; returns ``TimedDispatch(outputs, gpu_ns, source, wall_ns)``. ``source`` is
        ``"timestamp"`` (GPU timestamp queries) or ``"wall-clock"`` where the adapter has none."""
        pending = self._launch(program, inputs, config, timed=True)
        outs = pending.wait()
        return TimedDispatch(outs, pending.gpu_ns, pending.source, pending.wall_ns)

    # ---- internals -------------------------------------------------------------------
    def _async_pool(self) -> AsyncPool:
        pool = self.__dict__.get("_async_slots")
        if pool is None or pool.generation != self._generation:
            pool = self.__dict__["_async_slots"] = AsyncPool(self._generation)
        return pool

    def _launch(self, program, inputs, config, timed: bool) -> PendingDispatch:
        from .sequence import as_config

        self._check_alive()
        config = as_config(config)
        self._validate(program)
        limits = self._limits
        plan = plan_dispatch(program, inputs, config, max_storage_bytes=int(limits["max-storage-buffer-binding-size"]))
        uniform_limit = int(limits.get("max-uniform-buffer-binding-size", 65536))
        for b in plan.buffers:
            if b.decl.access is Access.UNIFORM and (b.nbytes + 15) // 16 * 16 > uniform_limit:
                raise DispatchError(f"uniform buffer {b.decl.name!r} needs {b.nbytes} bytes, over the uniform "
                                    f"binding limit of {uniform_limit}", fix="declare it with access='read' instead")
        workgroups = fold_grid(plan.grid, int(limits.get("max-compute-workgroups-per-dimension", 65535)))
        compiled = self._compiled(program)
        if plan.total_workgroups == 0:
            outs = [storage_to_host(b.decl, b.data if b.data is not None else np.zeros(b.nbytes, np.uint8), b.count)
                    for b in plan.outputs]
            return PendingDispatch(self, program, outputs=outs)
        with self._lock:
            self._check_alive()
            use_ts = timed and FEATURE in self._features
            slot = self._take_slot(compiled, plan, use_ts)
            try:
                return self._submit_async(program, plan, slot, workgroups, timed, config.label)
            except Exception as exc:
                err = translate_error(exc, stage="dispatch", wgsl=getattr(compiled, "wgsl", None), program=program.name)
                if isinstance(err, DeviceLostError):
                    self._mark_lost()
                if err is exc:
                    raise
                raise err from exc

    def _submit_async(self, program, plan, slot: Slot, workgroups, timed: bool, label) -> PendingDispatch:
        import wgpu

        queue, label = self._queue, label or f"vyre-async:{program.name}"
        for b in plan.buffers:
            if b.data is not None and b.data.nbytes:
                queue.write_buffer(slot.buffers[b.index], 0, _bytes4(b.data))
                self._stats.bump("bytes_uploaded", b.data.nbytes)
        queue.write_buffer(slot.params, 0, params_words(plan))
        encoder = self._device.create_command_encoder(label=label)
        for b in plan.outputs:
            if b.data is None:
                encoder.clear_buffer(slot.buffers[b.index], 0, b.nbytes)
        tw = slot.timer.writes(True, True) if slot.timer is not None else None
        cpass = encoder.begin_compute_pass(label=label, timestamp_writes=tw)
        cpass.set_pipeline(slot.compiled.pipeline)
        for g, bg in enumerate(slot.bind_groups):
            cpass.set_bind_group(g, bg)
        cpass.dispatch_workgroups(*workgroups)
        cpass.end()
        layout, pos = [], 0
        for b in plan.outputs:
            encoder.copy_buffer_to_buffer(slot.buffers[b.index], 0, slot.readback, pos, b.nbytes)
            layout.append((b, pos))
            pos += (b.nbytes + 15) // 16 * 16
        if slot.timer is not None:
            src, off, n = slot.timer.resolve(encoder)
            encoder.copy_buffer_to_buffer(src, off, slot.readback, pos, n)
            pos += n
        if pos == 0:  # no outputs: clear a few bytes so the map waits for this submission
            encoder.clear_buffer(slot.readback, 0, 16)
            pos = 16
        pending = PendingDispatch(self, program, plan, slot, None, layout, pos, timed)
        queue.submit([encoder.finish()])
        try:
            promise = slot.readback.map_async("READ_NOSYNC", 0, pos)
        except (ValueError, KeyError, TypeError):
            promise = slot.readback.map_async(wgpu.MapMode.READ, 0, pos)
        pending._promise = promise
        self._stats.bump("dispatches_async")
        return pending

    def _take_slot(self, compiled, plan, timed: bool) -> Slot:
        cap = int(self._limits["max-storage-buffer-binding-size"])
        sizes = tuple(b.nbytes if b.decl.access is Access.UNIFORM else min(_size_class(b.nbytes), max(b.nbytes, cap))
                      for b in plan.buffers)
        out_bytes = sum((b.nbytes + 15) // 16 * 16 for b in plan.outputs) + (16 if timed else 0)
        key = (compiled.key, sizes, _size_class(out_bytes), timed, len(params_words(plan)))
        pool = self._async_pool()
        idle = pool.idle.get(key)
        while idle:
            slot = idle.pop()
            if slot.compiled is compiled:
                return slot
        return self._new_slot(key, compiled, plan, sizes, _size_class(out_bytes), timed)

    def _new_slot(self, key, compiled, plan, sizes, rb_size: int, timed: bool) -> Slot:
        import wgpu

        BU, dev = wgpu.BufferUsage, self._device
        name = compiled.program_name
        buffers = []
        for b, size in zip(plan.buffers, sizes):
            uniform = b.decl.access is Access.UNIFORM
            usage = (BU.UNIFORM | BU.COPY_DST) if uniform else (BU.STORAGE | BU.COPY_SRC | BU.COPY_DST)
            buffers.append(dev.create_buffer(label=f"vyre-async:{name}.{b.decl.name}",
                                             size=max(16, (size + 15) // 16 * 16), usage=usage))
        words = params_words(plan)
        params = dev.create_buffer(label=f"vyre-async:{name}._vyre", size=max(16, words.nbytes),
                                   usage=BU.UNIFORM | BU.COPY_DST)
        readback = dev.create_buffer(label=f"vyre-async:{name}:readback", size=rb_size, usage=BU.MAP_READ | BU.COPY_DST)
        self._stats.bump("buffers_created", len(buffers) + 2)
        groups = []
        for g, slots in enumerate(compiled.groups):
            entries = []
            for s in slots:
                buf = params if s.index < 0 else buffers[s.index]
                entries.append({"binding": s.binding, "resource": {"buffer": buf, "offset": 0, "size": buf.size}})
            groups.append(dev.create_bind_group(label=f"vyre-async:{name}:g{g}", layout=compiled.group_layouts[g],
                                                entries=entries))
            self._stats.bump("bind_groups_created")
        timer = QueryPair(dev) if timed else None
        return Slot(key, compiled, buffers, params, groups, readback, timer)

    def _give_back_slot(self, slot: Slot) -> None:
        pool = self._async_pool()
        idle = pool.idle.setdefault(slot.key, [])
        pool.idle.move_to_end(slot.key)
        if len(idle) < IDLE_PER_KEY:
            idle.append(slot)
        while len(pool.idle) > IDLE_KEYS:
            pool.idle.popitem(last=False)


__all__ = ["AsyncMixin", "PendingDispatch", "TimedDispatch"]
