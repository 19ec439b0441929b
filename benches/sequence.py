"""Per-dispatch cost in a resident sequence of 1000 small dispatches.

The chain: two small programs (1024 f32, 16 workgroups of 64) alternate and ping-pong
between two resident buffers (``y = x * 0.5 + 1``, then ``x = y + 1``, ...), so every step
changes the pipeline and the bind group and depends on the previous one.

vyre: ``dispatch_resident_sequence(steps, read=[16 bytes])`` — validation of every step,
encoding, one submit, the GPU work and the wait, wall clock divided by 1000; the same with
``dispatch_resident_repeated_sequence``; and the GPU time per dispatch from the timestamps
of ``dispatch_resident_sequence_timed``.
Baselines: raw wgpu-py with one submit per dispatch (the naive loop) and with all dispatches
in one pass; torch and cupy: 1000 small launches then a synchronize; Taichi on Vulkan: the same
two programs as 1000 kernel launches then ``ti.sync()`` (benches/_taichi.py); numpy on the CPU.
"""

from __future__ import annotations

import time

import numpy as np

from . import _taichi
from ._harness import Context, Outcome, Timing, host_timing, record

NAME = "sequence"
N = 1024
DISPATCHES = 1000

RAW = """
@group(0) @binding(0) var<storage, read> src: array<f32>;
@group(0) @binding(1) var<storage, read_write> dst: array<f32>;
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {{
    let i = gid.x;
    if (i < arrayLength(&dst)) {{ dst[i] = {expr}; }}
}}
"""


def programs():
    from vyre import ProgramBuilder

    out = []
    for name, f in (("half_plus_one", lambda v: v * 0.5 + 1.0), ("plus_one", lambda v: v + 1.0)):
        b = ProgramBuilder(name, workgroup_size=64)
        src = b.buffer("src", "f32")
        dst = b.buffer("dst", "f32", access="write")
        i = b.global_index()
        with b.if_(i < dst.len()):
            dst[i] = f(src[i])
        out.append(b.build())
    return out


def expected(x0: np.ndarray, count: int) -> tuple[np.ndarray, np.ndarray]:
    """(x, y) after ``count`` steps starting from x = x0 (f32 arithmetic like the GPU)."""
    x, y = x0.copy(), np.zeros_like(x0)
    for k in range(count):
        if k % 2 == 0:
            y = x * np.float32(0.5) + np.float32(1.0)
        else:
            x = y + np.float32(1.0)
    return x, y


def plan(ctx: Context) -> int:
    return 4


def run(ctx: Context):
    gpu = ctx.gpu
    reps = ctx.reps
    prog_a, prog_b = programs()
    x0 = ctx.rng.random(N, dtype=np.float32)
    hx, hy = gpu.allocate_resident(4 * N), gpu.allocate_resident(4 * N)
    try:
        steps = [(prog_a, [hx, hy]) if k % 2 == 0 else (prog_b, [hy, hx]) for k in range(DISPATCHES)]

        def reset():
            gpu.upload_resident(hx, x0)

        reset()
        got = gpu.dispatch_resident_sequence(steps, read=[hx])[0].view(np.float32)
        want_x, _ = expected(x0, DISPATCHES)
        check = {"ok": bool(np.allclose(got, want_x, rtol=1e-5)), "against": "numpy, the same 1000-step chain"}
        vy = host_timing(lambda: gpu.dispatch_resident_sequence(steps, read=[(hx, 0, 16)]), reps=reps, inner=1)
        vy_rep = host_timing(lambda: gpu.dispatch_resident_repeated_sequence([], steps[:2], DISPATCHES // 2,
                                                                             read=[(hx, 0, 16)]), reps=reps, inner=1)
        gpu_t = [gpu.dispatch_resident_sequence_timed(steps) for _ in range(reps + 1)][1:]
        host = []
        for _ in range(reps + 1):  # host side only: check, encode, submit (no wait; flushed untimed)
            t0 = time.perf_counter()
            gpu.dispatch_resident_sequence(steps)
            host.append(time.perf_counter() - t0)
            gpu.flush()
        host_t = Timing(host[1:], 1, "perf_counter")
    finally:
        gpu.free_resident(hx)
        gpu.free_resident(hy)

    def per(t: Timing) -> Timing:  # per dispatch
        return Timing([s / DISPATCHES for s in t.samples], t.inner, t.method)

    vy, vy_rep, host_t = per(vy), per(vy_rep), per(host_t)

    base: dict[str, Outcome] = {}
    raw = ctx.base.raw
    q = raw.queue
    pa, pb = raw.pipeline(RAW.format(expr="src[i] * 0.5 + 1.0")), raw.pipeline(RAW.format(expr="src[i] + 1.0"))
    bx, by = raw.storage(4 * N, x0), raw.storage(4 * N)
    bga, bgb = raw.bind(pa, [bx, by]), raw.bind(pb, [by, bx])
    disp = [(pa, bga) if k % 2 == 0 else (pb, bgb) for k in range(DISPATCHES)]

    def raw_each():
        for pipe, bg in disp:
            enc = raw.device.create_command_encoder()
            cp = enc.begin_compute_pass()
            cp.set_pipeline(pipe)
            cp.set_bind_group(0, bg)
            cp.dispatch_workgroups(N // 64)
            cp.end()
            q.submit([enc.finish()])
        return q.read_buffer(bx, 0, 16)

    def raw_pass():
        enc = raw.device.create_command_encoder()
        cp = enc.begin_compute_pass()
        for pipe, bg in disp:
            cp.set_pipeline(pipe)
            cp.set_bind_group(0, bg)
            cp.dispatch_workgroups(N // 64)
        cp.end()
        q.submit([enc.finish()])
        return q.read_buffer(bx, 0, 16)

    for key, fn, method in (("raw_wgpu", raw_each, "one encoder, pass and submit per dispatch; read_buffer at the end"),
                            ("raw_wgpu_one_pass", raw_pass, "all dispatches in one pass and one submit; read_buffer")):
        t = host_timing(fn, reps=reps, inner=1)
        base[key] = Outcome(per(t), method=method)
    bx.destroy()
    by.destroy()
    if ctx.base.torch is not None:
        torch = ctx.base.torch
        tx, ty = torch.from_numpy(x0).cuda(), torch.zeros(N, device="cuda")
        base["torch"] = Outcome(per(host_timing(_torch_chain(torch, tx, ty), reps=reps, inner=1)),
                                method="1000 torch.add launches (ping-pong, 1024 f32) then synchronize")
    else:
        base["torch"] = Outcome.missing(ctx.base.torch_note)
    if ctx.base.cupy is not None:
        cp_ = ctx.base.cupy
        cx, cy = cp_.asarray(x0), cp_.zeros(N, cp_.float32)

        def c_chain():
            for _ in range(DISPATCHES // 2):
                cp_.add(cx, 1.0, out=cy)
                cp_.add(cy, 1.0, out=cx)
            ctx.base.cupy_sync()

        base["cupy"] = Outcome(per(host_timing(c_chain, reps=reps, inner=1)),
                               method="1000 cp.add launches (ping-pong, 1024 f32) then synchronize")
    else:
        base["cupy"] = Outcome.missing(ctx.base.cupy_note)
    base["taichi"] = _taichi.sequence(ctx, x0, want_x, DISPATCHES, reps)
    nx, ny = x0.copy(), np.zeros_like(x0)

    def np_chain():
        for _ in range(DISPATCHES // 2):
            np.multiply(nx, np.float32(0.5), out=ny)
            np.add(ny, np.float32(1.0), out=ny)
            np.add(ny, np.float32(1.0), out=nx)

    base["numpy"] = Outcome(per(host_timing(np_chain, reps=reps, inner=1)), method="the same chain on the CPU")
    ctx.release()
    params = {"dispatches": DISPATCHES, "n": N}
    yield record(bench=NAME, name=f"{DISPATCHES} dispatches, dispatch_resident_sequence",
                 metric="sequence.per_dispatch", params=params, unit="µs", scale=1e6,
                 vyre=Outcome(vy, method="dispatch_resident_sequence(1000 steps, read 16 bytes): wall clock / 1000"),
                 baselines=base, check=check)
    yield record(bench=NAME, name=f"{DISPATCHES} dispatches, dispatch_resident_repeated_sequence",
                 metric="sequence.per_dispatch.repeated", params=params, unit="µs", scale=1e6,
                 vyre=Outcome(vy_rep, method="dispatch_resident_repeated_sequence([], 2 steps, 500, read 16 bytes): "
                                             "wall clock / 1000"),
                 baselines={k: base[k] for k in ("raw_wgpu", "raw_wgpu_one_pass")}, check=check)
    src = gpu_t[0].source
    gt = Timing([td.gpu_ns / 1e9 / DISPATCHES for td in gpu_t], 1, "")
    yield record(bench=NAME, name=f"{DISPATCHES} dispatches, GPU time", metric="sequence.gpu_per_dispatch",
                 params=params, unit="µs", scale=1e6,
                 vyre=Outcome(gt, method=("timestamp queries around the pass" if src == "timestamp" else
                                          "wall clock (no timestamp queries)") + ", / 1000"),
                 baselines={}, check=check)
    yield record(bench=NAME, name=f"{DISPATCHES} dispatches, host side", metric="sequence.host_per_dispatch",
                 params=params, unit="µs", scale=1e6,
                 vyre=Outcome(host_t, method="dispatch_resident_sequence(1000 steps) with no read (returns after "
                                             "the submit, before the GPU finishes): wall clock / 1000"),
                 baselines={}, check=check)


def _torch_chain(torch, tx, ty):
    def chain():
        for _ in range(DISPATCHES // 2):
            torch.add(tx, 1.0, out=ty)
            torch.add(ty, 1.0, out=tx)
        torch.cuda.synchronize()

    return chain
