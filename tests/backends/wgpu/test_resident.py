"""Resident buffers, resident sequences and run_pipeline on the device (vyre/backends/wgpu/resident.py,
sequence.py, pipeline_run.py). Uses the session's lavapipe backend (``gpu``)."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from threaded import run_in_threads

import vyre
from vyre.backends.config import DispatchConfig
from vyre.backends.wgpu.resident import ResidentHandle
from vyre.errors import DispatchError
from vyre.ir.builder import ProgramBuilder
from vyre.ir.types import DataType
from vyre.ops.pipeline import BufferSpec, Pipeline, Step, run_pipeline

DOC = Path(__file__).resolve().parents[3] / "docs" / "resident.md"
U32 = np.uint32


def _mul3():
    """x = x * 3 + 1 (in place)."""
    b = ProgramBuilder("res_mul3", workgroup_size=64)
    x = b.buffer("x", "u32", access="read_write")
    i = b.global_index()
    with b.if_(i < x.len()):
        x[i] = x[i] * 3 + 1
    return b.build()


def _mix():
    """y = y * 5 + (a ^ (y >> 3))."""
    b = ProgramBuilder("res_mix", workgroup_size=64)
    a = b.buffer("a", "u32")
    y = b.buffer("y", "u32", access="read_write")
    i = b.global_index()
    with b.if_(i < y.len()):
        y[i] = y[i] * 5 + (a[i] ^ (y[i] >> 3))
    return b.build()


def _add_k():
    """out = x + k[0], k a uniform."""
    b = ProgramBuilder("res_add_k", workgroup_size=64)
    k = b.buffer("k", "u32", access="uniform", count=1)
    x = b.buffer("x", "u32")
    out = b.buffer("out", "u32", access="write")
    i = b.global_index()
    with b.if_(i < out.len()):
        out[i] = x[i] + k[0]
    return b.build()


def _evens():
    """out[i] = i + 100 at even i only (a write buffer it does not cover)."""
    b = ProgramBuilder("res_evens", workgroup_size=64)
    out = b.buffer("out", "u32", access="write")
    i = b.global_index()
    with b.if_((i < out.len()) & ((i % 2) == 0)):
        out[i] = i + 100
    return b.build()


MUL3, MIX, ADD_K, EVENS = _mul3(), _mix(), _add_k(), _evens()


def np_mul3(x):
    return x * U32(3) + U32(1)


def np_mix(a, y):
    return y * U32(5) + (a ^ (y >> U32(3)))


class Counting:
    """Wraps an object (the executor's driver, a wgpu object) and counts calls of the named methods."""

    def __init__(self, inner, names):
        self._inner, self.calls = inner, {n: 0 for n in names}

    def __getattr__(self, name):
        attr = getattr(self._inner, name)
        if name in self.calls:
            def counted(*a, **k):
                self.calls[name] += 1
                return attr(*a, **k)
            return counted
        return attr


class MapSpy(Counting):
    """The executor's driver, counting writes, submits and maps by mode (1 read, 2 write)."""

    def __init__(self, inner):
        super().__init__(inner, ["write", "submit"])
        self.maps = {1: 0, 2: 0}

    def map(self, buf, mode, size):
        self.maps[mode] += 1
        return self._inner.map(buf, mode, size)


def spy_driver(gpu, monkeypatch) -> MapSpy:
    spy = MapSpy(gpu._executor.driver)
    monkeypatch.setattr(gpu._executor, "driver", spy)
    return spy


@pytest.fixture
def handles(gpu):
    made = []

    def alloc(nbytes):
        h = gpu.allocate_resident(nbytes)
        made.append(h)
        return h

    yield alloc
    for h in made:
        try:
            gpu.free_resident(h)
        except DispatchError:
            pass  # freed by the test itself


# ----------------------------------------------------------------------------- handles and transfers
def test_handle_fields_and_roundtrip(gpu, handles):
    h = handles(4096)
    assert isinstance(h, ResidentHandle) and h.nbytes == 4096 and h.generation == gpu.generation
    assert hash(h) == hash(ResidentHandle(h.id, h.nbytes, h.generation, h.owner))
    assert not gpu.download_resident(h).any(), "a new resident buffer is zero-filled"
    data = np.random.default_rng(1).integers(0, 2**32, 1024, dtype=U32)
    gpu.upload_resident(h, data)
    got = gpu.download_resident(h)
    assert got.dtype == np.uint8 and got.nbytes == 4096
    np.testing.assert_array_equal(got.view(U32), data)
    gpu.upload_resident(h, b"\x01\x00\x00\x00\x02\x00\x00\x00", offset=8)
    np.testing.assert_array_equal(gpu.download_resident_range(h, 8, 8).view(U32), [1, 2])
    np.testing.assert_array_equal(gpu.download_resident_range(h, 0, 8).view(U32), data[:2])


def test_ranges_read_back_exactly_in_one_map(gpu, handles, monkeypatch):
    rng = np.random.default_rng(2)
    hs = [handles(n) for n in (64, 1024, 40000)]
    raw = [rng.integers(0, 256, h.nbytes, dtype=np.uint8) for h in hs]
    gpu.upload_resident_many([(h, r, 0) for h, r in zip(hs, raw)])
    ranges = [(hs[0], 0, 64), (hs[1], 3, 5), (hs[2], 1000, 30000), (hs[1], 1020, 4), (hs[0], 17, 0), hs[2],
              (hs[2], 39999, 1)]
    spy = spy_driver(gpu, monkeypatch)
    got = gpu.download_resident_ranges(ranges)
    assert spy.maps == {1: 1, 2: 0} and spy.calls["submit"] == 1
    for (h, off, n), g in zip([r if isinstance(r, tuple) else (r, 0, r.nbytes) for r in ranges], got):
        k = hs.index(h)
        assert g.dtype == np.uint8
        np.testing.assert_array_equal(g, raw[k][off:off + n])


def test_upload_many_is_one_staging_copy_and_one_submit(gpu, handles, monkeypatch):
    rng = np.random.default_rng(3)
    hs = [handles(1 << 18) for _ in range(3)]  # over the executor's 512 KiB write_buffer total, each over 64 KiB
    data = [rng.integers(0, 2**32, h.nbytes // 4, dtype=U32) for h in hs]
    spy = spy_driver(gpu, monkeypatch)
    gpu.upload_resident_many([(hs[0], data[0], 0), (hs[1], data[1][: 20000], 400), (hs[2], memoryview(data[2]))])
    assert spy.maps == {1: 0, 2: 1} and spy.calls == {"submit": 1, "write": 0}
    monkeypatch.undo()
    np.testing.assert_array_equal(gpu.download_resident(hs[0]).view(U32), data[0])
    np.testing.assert_array_equal(gpu.download_resident_range(hs[1], 400, 80000).view(U32), data[1][:20000])
    np.testing.assert_array_equal(gpu.download_resident(hs[2]).view(U32), data[2])


def test_bad_uses_raise_before_gpu_work(gpu, handles, monkeypatch):
    a, b = handles(256), handles(256)
    gpu.upload_resident(a, np.arange(64, dtype=U32))
    spy = spy_driver(gpu, monkeypatch)
    bad = [
        lambda: gpu.upload_resident(a, np.zeros(65, U32)),  # past the end
        lambda: gpu.upload_resident(a, np.zeros(4, U32), offset=250),  # past the end
        lambda: gpu.upload_resident(a, np.zeros(4, U32), offset=2),  # misaligned
        lambda: gpu.upload_resident(a, b"abc"),  # size not a multiple of 4
        lambda: gpu.upload_resident(a, "text"),  # not a buffer
        lambda: gpu.download_resident_range(a, 200, 100),
        lambda: gpu.download_resident_range(a, -4, 4),
        lambda: gpu.allocate_resident(6),
        lambda: gpu.allocate_resident(0),
        lambda: gpu.dispatch_resident(MUL3, [a, b]),  # one buffer, two handles
        lambda: gpu.dispatch_resident(MIX, [a, a]),  # a writable buffer aliased
        lambda: gpu.dispatch_resident(MIX, [a, b], DispatchConfig(counts={"y": 65})),  # count does not fit
        lambda: gpu.dispatch_resident(ADD_K, [a, b, b]),  # out aliases x
        lambda: gpu.dispatch_resident(MUL3, a),  # not a list
        lambda: gpu.dispatch_resident("not a program", [a]),
        # the first step is fine, the second is not: nothing may run
        lambda: gpu.dispatch_resident_sequence([(MUL3, [a]), (MIX, [a])], read=[a]),
        lambda: gpu.dispatch_resident_sequence([(MUL3, [a])], read=[(a, 0, 512)]),
        lambda: gpu.dispatch_resident_repeated_sequence([(MUL3, [a])], [(MUL3, [a], -1)], 3),
        lambda: gpu.dispatch_resident_repeated_sequence([], [(MUL3, [a])], -1),
    ]
    for k, fn in enumerate(bad):
        with pytest.raises(DispatchError):
            fn()
        assert spy.calls == {"submit": 0, "write": 0}, f"case {k} did GPU work before failing"
    gpu.free_resident(b)
    for fn in (lambda: gpu.free_resident(b), lambda: gpu.download_resident(b), lambda: gpu.upload_resident(b, b"1234"),
               lambda: gpu.dispatch_resident(MIX, [a, b]), lambda: gpu.dispatch_resident_sequence([(MUL3, [b])])):
        with pytest.raises(DispatchError, match="freed"):
            fn()
    assert spy.calls == {"submit": 0, "write": 0} and spy.maps == {1: 0, 2: 0}
    monkeypatch.undo()
    np.testing.assert_array_equal(gpu.download_resident(a).view(U32), np.arange(64, dtype=U32))


def test_a_failed_readback_is_translated_and_the_backend_stays_usable(gpu, handles, monkeypatch):
    h = handles(64)
    gpu.upload_resident(h, np.arange(16, dtype=U32))
    driver = gpu._executor.driver

    class FailAfterMapping(Counting):
        def map(self, buf, mode, size):
            driver.map(buf, mode, size)  # leaves the staging buffer mapped
            raise RuntimeError("simulated map failure")

    monkeypatch.setattr(gpu._executor, "driver", FailAfterMapping(driver, []))
    with pytest.raises(DispatchError, match="simulated map failure"):
        gpu.download_resident(h)
    monkeypatch.undo()
    np.testing.assert_array_equal(gpu.download_resident(h).view(U32), np.arange(16, dtype=U32))


# ----------------------------------------------------------------------------- dispatch
def test_dispatch_resident_matches_dispatch(gpu, handles):
    rng = np.random.default_rng(4)
    a0, y0 = (rng.integers(0, 2**32, 1000, dtype=U32) for _ in range(2))
    ha, hy = handles(4000), handles(4000)
    gpu.upload_resident_many([(ha, a0, 0), (hy, y0, 0)])
    assert gpu.dispatch_resident(MIX, [ha, hy]) is None
    (want,) = gpu.dispatch(MIX, [a0, y0])
    np.testing.assert_array_equal(gpu.download_resident(hy).view(U32), want)
    np.testing.assert_array_equal(want, np_mix(a0, y0))


def test_uniform_handle_and_counts(gpu, handles):
    hk, hx, ho = handles(16), handles(4096), handles(4096)
    x = np.arange(1024, dtype=U32)
    gpu.upload_resident_many([(hk, np.array([7, 0, 0, 0], U32)), (hx, x)])
    with pytest.raises(DispatchError, match="cannot tell whether the inputs or the outputs"):
        gpu.dispatch_resident(ADD_K, [hk, hx, ho], DispatchConfig(counts={"out": 100}))  # x holds 1024
    gpu.dispatch_resident(ADD_K, [hk, hx, ho], DispatchConfig(counts={"out": 100, "x": 100}))
    out = gpu.download_resident(ho).view(U32)
    np.testing.assert_array_equal(out[:100], x[:100] + 7)
    assert not out[100:].any(), "only counts['out'] elements are written"


def test_sequence_of_100_equals_100_single_dispatches(gpu, handles):
    rng = np.random.default_rng(5)
    a0, y0 = (rng.integers(0, 2**32, 777, dtype=U32) for _ in range(2))
    ha, hy = handles(777 * 4), handles(777 * 4)
    gpu.upload_resident_many([(ha, a0), (hy, y0)])
    steps = [(MUL3, [ha]) if k % 2 == 0 else (MIX, [ha, hy]) for k in range(100)]
    got_a, got_y = gpu.dispatch_resident_sequence(steps, read=[ha, hy])
    a, y = a0.copy(), y0.copy()
    ea, ey = a0.copy(), y0.copy()
    for k in range(100):
        if k % 2 == 0:
            (a,) = gpu.dispatch(MUL3, [a])
            ea = np_mul3(ea)
        else:
            (y,) = gpu.dispatch(MIX, [a, y])
            ey = np_mix(ea, ey)
    np.testing.assert_array_equal(a, ea)
    np.testing.assert_array_equal(y, ey)
    assert got_a.tobytes() == a.tobytes() and got_y.tobytes() == y.tobytes()


def test_repeated_sequence_equals_unrolled(gpu, handles):
    rng = np.random.default_rng(6)
    a0, y0 = (rng.integers(0, 2**32, 300, dtype=U32) for _ in range(2))
    ha, hy = handles(1200), handles(1200)
    prefix = [(MIX, [ha, hy])]
    repeated = [(MUL3, [ha]), (MIX, [ha, hy], 5)]  # explicit grid: 5 workgroups cover 300 elements
    gpu.upload_resident_many([(ha, a0), (hy, y0)])
    rep = gpu.dispatch_resident_repeated_sequence(prefix, repeated, 7, read=[ha, (hy, 40, 400)])
    gpu.upload_resident_many([(ha, a0), (hy, y0)])
    unrolled = gpu.dispatch_resident_sequence(prefix + repeated * 7, read=[ha, (hy, 40, 400)])
    assert [r.tobytes() for r in rep] == [u.tobytes() for u in unrolled]
    ea, ey = a0.copy(), np_mix(a0, y0)
    for _ in range(7):
        ea = np_mul3(ea)
        ey = np_mix(ea, ey)
    np.testing.assert_array_equal(rep[0].view(U32), ea)
    np.testing.assert_array_equal(rep[1].view(U32), ey[10:110])
    before = gpu.download_resident(ha)
    assert gpu.dispatch_resident_repeated_sequence(prefix, repeated, 0, read=None) == []
    np.testing.assert_array_equal(gpu.download_resident(ha), before, "repeat_count=0 runs only the prefix (MIX)")


def test_repeated_resident_dispatch_creates_no_gpu_objects(gpu, handles, monkeypatch):
    hk, hx, ho = handles(16), handles(4096), handles(4096)
    steps = [(ADD_K, [hk, hx, ho]), (MUL3, [ho]), (MUL3, [hx], 3)]
    gpu.dispatch_resident(ADD_K, [hk, hx, ho])
    gpu.dispatch_resident_sequence(steps, read=[ho])  # warm: pipelines, params, bind groups
    keys = ("buffers_created", "bind_groups_created")
    before = {k: gpu._stats.get(k, 0) for k in keys}
    device = Counting(gpu._dev.device, ["create_buffer", "create_bind_group", "create_bind_group_layout"])
    monkeypatch.setattr(gpu._dev, "device", device)
    for _ in range(5):
        gpu.dispatch_resident(ADD_K, [hk, hx, ho])
        gpu.dispatch_resident_sequence(steps, read=[ho])
        gpu.dispatch_resident_repeated_sequence(steps[:1], steps[1:], 4, read=[(ho, 0, 64)])
    monkeypatch.undo()
    assert device.calls == {"create_buffer": 0, "create_bind_group": 0, "create_bind_group_layout": 0}
    assert {k: gpu._stats.get(k, 0) for k in keys} == before


def test_read_none_returns_empty_and_the_work_still_happens(gpu, handles):
    h = handles(256)
    gpu.upload_resident(h, np.arange(64, dtype=U32))
    assert gpu.dispatch_resident_sequence([(MUL3, [h])] * 3) == []
    assert gpu.dispatch_resident_sequence([(MUL3, [h])], read=[]) == []
    x = np.arange(64, dtype=U32)
    for _ in range(4):
        x = np_mul3(x)
    np.testing.assert_array_equal(gpu.download_resident(h).view(U32), x)


def test_threads_share_the_backend(gpu):
    results = {}

    def work(k):
        h = gpu.allocate_resident(1024)
        x = np.arange(256, dtype=U32) + U32(k)
        gpu.upload_resident(h, x)
        for _ in range(5):
            (got,) = gpu.dispatch_resident_sequence([(MUL3, [h])] * 4, read=[h])
        gpu.free_resident(h)
        results[k] = got.view(U32)

    run_in_threads(work, 6)
    for k in range(6):
        want = np.arange(256, dtype=U32) + U32(k)
        for _ in range(20):
            want = np_mul3(want)
        np.testing.assert_array_equal(results[k], want)


def test_resident_stats_and_free(gpu):
    n0, b0 = gpu._resident.handles, gpu._resident.nbytes
    h = gpu.allocate_resident(1 << 20)
    assert (gpu._resident.handles, gpu._resident.nbytes) == (n0 + 1, b0 + (1 << 20))
    assert gpu.stats()["resident"] == {"bytes": b0 + (1 << 20), "handles": n0 + 1}
    gpu.free_resident(h)
    assert (gpu._resident.handles, gpu._resident.nbytes) == (n0, b0)


# ----------------------------------------------------------------------------- op pipelines
def _pipeline(n: int) -> Pipeline:
    """Two steps: t = x*3+1 (t a write buffer), then y = y*5 + (t ^ (y >> 3))."""
    b = ProgramBuilder("res_triple", workgroup_size=64)
    x = b.buffer("x", "u32")
    t = b.buffer("t", "u32", access="write")
    i = b.global_index()
    with b.if_(i < t.len()):
        t[i] = x[i] * 3 + 1
    triple = b.build()
    spec = BufferSpec(DataType.U32, n)
    return Pipeline(name="res_pipe", buffers={"x": spec, "t": spec, "y": spec}, inputs=("x", "y"),
                    outputs=("y", "t"), steps=(Step(triple, ("x", "t")), Step(MIX, ("t", "y"))),
                    output_shapes={"t": (n // 10, 10)})


def test_run_pipeline_equals_host_run_pipeline(gpu, reference):
    rng = np.random.default_rng(7)
    pipe = _pipeline(1000)
    x, y = (rng.integers(0, 2**32, 1000, dtype=U32) for _ in range(2))
    want = run_pipeline(reference, pipe, [x, y])
    got = gpu.run_pipeline(pipe, [x, y])
    assert len(got) == 2 and got[1].shape == (100, 10)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_array_equal(g, w)
    keys = ("buffers_created", "bind_groups_created", "resident_allocations")
    before = {k: gpu._stats.get(k, 0) for k in keys}
    again = gpu.run_pipeline(pipe, [y, x])  # same shape: nothing allocated
    assert {k: gpu._stats.get(k, 0) for k in keys} == before
    for g, w in zip(again, run_pipeline(reference, pipe, [y, x])):
        np.testing.assert_array_equal(g, w)


def test_run_pipeline_zeroes_write_buffers_like_the_host(gpu, reference):
    b = ProgramBuilder("res_fill", workgroup_size=64)
    out = b.buffer("out", "u32", access="write")
    i = b.global_index()
    with b.if_(i < out.len()):
        out[i] = i + 1
    fill = b.build()
    spec = BufferSpec(DataType.U32, 200)
    # t is filled, then rewritten as a write buffer at even indices only: its odd elements must be 0 again;
    # y is an input rewritten by EVENS: its odd elements are 0 too.
    pipe = Pipeline(name="res_rewrite", buffers={"t": spec, "y": spec, "u": spec}, inputs=("y",),
                    outputs=("t", "y", "u"), steps=(Step(fill, ("t",)), Step(EVENS, ("t",)), Step(EVENS, ("y",))))
    y = np.full(200, 9, U32)
    want = run_pipeline(reference, pipe, [y])
    for _ in range(2):  # the second run reuses buffers holding the first run's data
        got = gpu.run_pipeline(pipe, [y])
        for g, w in zip(got, want):
            np.testing.assert_array_equal(g, w)
    assert want[0][1] == 0 and want[0][0] == 100 and not want[2].any()


def test_run_pipeline_skips_unchanged_inputs_only_while_their_buffer_holds_them(gpu, reference):
    rng = np.random.default_rng(11)
    pipe = _pipeline(640)
    x, y = (rng.integers(0, 2**32, 640, dtype=U32) for _ in range(2))
    want = run_pipeline(reference, pipe, [x, y])
    s0 = gpu.stats()["uploads_skipped"]
    for _ in range(3):  # x is only read: written once; y is rewritten by a step: written every time
        for g, w in zip(gpu.run_pipeline(pipe, [x, y]), want):
            np.testing.assert_array_equal(g, w)
    assert gpu.stats()["uploads_skipped"] - s0 == 2
    # a pipeline of the same shape (so the same resident buffers) that rewrites x: x must be written again
    spec = BufferSpec(DataType.U32, 640)
    other = Pipeline(name="res_other", buffers={"x": spec, "t": spec, "y": spec}, inputs=("y",), outputs=("x",),
                     steps=(Step(MUL3, ("x",)),))
    np.testing.assert_array_equal(gpu.run_pipeline(other, [y])[0], run_pipeline(reference, other, [y])[0])
    s1 = gpu.stats()["uploads_skipped"]
    for g, w in zip(gpu.run_pipeline(pipe, [x, y]), want):
        np.testing.assert_array_equal(g, w)
    assert gpu.stats()["uploads_skipped"] == s1
    x2 = x.copy()
    x2[7] ^= 1  # one bit differs: written
    for g, w in zip(gpu.run_pipeline(pipe, [x2, y]), run_pipeline(reference, pipe, [x2, y])):
        np.testing.assert_array_equal(g, w)


def test_run_pipeline_takes_byte_data_like_host_inputs(gpu, reference):
    pipe = _pipeline(40)
    raw = np.arange(159, dtype=np.uint8)  # 159 bytes -> 40 u32 words, the last zero-padded
    y = np.arange(40, dtype=U32)
    want = run_pipeline(reference, pipe, [raw, y])
    for g, w in zip(gpu.run_pipeline(pipe, [raw, y]), want):
        np.testing.assert_array_equal(g, w)


def test_run_pipeline_checks_inputs(gpu):
    pipe = _pipeline(100)
    x = np.zeros(100, U32)
    for bad in ([x], [x, x.astype(np.int32)], [x, np.zeros(99, U32)], [x, x, x]):
        with pytest.raises(DispatchError):
            gpu.run_pipeline(pipe, bad)


def test_ops_call_uses_run_pipeline(gpu, monkeypatch):
    pipe = _pipeline(50)
    calls = []
    real = gpu.run_pipeline
    monkeypatch.setattr(gpu, "run_pipeline", lambda p, ins: calls.append(p) or real(p, ins))
    from collections import OrderedDict

    from vyre.ops import api

    monkeypatch.setattr(api, "_CACHE", OrderedDict())
    monkeypatch.setattr(api, "get", lambda op_id: type("Spec", (), {
        "params_for": staticmethod(lambda *arrays, **kw: {}), "build": staticmethod(lambda **kw: pipe)})())
    x = np.arange(50, dtype=U32)
    y, t = api.call("test.res_pipe", gpu, x, x)
    assert calls == [pipe]
    np.testing.assert_array_equal(t.reshape(-1), np_mul3(x))


# ----------------------------------------------------------------------------- docs
def test_docs_example_runs(gpu, capsys):
    text = DOC.read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    assert blocks, "docs/resident.md holds a python example"
    exec(compile(blocks[0], f"{DOC}:example", "exec"), {"__name__": "__docs__"})
    assert capsys.readouterr().out.strip()


def test_vyre_exports_the_backend_with_resident_api():
    for name in ("allocate_resident", "dispatch_resident_sequence", "dispatch_resident_repeated_sequence",
                 "download_resident_ranges", "run_pipeline", "dispatch_async", "dispatch_timed"):
        assert callable(getattr(vyre.WgpuBackend, name)), name


def test_download_into_caller_arrays(gpu):
    data = np.arange(1000, dtype=np.float32)
    h = gpu.allocate_resident(data.nbytes)
    try:
        gpu.upload_resident(h, data)
        out = np.empty(1000, np.float32)
        got = gpu.download_resident(h, out=out)
        assert got is out
        np.testing.assert_array_equal(out, data)
        part = np.empty(16, np.uint8)
        assert gpu.download_resident_range(h, 8, 16, out=part) is part
        np.testing.assert_array_equal(part, data.view(np.uint8)[8:24])
        a, b = gpu.download_resident_ranges([(h, 0, 8), (h, 4, 4)], outs=[np.empty(2, np.float32), None])
        np.testing.assert_array_equal(a, data[:2])
        np.testing.assert_array_equal(b, data.view(np.uint8)[4:8])
        for bad in (np.empty(999, np.float32), np.empty(2000, np.float32)[::2], np.empty(1000, np.float32).T[None]):
            if bad.nbytes == data.nbytes and bad.flags.c_contiguous:
                continue
            with pytest.raises(DispatchError):
                gpu.download_resident(h, out=bad)
        ro = np.empty(1000, np.float32)
        ro.flags.writeable = False
        with pytest.raises(DispatchError):
            gpu.download_resident(h, out=ro)
        with pytest.raises(DispatchError):
            gpu.download_resident_ranges([h], outs=[])
    finally:
        gpu.free_resident(h)


def test_large_transfers_take_the_threaded_copy_path(gpu, monkeypatch):
    from vyre.backends.wgpu import hostcopy

    monkeypatch.setattr(hostcopy, "PARALLEL_MIN_BYTES", 1 << 12)
    monkeypatch.setattr(hostcopy, "_threads", lambda: 3)  # chunks that do not divide the size evenly
    monkeypatch.setattr(gpu._executor, "upload_map_threshold", 0)  # every upload through the mapped staging buffer
    data = np.random.default_rng(3).integers(0, 2**32, 300_001, dtype=np.uint64).astype(np.uint32)
    h = gpu.allocate_resident(data.nbytes)
    try:
        gpu.upload_resident(h, data)
        np.testing.assert_array_equal(gpu.download_resident(h).view(np.uint32), data)
        out = np.empty_like(data)
        gpu.download_resident(h, out=out)
        np.testing.assert_array_equal(out, data)
    finally:
        gpu.free_resident(h)
