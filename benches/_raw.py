"""The raw wgpu-py device of the hand-written baselines (same adapter as vyre), timed like vyre."""

from __future__ import annotations

import statistics
import time

import numpy as np

from ._harness import Timing, calibrated


class RawWgpu:
    """A plain wgpu-py device on the same adapter as vyre, for the hand-written baselines.

    It raises the two buffer-size limits (a user moving 1 GiB must too) and enables
    timestamp queries (only to time kernels the way vyre is timed) and shader-f16 when the
    adapter has them; nothing else."""

    def __init__(self, adapter_index: int):
        import wgpu

        self.wgpu = wgpu
        adapter = wgpu.gpu.enumerate_adapters_sync()[adapter_index]
        limits = {k: int(adapter.limits[k]) for k in ("max-buffer-size", "max-storage-buffer-binding-size")}
        feats = [f for f in ("timestamp-query", "shader-f16") if f in adapter.features]
        self.device = adapter.request_device_sync(label="raw-baseline", required_features=feats,
                                                  required_limits=limits)
        self.queue = self.device.queue
        self.timestamps = "timestamp-query" in feats
        self.f16 = "shader-f16" in feats
        self.limits = {str(k): v for k, v in dict(self.device.limits).items()}
        BU = wgpu.BufferUsage
        self.fence = self.device.create_buffer(size=16, usage=BU.STORAGE | BU.COPY_SRC | BU.COPY_DST)
        if self.timestamps:
            self.query = self.device.create_query_set(type="timestamp", count=2)
            self.resolved = self.device.create_buffer(size=16, usage=BU.QUERY_RESOLVE | BU.COPY_SRC)
        self._period: float | None = None

    def storage(self, nbytes: int, data=None):
        BU = self.wgpu.BufferUsage
        usage = BU.STORAGE | BU.COPY_SRC | BU.COPY_DST
        buf = self.device.create_buffer(size=max(16, (nbytes + 15) // 16 * 16), usage=usage)
        if data is not None:
            self.queue.write_buffer(buf, 0, np.ascontiguousarray(data))
        return buf

    def pipeline(self, wgsl: str):
        module = self.device.create_shader_module(code=wgsl)
        return self.device.create_compute_pipeline(layout="auto", compute={"module": module, "entry_point": "main"})

    def bind(self, pipeline, buffers, group: int = 0):
        entries = [{"binding": i, "resource": {"buffer": b, "offset": 0, "size": b.size}}
                   for i, b in enumerate(buffers)]
        return self.device.create_bind_group(layout=pipeline.get_bind_group_layout(group), entries=entries)

    def wait(self) -> None:
        """Block until the queue is idle: read 4 bytes back (a submit and a map)."""
        self.queue.read_buffer(self.fence, 0, 4)

    def _ticks_period(self) -> float:
        if self._period is None:
            try:
                from wgpu.backends.wgpu_native._ffi import lib

                p = float(lib.wgpuQueueGetTimestampPeriod(self.queue._internal))
                self._period = p if p > 0 else 1.0
            except Exception:  # noqa: BLE001
                self._period = 1.0
        return self._period

    def run_pass(self, dispatches, k: int) -> tuple[float | None, float]:
        """Encode ``dispatches`` ((pipeline, bind_group, (x, y, z)) each) ``k`` times in one pass, submit,
        wait. Returns (GPU seconds per iteration from timestamps or None, wall seconds per iteration)."""
        t0 = time.perf_counter()
        enc = self.device.create_command_encoder()
        tw = {"query_set": self.query, "beginning_of_pass_write_index": 0,
              "end_of_pass_write_index": 1} if self.timestamps else None
        cpass = enc.begin_compute_pass(timestamp_writes=tw)
        for _ in range(k):
            for pipe, bg, groups in dispatches:
                cpass.set_pipeline(pipe)
                cpass.set_bind_group(0, bg)
                cpass.dispatch_workgroups(*groups)
        cpass.end()
        if self.timestamps:
            enc.resolve_query_set(self.query, 0, 2, self.resolved, 0)
        self.queue.submit([enc.finish()])
        gpu: float | None = None
        if self.timestamps:
            raw = np.frombuffer(self.queue.read_buffer(self.resolved, 0, 16), np.uint64)
            gpu = max(0, int(raw[1]) - int(raw[0])) * self._ticks_period() / 1e9 / k
        else:
            self.wait()
        wall = (time.perf_counter() - t0) / k
        return gpu, wall

    def kernel_timing(self, dispatches, *, reps: int, target_s: float, max_k: int = 1000) -> Timing:
        """Time per iteration of ``dispatches``: timestamp queries when available, else wall clock."""
        walls: list[float] = []

        def sample(k: int) -> float:
            gpu, wall = self.run_pass(dispatches, k)
            walls.append(wall)
            return gpu if gpu is not None and gpu > 0 else wall

        t = calibrated(sample, reps=reps, target_s=target_s, max_k=max_k)
        t.method = ("timestamp queries around k dispatches in one pass" if self.timestamps
                    else "wall clock over k dispatches in one pass and one submit")
        t.extra["wall_median"] = float(statistics.median(walls[-reps:]))
        return t


__all__ = ["RawWgpu"]
