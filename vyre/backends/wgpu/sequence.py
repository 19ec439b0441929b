"""Resident sequences: many dispatches over resident buffers in one encoder, one pass, one submit.

A step is ``(program, handles)`` or ``(program, handles, grid)`` (``grid`` may also be a
DispatchConfig, for ``counts``). Every step is checked before anything is encoded. The
steps go into one compute pass: WebGPU orders the dispatches of a pass and makes the
storage writes of one visible to the next, so a dependent chain is correct. Only the
requested handles or ``(handle, offset, nbytes)`` ranges are read back, with one map.

The encoder helpers here (``_encode_passes``, ``_submit_sequence``) also serve
``run_pipeline`` (pipeline_run.py); handle checks and step preparation live in resident.py.
"""

from __future__ import annotations

import itertools
import time
from dataclasses import dataclass

import numpy as np

from ...errors import DispatchError
from ..config import DispatchConfig
from .timestamps import FEATURE, QueryPair, TimedDispatch, elapsed_ns, timestamp_period
from .transfer import align  # noqa: F401  (re-exported for resident.py)


def as_config(config) -> DispatchConfig:
    if config is None:
        return DispatchConfig()
    if isinstance(config, DispatchConfig):
        return config
    try:
        return DispatchConfig.model_validate(config)
    except Exception as exc:
        raise DispatchError(f"invalid dispatch config {config!r}: {exc}", fix="pass a vyre.DispatchConfig") from None


@dataclass
class Prepared:
    """One checked step of a resident dispatch, ready to encode."""

    compiled: object
    bind_groups: list
    workgroups: tuple[int, int, int]  # folded grid to dispatch
    total: int  # logical workgroups (0: nothing to run)


_DEFAULT_CONFIG = DispatchConfig()  # frozen: shared by every step given without a grid


def _step_config(extra, what: str) -> DispatchConfig:
    if extra is None:
        return _DEFAULT_CONFIG
    if isinstance(extra, DispatchConfig):
        return extra
    try:
        return DispatchConfig(grid=extra)
    except Exception as exc:
        raise DispatchError(f"{what}: invalid grid {extra!r}: {exc}",
                            fix="give the grid as an int or a tuple of up to three ints") from None


def _memo_key(step):
    """A cheap key for steps that must prepare identically within one call: the program and
    handle objects (alive for the call, so their ids are unique) and the grid or config as
    given. None when the step cannot be keyed (it is then prepared on its own)."""
    try:
        extra = step[2] if len(step) == 3 else None
        key = (id(step[0]), tuple(map(id, step[1])),
               id(extra) if isinstance(extra, DispatchConfig) else extra)
        hash(key)
        return key
    except TypeError:
        return None


_PASS_CALLS = []


def _pass_calls():
    """wgpu-native's compute pass entry points, called directly on the hot path (set_pipeline,
    set_bind_group, dispatch_workgroups): wgpu-py's wrappers add ~1 µs of Python per call
    (error-capture proxy, an offsets array per set_bind_group). Pass errors still surface:
    wgpu-native reports them when the encoder is finished, which raises. None when the
    private entry points are not there (then the wgpu-py methods are used)."""
    if not _PASS_CALLS:
        try:
            from wgpu.backends.wgpu_native._ffi import ffi, lib

            _PASS_CALLS.append((lib.wgpuComputePassEncoderSetPipeline, lib.wgpuComputePassEncoderSetBindGroup,
                                lib.wgpuComputePassEncoderDispatchWorkgroups, ffi.NULL))
        except Exception:  # noqa: BLE001 - any other wgpu build: the public methods
            _PASS_CALLS.append(None)
    return _PASS_CALLS[0]


class SequenceMixin:
    """Resident sequences (mixed into WgpuBackend through ResidentMixin)."""

    def dispatch_resident_sequence(self, steps, read=None) -> list[np.ndarray]:
        """Run ``steps`` in order (one encoder, one pass, one submit). ``read``: handles or
        ``(handle, offset, nbytes)`` ranges to read back afterwards, returned as uint8 arrays;
        with ``read=None`` nothing is read and the call does not wait for the GPU."""
        return self._run_sequence(steps, (), 0, read, timed=False)

    def dispatch_resident_repeated_sequence(self, prefix, repeated, repeat_count: int, read=None) -> list[np.ndarray]:
        """``prefix`` once, then ``repeated`` ``repeat_count`` times, as one sequence."""
        return self._run_sequence(prefix, repeated, repeat_count, read, timed=False)

    def dispatch_resident_sequence_timed(self, steps, read=None) -> TimedDispatch:
        """``dispatch_resident_sequence`` that waits and reports the GPU time of the pass."""
        return self._run_sequence(steps, (), 0, read, timed=True)

    def _run_sequence(self, prefix, repeated, repeat_count, read, timed: bool):
        if isinstance(repeat_count, bool) or not isinstance(repeat_count, (int, np.integer)) or repeat_count < 0:
            raise DispatchError(f"repeat_count must be an int >= 0, got {repeat_count!r}")
        with self._lock:
            st = self._ready()
            pre = self._prepare_steps(st, prefix, "step")
            rep = self._prepare_steps(st, repeated, "repeated step")
            reads = [] if read is None else [self._range(st, r, f"read {k}") for k, r in enumerate(read)]
            steps = itertools.chain(pre, itertools.chain.from_iterable(itertools.repeat(rep, int(repeat_count))))
            return self._submit_sequence(st, [((), steps)], reads, timed, label="vyre-resident-sequence")

    def _prepare_steps(self, st, steps, what: str) -> list[Prepared]:
        """Check and prepare every step; identical steps are prepared once."""
        if isinstance(steps, tuple) and len(steps) in (2, 3) and not isinstance(steps[0], (tuple, list)):
            raise DispatchError(f"{what}s must be a list of (program, handles[, grid]) steps, got one step",
                                fix="wrap the step in a list: [(program, handles)]")
        memo: dict = {}
        out = []
        for k, step in enumerate(steps):
            where = f"{what} {k}"
            if not isinstance(step, (tuple, list)) or len(step) not in (2, 3):
                raise DispatchError(f"{where}: expected (program, handles) or (program, handles, grid), got {step!r:.200}")
            key = _memo_key(step)
            prepared = memo.get(key) if key is not None else None
            if prepared is None:
                config = _step_config(step[2] if len(step) == 3 else None, where)
                prepared = self._prepare(st, step[0], step[1], config, where)
                if key is not None:
                    memo[key] = prepared
            out.append(prepared)
        return out

    def _encode_passes(self, encoder, segments, label: str, timer: QueryPair | None = None) -> int:
        """Record ``segments`` (``(clears, steps)``: buffers to zero, then one compute pass over the steps).
        Timestamps (``timer``) mark the start of the first pass and the end of the last. Returns the
        number of dispatches recorded."""
        n, last = 0, len(segments) - 1
        for i, (clears, steps) in enumerate(segments):
            for buf, size in clears:
                encoder.clear_buffer(buf, 0, size)
            tw = timer.writes(i == 0, i == last) if timer is not None else None
            cpass = encoder.begin_compute_pass(label=label, timestamp_writes=tw)
            calls = _pass_calls()
            handle = getattr(cpass, "_internal", None)
            if calls is not None and handle is not None:
                n += self._encode_steps_native(handle, steps, calls)
            else:
                n += self._encode_steps(cpass, steps)
            cpass.end()
        return n

    @staticmethod
    def _encode_steps(cpass, steps) -> int:
        """set_pipeline/set_bind_group only when they change, then dispatch_workgroups (wgpu-py methods)."""
        n, pipeline, bound = 0, None, []
        for p in steps:
            if not p.total:
                continue
            if p.compiled.pipeline is not pipeline:
                pipeline = p.compiled.pipeline
                cpass.set_pipeline(pipeline)
                bound = [None] * len(p.bind_groups)
            for g, bg in enumerate(p.bind_groups):
                if bound[g] is not bg:
                    cpass.set_bind_group(g, bg)
                    bound[g] = bg
            cpass.dispatch_workgroups(*p.workgroups)
            n += 1
        return n

    @staticmethod
    def _encode_steps_native(handle, steps, calls) -> int:
        """``_encode_steps`` through wgpu-native's entry points (the objects stay alive: ``steps`` holds
        them until the pass ends, and the recorded commands keep their own references)."""
        set_pipeline, set_bind_group, dispatch, null = calls
        n, pipeline, bound = 0, None, []
        for p in steps:
            if not p.total:
                continue
            if p.compiled.pipeline is not pipeline:
                pipeline = p.compiled.pipeline
                set_pipeline(handle, pipeline._internal)
                bound = [None] * len(p.bind_groups)
            for g, bg in enumerate(p.bind_groups):
                if bound[g] is not bg:
                    set_bind_group(handle, g, bg._internal, 0, null)
                    bound[g] = bg
            x, y, z = p.workgroups
            dispatch(handle, x, y, z)
            n += 1
        return n

    def _submit_sequence(self, st, segments, reads, timed: bool, label: str, uploads=()):
        """One encoder: uploads, segments, copies of ``reads`` (and the timestamps); one submit; one map.
        Returns the reads (``[]`` without waiting when there are none), or a TimedDispatch."""
        use_ts = timed and FEATURE in self._features
        with self._gpu_guard():
            encoder = self._device.create_command_encoder(label=label)
            if uploads:
                self._encode_uploads(encoder, uploads)
            timer = None
            if use_ts:
                if st.timer is None:
                    st.timer = QueryPair(self._device)
                timer = st.timer
            t0 = time.perf_counter_ns()
            n = self._encode_passes(encoder, segments, label, timer)
            extra = [timer.resolve(encoder)] if timer is not None else []
            layout, total = self._encode_reads(encoder, list(reads) + extra)
            if timed and not total:  # nothing to map: clear a few staging bytes as a fence
                encoder.clear_buffer(self._staging.ensure_readback(16), 0, 16)
                total = 16
            self._queue.submit([encoder.finish()])
            self._stats.bump("resident_dispatches", n)
            self._stats.bump("resident_sequences")
            if not timed:
                return self._collect_reads(layout, total) if reads else []
            got = self._collect_reads(layout, total)
            wall = time.perf_counter_ns() - t0
        outs = got[: len(reads)]
        if timer is not None:
            return TimedDispatch(outs, elapsed_ns(got[-1], timestamp_period(self._queue)), "timestamp", wall)
        return TimedDispatch(outs, wall, "wall-clock", wall)


__all__ = ["SequenceMixin", "Prepared", "align", "as_config"]
