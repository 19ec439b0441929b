"""Timing helpers, result records, baseline discovery and the raw wgpu-py baseline device.

Conventions every benchmark follows:

* A measurement times one *operation* (one kernel launch, one transfer, one round trip).
  :class:`Timing` holds seconds per operation for several repetitions; the headline value
  comes from the median, ``best`` from the minimum.
* Device-side kernel time: vyre runs on resident buffers (data already on the device);
  ``k`` launches go into one ``dispatch_resident_sequence_timed`` (one pass, one submit) and
  the pass's timestamp queries give the GPU time, divided by ``k``. Without timestamp
  queries the wall-clock time of the same sequence is used (the record's ``method`` says
  which). Raw wgpu-py kernels are timed the same way (their own query set); torch and cupy
  with CUDA events around ``k`` launches; numpy with ``perf_counter``.
* ``ratio`` of a baseline = baseline time / vyre time for the same work, so > 1 means vyre
  is faster (for throughputs it equals vyre's value / the baseline's value).
"""

from __future__ import annotations

import os
import platform
import re
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from vyre.backends.wgpu import WgpuBackend

    from ._baselines import Baselines

SCHEMA = "vyre-bench/1"

#: Baselines, in the order tables show them: key -> what it is.
BASELINES = {
    "numpy": "numpy on the CPU",
    "torch": "PyTorch on the CUDA device",
    "cupy": "CuPy on the CUDA device",
    "taichi": "Taichi kernels on its Vulkan backend, same process and GPU (wall clock with ti.sync())",
    "taichi_tiled": "Taichi tiled matmul (ti.simt.block.SharedArray) on its Vulkan backend",
    "taichi_strided": "Taichi sum: grid-stride partial sums per thread, then the += reduction",
    "raw_wgpu": "hand-written raw wgpu-py on the same adapter",
    "raw_wgpu_one_pass": "raw wgpu-py, all dispatches in one pass and one submit",
    "raw_cffi": "wgpu-native's C entry points through cffi, nothing between them (the host floor)",
    "raw_wgpu_cwb": "raw wgpu-py wgpu.utils.compute_with_buffers (everything created per call)",
    "dispatch": "vyre backend.dispatch() of the same program (the op path's overhead)",
    "torch_cuda_graph": "PyTorch with CUDA graphs (torch.cuda.graph capture, replay)",
    "vyre_eager": "vyre running the same function without vyre.compile",
    "vyre_sequence": "vyre dispatch_resident_sequence (every step checked per call)",
}


# ----------------------------------------------------------------------------- timing
@dataclass
class Timing:
    """Seconds per operation, one entry per repetition (``inner`` operations each)."""

    samples: list[float]
    inner: int = 1
    method: str = ""
    extra: dict = field(default_factory=dict)

    @property
    def median(self) -> float:
        return float(statistics.median(self.samples))

    @property
    def min(self) -> float:
        return float(min(self.samples))

    def to_json(self) -> dict:
        return {"median": self.median, "min": self.min, "samples": [float(s) for s in self.samples],
                "inner": self.inner, **self.extra}


def repeat(sample: Callable[[], float], reps: int, warmup: int = 1) -> list[float]:
    """Call ``sample`` (returns seconds per operation) ``warmup`` times, then ``reps`` times."""
    for _ in range(warmup):
        sample()
    return [float(sample()) for _ in range(reps)]


def host_timing(fn: Callable[[], object], *, reps: int = 5, warmup: int = 1, inner: int | None = None,
                target_s: float = 0.05, max_inner: int = 10_000, budget_s: float | None = None,
                method: str = "perf_counter") -> Timing:
    """Wall-clock time of ``fn()`` (which must finish its work before returning).

    ``inner`` calls per sample; when None it is calibrated so one sample takes about
    ``target_s``. With ``budget_s`` repetitions stop early once that much time was spent
    (at least one sample is always taken)."""
    t0 = time.perf_counter()
    for _ in range(max(1, warmup)):
        fn()
    once = time.perf_counter() - t0
    if inner is None:
        inner = int(max(1, min(max_inner, target_s / max(once / max(1, warmup), 1e-9))))
    samples, start = [], time.perf_counter()
    for _ in range(reps):
        t = time.perf_counter()
        for _ in range(inner):
            fn()
        samples.append((time.perf_counter() - t) / inner)
        if budget_s is not None and time.perf_counter() - start > budget_s:
            break
    return Timing(samples, inner, method)


def cpu_timing(fn: Callable[[], object], reps: int, inner: int) -> Timing:
    """Thread CPU time of ``fn()`` per call (one warm-up call, then ``reps`` samples of ``inner`` calls): the
    host cost on a CPU adapter (lavapipe), whose GPU work runs on other threads of the same CPU."""
    fn()
    samples = []
    for _ in range(reps):
        t = time.thread_time()
        for _ in range(inner):
            fn()
        samples.append((time.thread_time() - t) / inner)
    return Timing(samples, inner, "thread_time")


#: Seconds of untimed work before each kernel measurement (see :func:`calibrated`).
WARM_S = 0.25


def calibrated(sample_k: Callable[[int], float], *, reps: int = 5, target_s: float = 0.02,
               max_k: int = 1000, method: str = "", k: int | None = None) -> Timing:
    """``sample_k(k)`` runs k operations back to back and returns seconds per operation.
    Two warm-up calls with k=1 estimate one operation; k is chosen so a sample takes about
    ``target_s`` (capped at ``max_k``)."""
    sample_k(1)
    once = sample_k(1)
    if k is None:
        k = int(max(1, min(max_k, target_s / max(once, 1e-9))))
    # Keep the device busy for a while before timing: GPUs idle at low clocks and take a few
    # hundred milliseconds of sustained work to reach full speed (the first family measured in a
    # run was 2.4x slower on the H200 without this).
    end = time.perf_counter() + WARM_S
    while time.perf_counter() < end:
        sample_k(k)
    return Timing([float(sample_k(k)) for _ in range(reps)], k, method)


# ----------------------------------------------------------------------------- records
@dataclass
class Outcome:
    """One implementation's result: a Timing, or why there is none (``note``)."""

    timing: Timing | None = None
    note: str | None = None
    method: str | None = None
    label: str | None = None
    extra: dict = field(default_factory=dict)

    @classmethod
    def missing(cls, note: str) -> Outcome:
        return cls(None, note)


def record(*, bench: str, name: str, metric: str, params: dict, unit: str, vyre: Outcome,
           baselines: dict[str, Outcome] | None = None, work: float | None = None, scale: float = 1.0,
           higher_is_better: bool | None = None, check: dict | None = None, notes: list[str] | None = None) -> dict:
    """A result record (plain JSON data).

    With ``work`` (bytes, flops, ...) the value is ``work / seconds / scale`` (a throughput,
    higher is better); without it the value is ``seconds * scale`` (a time, lower is better).
    """
    if higher_is_better is None:
        higher_is_better = work is not None

    def value(seconds: float) -> float:
        return work / seconds / scale if work is not None else seconds * scale

    def outcome(o: Outcome, ref: Timing | None) -> dict:
        if o.timing is None:
            return {"available": False, "note": o.note or "not measured", **({"label": o.label} if o.label else {})}
        t = o.timing
        out = {"available": True, "value": value(t.median),
               "best": value(t.min), "method": o.method or t.method, "time_s": t.to_json()}
        if o.label:
            out["label"] = o.label
        if ref is not None:
            out["ratio"] = t.median / ref.median
        if o.note:
            out["note"] = o.note
        if o.extra:
            out["extra"] = o.extra
        return out

    rec = {"bench": bench, "name": name, "metric": metric, "params": params, "unit": unit,
           "higher_is_better": higher_is_better}
    rec.update(outcome(vyre, None))
    rec["baselines"] = {k: outcome(o, vyre.timing) for k, o in (baselines or {}).items()}
    rec["check"] = check
    rec["notes"] = list(notes or [])
    return rec


def fmt(v: float | None, unit: str = "") -> str:
    if v is None:
        return "n.a."
    a = abs(v)
    s = f"{v:.3g}" if a < 1000 else f"{v:,.0f}"
    return f"{s} {unit}".strip()


def slug(text: str) -> str:
    s = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")
    return s or "adapter"


# ----------------------------------------------------------------------------- host
def f32_flops(m: int, n: int, k: int) -> float:
    return 2.0 * m * n * k


def host_description() -> dict:
    import wgpu

    return {"python": sys.version.split()[0], "platform": platform.platform(), "machine": platform.machine(),
            "cpus": os.cpu_count(), "numpy": np.__version__, "wgpu": wgpu.__version__}



# ----------------------------------------------------------------------------- progress
class Progress:
    """One flushed line per measurement: ``[k/N elapsed] text``; on a terminal, a tqdm bar below them."""

    def __init__(self, total: int, stream=None):
        self.total = total
        self.done = 0
        self.t0 = time.perf_counter()
        self.stream = stream or sys.stdout
        self.bar = None

    def _bar(self):
        if self.bar is None and bool(getattr(self.stream, "isatty", lambda: False)()) and self.total:
            from tqdm import tqdm

            self.bar = tqdm(total=self.total, file=self.stream, unit="run", dynamic_ncols=True, leave=False)
        return self.bar

    def say(self, text: str) -> None:
        elapsed = time.perf_counter() - self.t0
        line = f"[{self.done:>3}/{self.total} {elapsed:6.1f}s] {text}"
        bar = self._bar()
        if bar is not None:
            bar.write(line, file=self.stream)
        else:
            print(line, file=self.stream, flush=True)

    def step(self, text: str) -> None:
        self.done += 1
        bar = self._bar()
        if bar is not None:
            bar.update(1)
        self.say(text)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None


def summary_line(rec: dict) -> str:
    """``name: value unit (baseline ratio, ...)`` for the progress output."""
    head = f"{rec['bench']}: {rec['name']}"
    if not rec.get("available", False):
        return f"{head}: n.a. ({rec.get('note')})"
    parts = []
    for key, b in rec["baselines"].items():
        if b.get("available"):
            parts.append(f"{key} {fmt(b['value'])} ({b['ratio']:.2f}x)")
    tail = f"  vs {', '.join(parts)}" if parts else ""
    bad = rec.get("check") and not rec["check"].get("ok", True)
    return f"{head}: {fmt(rec['value'], rec['unit'])}{tail}{'  CHECK FAILED' if bad else ''}"


# ----------------------------------------------------------------------------- vyre helpers
class ResidentOp:
    """An op pipeline (vyre.ops) on resident buffers: one handle per pipeline buffer, inputs
    uploaded once, the steps ready for ``dispatch_resident_sequence*``."""

    def __init__(self, gpu, op_id: str, params: dict, inputs, variant: str = "generic"):
        from vyre.ops.api import pipeline_for
        from vyre.ops.pipeline import ResidentPipeline

        self.gpu = gpu
        self.op_id = op_id
        self.params = params
        self.pipe = pipeline_for(op_id, params, variant)  # a kernel variant: vyre.ops.variants
        self._resident = ResidentPipeline(gpu, self.pipe, inputs, label="bench")
        self.handles, self.steps = self._resident.handles, self._resident.steps

    @property
    def programs(self):
        return self.pipe.programs

    def output(self, name: str | None = None) -> np.ndarray:
        from vyre.backends.host import storage_to_host
        from vyre.ir.program import BufferDecl
        from vyre.ir.types import Access

        name = name or self.pipe.outputs[0]
        spec = self.pipe.buffers[name]
        raw = self.gpu.download_resident(self.handles[name])
        a = storage_to_host(BufferDecl(name=name, binding=0, dtype=spec.dtype, access=Access.READ_WRITE,
                                       count=spec.count), raw, spec.count)
        shape = self.pipe.output_shapes.get(name)
        return a.reshape(shape) if shape is not None else a

    def free(self) -> None:
        self._resident.free()
        self.handles = {}


def over_binding_limit(gpu, nbytes: int) -> str | None:
    """Why a buffer of ``nbytes`` cannot be bound on this adapter (None when it can)."""
    limit = gpu.max_storage_bytes_limit
    if nbytes > limit:
        return f"{nbytes} bytes per buffer is over this adapter's storage binding limit ({limit} bytes)"
    return None


def vyre_kernel(gpu, steps, *, reps: int, target_s: float, max_k: int = 1000) -> Timing:
    """Device time per iteration of ``steps`` (resident): k iterations in one
    ``dispatch_resident_sequence_timed`` (one pass, one submit); GPU time from its timestamp
    queries, or its wall-clock time on adapters without them."""
    walls: list[float] = []
    sources: list[str] = []

    def sample(k: int) -> float:
        td = gpu.dispatch_resident_sequence_timed(list(steps) * k)
        walls.append(td.wall_ns / 1e9 / k)
        sources.append(td.source)
        return (td.gpu_ns if td.gpu_ns > 0 else td.wall_ns) / 1e9 / k

    t = calibrated(sample, reps=reps, target_s=target_s, max_k=max_k)
    src = sources[-1]
    t.method = ("timestamp queries around k resident launches in one pass (dispatch_resident_sequence_timed)"
                if src == "timestamp" else
                "wall clock of k resident launches in one pass and one submit (dispatch_resident_sequence_timed)")
    t.extra["source"] = src
    t.extra["wall_median"] = float(statistics.median(walls[-reps:]))
    return t


@dataclass
class Context:
    """What every benchmark gets: the backend, the baselines, the mode and the output sink."""

    gpu: WgpuBackend
    base: Baselines
    quick: bool
    progress: Progress
    reps: int = 5
    target_s: float = 0.02  # seconds of device work per timed sample
    results: list = field(default_factory=list)
    rng: np.random.Generator = field(default_factory=lambda: np.random.default_rng(1234))

    def release(self) -> None:
        """Between benchmarks: give cached CUDA memory back."""
        if self.base.torch is not None:
            self.base.torch.cuda.empty_cache()
        if self.base.cupy is not None:
            self.base.cupy.get_default_memory_pool().free_all_blocks()

    def emit(self, rec: dict) -> dict:
        self.results.append(rec)
        self.progress.step(summary_line(rec))
        return rec

    def kernel(self, steps, *, reps: int | None = None, max_k: int = 1000) -> Timing:
        return vyre_kernel(self.gpu, steps, reps=reps or self.reps, target_s=self.target_s, max_k=max_k)

    # -- baseline shorthands returning an Outcome --------------------------------------------
    def numpy(self, fn, *, reps: int | None = None, budget_s: float = 3.0, method: str | None = None) -> Outcome:
        t = host_timing(fn, reps=reps or self.reps, target_s=self.target_s, budget_s=budget_s)
        return Outcome(t, method=method or "perf_counter around calls (CPU)")

    def torch(self, make: Callable[[object], Callable[[], object]], *, reps: int | None = None,
              max_k: int = 1000) -> Outcome:
        """``make(torch)`` returns the call to time (tensors already on the device)."""
        if self.base.torch is None:
            return Outcome.missing(self.base.torch_note)
        fn = make(self.base.torch)
        return Outcome(self.base.torch_kernel(fn, reps=reps or self.reps, target_s=self.target_s, max_k=max_k))

    def cupy(self, make: Callable[[object], Callable[[], object]], *, reps: int | None = None,
             max_k: int = 1000) -> Outcome:
        if self.base.cupy is None:
            return Outcome.missing(self.base.cupy_note)
        fn = make(self.base.cupy)
        return Outcome(self.base.cupy_kernel(fn, reps=reps or self.reps, target_s=self.target_s, max_k=max_k))


def warm_device(gpu, seconds: float) -> None:
    """Keep the device busy for ``seconds`` before the first measurement of a run: a GPU that has just
    started (or idled) runs at low clocks, and the per-measurement warm-up (WARM_S) did not lift it in
    time (the first family measured on a freshly started H200 read 0.33x torch, 0.96x when rerun)."""
    n = 1 << 22
    a = np.ones(n, np.float32)
    op = ResidentOp(gpu, "zip.add", {"shape_x": (n,), "shape_y": (n,), "dtype": "f32"}, [a, a])
    try:
        end = time.perf_counter() + seconds
        while time.perf_counter() < end:
            gpu.dispatch_resident_sequence_timed(list(op.steps) * 100)
    finally:
        op.free()
