"""From a recorded call to a replay: the buffers a trace owns, and one submission per call.

:func:`build` turns a :class:`~vyre.backends.recording.Recorder`'s events into a :class:`Replay`:

* every handle the recorded steps bind is an **input** (an argument's buffer), a **temporary** (allocated
  while tracing), a **params** handle (shared, immutable words) or **external** (an array the function
  closed over, or a global it wrote): externals and params are bound as they are; inputs and
  temporaries get buffers the replay owns;
* temporaries share buffers where their lives do not overlap (a greedy interval assignment by size, in
  step order), so a trace that frees its intermediates reuses them; a zero-filled allocation gets a
  buffer of its own, cleared at the start of every replay, and so does an upload (written once if no step
  writes it again, else written at the start of every replay);
* a call copies its arguments' buffers into the input buffers, runs every step, and copies each output
  (and each argument the function gave new contents) into a fresh array: copies and steps are one
  submission of a captured sequence (vyre/backends/captured.py), nothing is re-checked per step.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..array._array import Array, Buffer
from ..backends.handles import ResidentHandle
from ..backends.recording import Recorder, Step, paused, written
from ..errors import TraceError

_FOREVER = math.inf


@dataclass(slots=True)
class _Slot:
    handle: ResidentHandle
    kind: str  # "input" | "temp"
    first: float  # step index of the first use (-1: before the steps)
    last: float = -1.0  # step index of the last use (inf: read after the steps)
    zeroed: bool = False
    upload: tuple[np.ndarray, int] | None = None
    written_after_upload: bool = False
    buffer: ResidentHandle | None = None


@dataclass
class Replay:
    """One signature's captured work (see the module doc)."""

    backend: Any
    captured: Any  # the backend's CapturedSequence
    steps: list[Step]  # as replayed (handles mapped to the replay's buffers)
    inputs: list[ResidentHandle]  # the buffer of each array argument, in argument order
    outputs: list[tuple[ResidentHandle, tuple[int, ...], Any]]  # (buffer, shape, dtype) per output array
    updates: list[tuple[int, ResidentHandle]]  # (argument index, buffer) per argument given new contents
    writes: list[tuple[ResidentHandle, np.ndarray]]  # uploads repeated at every replay
    # (buffer, closed-over array's own buffer): state the function updated (an optimizer's parameters),
    # copied back after the steps, so the arrays it closed over hold the new values in their own buffers
    state: list[tuple[ResidentHandle, ResidentHandle]] = field(default_factory=list)
    owned: list[ResidentHandle] = field(default_factory=list)
    params: frozenset[int] = frozenset()  # ids of the shared params handles the steps bind (for explain)
    externals: int = 0
    clears: int = 0

    def run(self, args: Sequence[Array]) -> tuple[list[Array], list[Array]]:
        """Replay with ``args`` (the array arguments, materialised): the output arrays and, per update,
        the new array for that argument."""
        be = self.backend
        before = [(a._storage(), dst) for a, dst in zip(args, self.inputs)]
        outs = [_fresh(be, shape, dtype) for _, shape, dtype in self.outputs]
        news = [_fresh(be, args[k].shape, args[k].dtype) for k, _ in self.updates]
        after = [(src, o._storage()) for (src, _, _), o in zip(self.outputs, outs)]
        after += [(src, n._storage()) for (_, src), n in zip(self.updates, news)]
        after += self.state
        with paused():
            self.captured.run(writes=self.writes, before=before, after=after)
        return outs, news

    def free(self) -> None:
        """Release the buffers this replay owns (best effort: a lost device took them already)."""
        owned, self.owned = self.owned, []
        for h in owned:
            try:
                self.backend.free_resident(h)
            except Exception:  # noqa: BLE001 - device gone, or interpreter shutdown
                pass

    def __del__(self) -> None:
        self.free()

    def explain(self) -> str:
        names = {h.id: f"in{k}" for k, h in enumerate(self.inputs)}
        for k, (h, _, _) in enumerate(self.outputs):
            names.setdefault(h.id, f"out{k}")
        for h in self.owned:
            names.setdefault(h.id, f"t{len(names)}")
        for s in self.steps:
            for h in s.handles:
                if h.id in self.params:
                    names.setdefault(h.id, "params")
        lines = [f"{len(self.steps)} step(s) in one submission; {len(self.inputs)} input(s) copied in, "
                 f"{len(self.outputs)} output(s) copied out, {len(self.updates)} argument update(s), "
                 f"{len(self.state)} closed-over array(s) updated; "
                 f"{len(self.owned)} buffer(s) owned ({sum(h.nbytes for h in self.owned)} bytes), "
                 f"{self.externals} closed-over buffer(s) bound as they are, {self.clears} cleared per call, "
                 f"{len(self.writes)} upload(s) per call"]
        for k, s in enumerate(self.steps):
            grid = "" if s.config is None or s.config.grid is None else f" grid {tuple(s.config.grid)}"
            bufs = ", ".join(names.get(h.id, f"ext{h.id}") for h in s.handles)
            lines.append(f"  [{k}] {s.program.name}({bufs}){grid}  fingerprint {s.program.fingerprint[:12]}")
        return "\n".join(lines)


def _fresh(be: Any, shape: tuple[int, ...], dtype: Any) -> Array:
    a = Array(shape, dtype, be)
    a._allocate(zeroed=False)  # the replay's copy writes every byte (an empty array has a 4-byte buffer too)
    return a


def build(rec: Recorder, inputs: list[ResidentHandle], outputs: list[tuple[ResidentHandle, tuple[int, ...], Any]],
          updates: list[tuple[int, ResidentHandle]],
          state: Sequence[tuple[ResidentHandle, ResidentHandle]] = ()) -> Replay:
    """The :class:`Replay` of a recorded call (see the module doc). ``inputs``: the arguments' buffers at the
    start; ``outputs``: (handle, shape, dtype) per output array; ``updates``: (argument, final handle);
    ``state``: (final handle, the closed-over array's own buffer) per closed-over array given new contents."""
    be = rec.backend
    slots: dict[int, _Slot] = {}
    for h in inputs:
        slots.setdefault(h.id, _Slot(h, "input", -1.0))
    allocated: dict[int, bool] = {}
    steps: list[Step] = []
    for ev in rec.events:
        kind = ev[0]
        if kind == "alloc":
            allocated[ev[1].id] = ev[2]
        elif kind == "upload":
            h, raw, offset = ev[1], ev[2], ev[3]
            slot = slots.get(h.id)
            if h.id not in allocated or slot is not None or offset:
                raise TraceError("vyre.compile: the traced function wrote host data into an array it did not just "
                                 "create (an upload into an argument, a closed-over array or one already in use)",
                                 fix="create the data with vyre.array.asarray inside the function, or pass it "
                                     "as an argument")
            if raw.nbytes < h.nbytes:  # the rest of the buffer was zero when traced: so it is on replay
                raw = np.concatenate([raw, np.zeros(h.nbytes - raw.nbytes, np.uint8)])
            slots[h.id] = _Slot(h, "temp", float(len(steps)), float(len(steps)), zeroed=False,
                                upload=(raw, offset))
        else:
            step: Step = ev[1]
            k = len(steps)
            for h, w in zip(step.handles, written(step)):
                slot = slots.get(h.id)
                if slot is None and h.id in allocated:
                    slot = slots[h.id] = _Slot(h, "temp", float(k), zeroed=allocated[h.id])
                if slot is not None:
                    slot.last = float(k)
                    if w and slot.upload is not None:
                        slot.written_after_upload = True
            steps.append(step)
    for h, _, _ in outputs:
        if h.id in slots:
            slots[h.id].last = _FOREVER
    for h in [h for _, h in updates] + [h for h, _ in state]:
        if h.id in slots:
            slots[h.id].last = _FOREVER
    for h in inputs:
        slots[h.id].last = max(slots[h.id].last, 0.0)

    owned: list[ResidentHandle] = []
    try:
        writes = _assign(be, slots, owned)
        mapping = {sid: s.buffer for sid, s in slots.items()}
        replayed = [Step(s.program, tuple(mapping.get(h.id) or h for h in s.handles), s.config) for s in steps]
        clears = [s.buffer for s in slots.values() if s.zeroed and s.buffer is not None]
        ext = {h.id for s in steps for h in s.handles if h.id not in slots and h.id not in rec.params}
        with paused():
            cap = be.capture_resident_sequence(
                [(s.program, list(s.handles)) if s.config is None else (s.program, list(s.handles), s.config)
                 for s in replayed], clears)
        out_bufs = [(_mapped(mapping, h, outputs), shape, dtype) for h, shape, dtype in outputs]
        upd = [(k, _mapped(mapping, h, outputs)) for k, h in updates]
        kept = [(_mapped(mapping, h, outputs), own) for h, own in state]
        return Replay(be, cap, replayed, [mapping[h.id] for h in inputs],  # type: ignore[misc]
                      out_bufs, upd, writes, kept, owned, frozenset(rec.params), len(ext), len(clears))
    except BaseException:
        for h in owned:
            be.free_resident(h)
        raise


def _mapped(mapping: dict[int, ResidentHandle | None], h: ResidentHandle, _: Any) -> ResidentHandle:
    got = mapping.get(h.id)
    return got if got is not None else h  # an external (closed-over) array returned as it is: copied out


def _assign(be: Any, slots: dict[int, _Slot], owned: list[ResidentHandle]) -> list[tuple[ResidentHandle, np.ndarray]]:
    """Give every slot a buffer (sharing where lives do not overlap); upload constants once. Returns the
    uploads to repeat at every replay."""
    free: dict[int, list[tuple[float, ResidentHandle]]] = {}  # nbytes -> (busy until, buffer) donatable
    writes: list[tuple[ResidentHandle, np.ndarray]] = []
    with paused():
        for s in sorted(slots.values(), key=lambda s: s.first):
            n = s.handle.nbytes
            first_user = s.zeroed or s.upload is not None or s.kind == "input"
            buf = None
            if not first_user:
                pool = free.get(n, [])
                for k, (until, b) in enumerate(pool):
                    if until < s.first:
                        buf = b
                        del pool[k]
                        break
            if buf is None:
                buf = be.allocate_resident(n, label="vyre-trace")
                owned.append(buf)
            s.buffer = buf
            if s.upload is not None:
                raw, _ = s.upload
                if s.written_after_upload:
                    writes.append((buf, raw))
                else:
                    be.upload_resident(buf, raw)
                    continue  # a constant: never donated
            if s.last != _FOREVER:
                free.setdefault(n, []).append((s.last, buf))
    return writes


__all__ = ["Replay", "build", "Buffer"]
