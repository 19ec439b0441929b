"""Single-dispatch round trip: a small saxpy (1024 f32) uploaded, run and read back per call.

vyre: ``backend.dispatch(saxpy, [a, x, y])`` (wall clock per call); also an op call
(``vyre.ops.zip_add``, which goes through ``run_pipeline``).
Baselines: raw wgpu-py with the pipeline, buffers and bind group made once (per call: three
``queue.write_buffer``, one encoder and submit, ``queue.read_buffer``); raw
``wgpu.utils.compute_with_buffers`` (device reused, everything else created per call);
torch and cupy (host -> device copies, the kernel, device -> host copy); Taichi on Vulkan
(``from_numpy`` uploads, the kernel, ``to_numpy``: benches/_taichi.py); numpy on the CPU.
"""

from __future__ import annotations

import numpy as np

from . import _taichi
from ._harness import Context, Outcome, cpu_timing, host_timing, record

NAME = "latency"
N = 1024

RAW_SAXPY = """
@group(0) @binding(0) var<storage, read> a: array<f32>;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read_write> y: array<f32>;
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.x;
    if (i < arrayLength(&y)) { y[i] = a[0] * x[i] + y[i]; }
}
"""


def saxpy_program(name: str = "saxpy"):
    from vyre import ProgramBuilder

    b = ProgramBuilder(name, workgroup_size=64)
    a = b.buffer("a", "f32", access="uniform", count=1)
    x = b.buffer("x", "f32")
    y = b.buffer("y", "f32", access="read_write")
    i = b.global_index()
    with b.if_(i < y.len()):
        y[i] = a[0] * x[i] + y[i]
    return b.build()


def plan(ctx: Context) -> int:
    return 3


def _reps(ctx: Context) -> int:
    return 5 if ctx.quick else 7


def round_trip(ctx: Context) -> dict:
    gpu = ctx.gpu
    prog = saxpy_program()
    a = np.array([2.0], dtype=np.float32)
    x = np.arange(N, dtype=np.float32)
    y = np.ones(N, dtype=np.float32)
    want = a[0] * x + y
    (got,) = gpu.dispatch(prog, [a, x, y])
    check = {"ok": bool(np.allclose(got, want, rtol=1e-6)), "against": "numpy a*x + y"}
    reps = _reps(ctx)
    vy = host_timing(lambda: gpu.dispatch(prog, [a, x, y]), reps=reps, target_s=0.05)
    base: dict[str, Outcome] = {}
    base["numpy"] = Outcome(host_timing(lambda: a[0] * x + y, reps=reps, target_s=0.05),
                            method="a * x + y on the CPU")

    raw = ctx.base.raw
    q = raw.queue
    pipe = raw.pipeline(RAW_SAXPY)
    bufs = [raw.storage(4), raw.storage(x.nbytes), raw.storage(y.nbytes)]
    bg = raw.bind(pipe, bufs)

    def raw_call():
        q.write_buffer(bufs[0], 0, a)
        q.write_buffer(bufs[1], 0, x)
        q.write_buffer(bufs[2], 0, y)
        enc = raw.device.create_command_encoder()
        cp = enc.begin_compute_pass()
        cp.set_pipeline(pipe)
        cp.set_bind_group(0, bg)
        cp.dispatch_workgroups(N // 64)
        cp.end()
        q.submit([enc.finish()])
        return np.frombuffer(q.read_buffer(bufs[2], 0, y.nbytes), np.float32)

    floor = _cffi_floor(raw, pipe, bg, bufs, a, x, y)
    if floor is not None:
        floor_ok = bool(np.allclose(floor(), want, rtol=1e-6))
        base["raw_cffi"] = Outcome(host_timing(floor, reps=reps, target_s=0.05),
                                   method="the same entry points vyre uses (wgpu-native through cffi: 3 writes, "
                                          "encoder, pass, copy, finish, submit, map, read, unmap) with no vyre "
                                          "code between them: the floor", extra={"ok": floor_ok})
    else:
        base["raw_cffi"] = Outcome.missing("wgpu-native entry points unavailable (VYRE_WGPU_NATIVE=0 or an "
                                           "unknown wgpu-py)")
    cpu_rec = _cpu_row(gpu, lambda: gpu.dispatch(prog, [a, x, y]), floor, check)
    raw_ok = bool(np.allclose(raw_call(), want, rtol=1e-6))
    base["raw_wgpu"] = Outcome(host_timing(raw_call, reps=reps, target_s=0.05),
                               method="pipeline, buffers, bind group made once; per call 3 write_buffer, "
                                      "1 submit, read_buffer", extra={"ok": raw_ok})
    import wgpu.utils
    from wgpu.utils.compute import compute_with_buffers

    def cwb():
        out = compute_with_buffers({0: a, 1: x, 2: y}, {2: (N, "f")}, RAW_SAXPY, n=N // 64)
        return out[2]

    cwb_ok = bool(np.allclose(np.asarray(cwb()), want, rtol=1e-6))
    dev_name = wgpu.utils.get_default_device().adapter.info.get("device", "?")
    base["raw_wgpu_cwb"] = Outcome(host_timing(cwb, reps=reps, target_s=0.05),
                                   method=f"wgpu.utils.compute_with_buffers (default device: {dev_name})",
                                   extra={"ok": cwb_ok})
    if ctx.base.torch is not None:
        torch = ctx.base.torch

        def t_call():
            ta = torch.from_numpy(a).cuda()
            tx = torch.from_numpy(x).cuda()
            ty = torch.from_numpy(y).cuda()
            return torch.addcmul(ty, ta, tx).cpu()  # y + a*x, one kernel, .cpu() synchronizes

        base["torch"] = Outcome(host_timing(t_call, reps=reps, target_s=0.05),
                                method="3 host->device copies, torch.addcmul, .cpu()")
    else:
        base["torch"] = Outcome.missing(ctx.base.torch_note)
    if ctx.base.cupy is not None:
        cp_ = ctx.base.cupy
        k = cp_.ElementwiseKernel("float32 a, float32 x, float32 y", "float32 z", "z = a * x + y", "bench_saxpy")

        def c_call():
            ca, cx, cy = cp_.asarray(a), cp_.asarray(x), cp_.asarray(y)
            return cp_.asnumpy(k(ca[0], cx, cy))

        base["cupy"] = Outcome(host_timing(c_call, reps=reps, target_s=0.05),
                               method="3 host->device copies, an ElementwiseKernel, cp.asnumpy")
    else:
        base["cupy"] = Outcome.missing(ctx.base.cupy_note)
    base["taichi"] = _taichi.round_trip(ctx, a, x, y, reps)
    for b in bufs:
        b.destroy()
    notes = [] if raw_ok and cwb_ok else ["a raw baseline returned a wrong result"]
    ctx.emit(cpu_rec)
    return record(bench=NAME, name=f"saxpy n={N} dispatch()", metric="latency.round_trip",
                  params={"n": N, "program": "saxpy"}, unit="µs", scale=1e6,
                  vyre=Outcome(vy, method="backend.dispatch(program, [a, x, y]), wall clock per call"),
                  baselines=base, check=check, notes=notes)


def _cffi_floor(raw, pipe, bg, bufs, a, x, y):
    """A round trip through wgpu-native's C entry points (vyre's native driver, which is only those calls)
    on the raw baseline's device: per call 3 writes, one encoder with the dispatch and a copy into a mapped
    readback buffer, one submit, one map (spin-wait as vyre's), the read. None without the native driver."""
    from vyre.backends.wgpu.native import native_driver
    from vyre.backends.wgpu.work import Dispatch

    drv = native_driver(raw.device, raw.queue)
    if drv is None:
        return None
    BU = raw.wgpu.BufferUsage
    readback = raw.device.create_buffer(size=y.nbytes, usage=BU.MAP_READ | BU.COPY_DST)
    work = [Dispatch(pipe, [bg], (N // 64, 1, 1), 1)]

    def call():
        with drv.checked():
            drv.write(bufs[0], 0, a)
            drv.write(bufs[1], 0, x)
            drv.write(bufs[2], 0, y)
            rec = drv.recorder("floor")
            try:
                rec.compute_pass(work)
                rec.copy(bufs[2], 0, readback, 0, y.nbytes)
                commands = rec.finish()
            finally:
                rec.release()
            drv.submit(commands)
        drv.map(readback, 1, y.nbytes)
        out = drv.view(readback, y.nbytes).view(np.float32).copy()
        drv.unmap(readback)
        return out

    call.driver = drv
    return call


def _cpu_row(gpu, call, floor, check) -> dict:
    """The round trip's CPU time on the calling thread with spin-waiting off (blocking waits only), vyre's
    and the floor's: on a CPU adapter (lavapipe) the GPU's work runs on other threads of the same CPU, so
    wall time measures the adapter; this measures what the host path costs."""
    ex = gpu._executor
    ex._check_driver()
    drv = ex.driver
    old = getattr(drv, "spin_s", None)
    base: dict[str, Outcome] = {}
    try:
        if old is not None:
            drv.spin_s = 0.0
        vy = cpu_timing(call, 5, 200)
        if floor is not None:
            fdrv = floor.driver
            fold = fdrv.spin_s
            fdrv.spin_s = 0.0
            try:
                base["raw_cffi"] = Outcome(cpu_timing(floor, 5, 200), method="the floor's thread CPU time, spin off")
            finally:
                fdrv.spin_s = fold
    finally:
        if old is not None:
            drv.spin_s = old
    return record(bench=NAME, name=f"saxpy n={N} dispatch(), host CPU", metric="latency.round_trip_cpu",
                  params={"n": N, "program": "saxpy"}, unit="µs", scale=1e6,
                  vyre=Outcome(vy, method="thread CPU time per dispatch() call, spin-wait off"),
                  baselines=base, check=check)


def _op_program_call(gpu, x, y):
    """``dispatch()`` of the program ``vyre.ops.zip_add`` runs, with the inputs and config its pipeline uses."""
    from vyre.backends.config import DispatchConfig
    from vyre.ops.api import pipeline_for
    from vyre.ops.registry import get

    pipe = pipeline_for("zip.add", get("zip.add").params_for(x, y))
    (step,) = pipe.steps
    decls = step.program.sorted_buffers
    named = dict(zip(pipe.inputs, (x, y)))
    ins = [named[n] for d, n in zip(decls, step.bind) if d.access.readable]
    counts = {d.name: pipe.buffers[n].count for d, n in zip(decls, step.bind)
              if not d.access.readable and d.count is None}
    cfg = DispatchConfig(grid=step.grid, counts=counts)
    return lambda: gpu.dispatch(step.program, ins, cfg)


def op_round_trip(ctx: Context) -> dict:
    import vyre.ops

    gpu = ctx.gpu
    x = np.arange(N, dtype=np.float32)
    y = np.ones(N, dtype=np.float32)
    got = vyre.ops.zip_add(gpu, x, y)
    same_program = _op_program_call(gpu, x, y)
    check = {"ok": bool(np.array_equal(got, x + y)) and bool(np.array_equal(same_program()[0].reshape(-1), x + y)),
             "against": "numpy x + y"}
    reps = _reps(ctx)
    vy = host_timing(lambda: vyre.ops.zip_add(gpu, x, y), reps=reps, target_s=0.05)
    base = {"numpy": Outcome(host_timing(lambda: x + y, reps=reps, target_s=0.05), method="x + y on the CPU"),
            "dispatch": Outcome(host_timing(same_program, reps=reps, target_s=0.05),
                                method="backend.dispatch() of the op's own program, inputs and config")}
    if ctx.base.torch is not None:
        torch = ctx.base.torch
        base["torch"] = Outcome(host_timing(lambda: (torch.from_numpy(x).cuda() + torch.from_numpy(y).cuda()).cpu(),
                                            reps=reps, target_s=0.05),
                                method="2 host->device copies, add, .cpu()")
    else:
        base["torch"] = Outcome.missing(ctx.base.torch_note)
    return record(bench=NAME, name=f"vyre.ops.zip_add n={N}", metric="latency.round_trip.op",
                  params={"n": N, "op": "zip.add"}, unit="µs", scale=1e6,
                  vyre=Outcome(vy, method="vyre.ops.zip_add(backend, x, y) (run_pipeline), wall clock per call"),
                  baselines=base, check=check)


def run(ctx: Context):
    yield round_trip(ctx)
    yield op_round_trip(ctx)
