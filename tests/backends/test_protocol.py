"""The Backend protocol (vyre/backends/base.py): the same code run on the reference backend and on the
GPU (the session's ``gpu``), compared with each other, with ``dispatch`` and with numpy.

Integers are compared bit-exactly; float results of registered ops within the op's own tolerance.
"""

from __future__ import annotations

import inspect

import numpy as np
import pytest

import vyre
from vyre.backends.artifact import CompiledProgram
from vyre.backends.base import Backend, Capabilities
from vyre.backends.config import DispatchConfig
from vyre.backends.handles import ResidentHandle
from vyre.backends.host import plan_dispatch, storage_to_host
from vyre.backends.schedule import BufferSpec, Pipeline, Step
from vyre.errors import DispatchError, UnsupportedFeatureError, VyreError
from vyre.ir.builder import ProgramBuilder
from vyre.ir.types import DataType
from vyre.ops.api import pipeline_for
from vyre.ops.registry import compare, get

from programs import CASES

U32 = np.uint32

#: Every member of the protocol; a new one must be added here (and to both backends).
PROTOCOL_METHODS = {
    "capabilities", "dispatch", "dispatch_batch", "compile", "dispatch_compiled", "allocate_resident",
    "free_resident", "upload_resident", "upload_resident_many", "download_resident", "download_resident_ranges",
    "dispatch_resident", "dispatch_resident_sequence", "run_pipeline", "params_handle", "flush",
    "capture_resident_sequence",
}


def _mul3():
    """x = x * 3 + 1 (in place)."""
    b = ProgramBuilder("proto_mul3", workgroup_size=64)
    x = b.buffer("x", "u32", access="read_write")
    i = b.global_index()
    with b.if_(i < x.len()):
        x[i] = x[i] * 3 + 1
    return b.build()


def _mix():
    """y = y * 5 + (a ^ (y >> 3))."""
    b = ProgramBuilder("proto_mix", workgroup_size=64)
    a = b.buffer("a", "u32")
    y = b.buffer("y", "u32", access="read_write")
    i = b.global_index()
    with b.if_(i < y.len()):
        y[i] = y[i] * 5 + (a[i] ^ (y[i] >> 3))
    return b.build()


def _evens():
    """out[i] = i + 100 at even i only (a write buffer it does not cover)."""
    b = ProgramBuilder("proto_evens", workgroup_size=64)
    out = b.buffer("out", "u32", access="write")
    i = b.global_index()
    with b.if_((i < out.len()) & ((i % 2) == 0)):
        out[i] = i + 100
    return b.build()


MUL3, MIX, EVENS = _mul3(), _mix(), _evens()


def np_mul3(x):
    return x * U32(3) + U32(1)


def np_mix(a, y):
    return y * U32(5) + (a ^ (y >> U32(3)))


@pytest.fixture(params=["reference", "gpu"])
def backend(request):
    """Each backend in turn: the reference interpreter, then the session's GPU backend."""
    return request.getfixturevalue(request.param)


def _data(n: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 2**32, n, dtype=np.uint64).astype(U32)


# ---------------------------------------------------------------------------------- the protocol
def _protocol_members() -> set[str]:
    return {n for n, v in vars(Backend).items() if not n.startswith("_") and callable(v)}


def test_protocol_lists_every_method():
    assert _protocol_members() == PROTOCOL_METHODS
    assert "name" in Backend.__annotations__


def _compatible(proto: inspect.Signature, impl: inspect.Signature) -> list[str]:
    """Problems calling ``impl`` the way ``proto`` is declared (same names, kinds and defaults)."""
    problems = []
    pp = [p for p in proto.parameters.values() if p.name != "self"]
    ip = {p.name: p for p in impl.parameters.values() if p.name != "self"}
    order = [p.name for p in impl.parameters.values() if p.name != "self"]
    if order[: len(pp)] != [p.name for p in pp]:
        problems.append(f"parameters {order} do not start with {[p.name for p in pp]}")
    for p in pp:
        q = ip.get(p.name)
        if q is None:
            continue
        if q.kind != p.kind:
            problems.append(f"{p.name}: kind {q.kind} != {p.kind}")
        if p.default is not inspect.Parameter.empty and q.default != p.default:
            problems.append(f"{p.name}: default {q.default!r} != {p.default!r}")
    for name in order[len(pp):]:
        q = ip[name]
        if q.default is inspect.Parameter.empty and q.kind not in (q.VAR_POSITIONAL, q.VAR_KEYWORD):
            problems.append(f"extra parameter {name} has no default")
    return problems


def test_backends_implement_the_protocol(backend):
    assert isinstance(backend, Backend)
    assert isinstance(backend.name, str) and backend.name
    for name in sorted(PROTOCOL_METHODS):
        proto = inspect.signature(getattr(Backend, name))
        impl = inspect.signature(getattr(type(backend), name))
        assert not _compatible(proto, impl), (name, _compatible(proto, impl))


def test_objects_without_the_methods_are_not_backends():
    class DispatchOnly:
        name = "x"

        def dispatch(self, program, inputs=None, config=None):
            return []

    assert not isinstance(DispatchOnly(), Backend)


# ---------------------------------------------------------------------------------- capabilities
def _scaled_by_params():
    """y = x * k + c, with (k, c) read from a uniform params buffer."""
    b = ProgramBuilder("scaled_by_params", 64)
    x = b.buffer("x", "u32")
    p = b.buffer("p", "u32", access="uniform", count=4)
    y = b.buffer("y", "u32", access="write")
    i = b.global_index()
    with b.if_(i < y.len()):
        y[i] = x[i] * p[0] + p[1]
    return b.build()


def test_params_handles_are_shared_by_their_words(backend):
    words = np.array([3, 5, 0, 0], U32)
    h = backend.params_handle(words)
    assert backend.params_handle(words.tobytes()) is h  # bytes or array: the same handle
    assert backend.params_handle(np.array([3, 6, 0, 0], U32)) is not h
    np.testing.assert_array_equal(backend.download_resident(h).view(U32), words)
    x = np.arange(100, dtype=U32)
    hx, hy = backend.allocate_resident(x.nbytes), backend.allocate_resident(x.nbytes)
    backend.upload_resident(hx, x)
    backend.dispatch_resident(_scaled_by_params(), [hx, h, hy])
    np.testing.assert_array_equal(backend.download_resident(hy).view(U32), x * 3 + 5)
    backend.flush()
    for bad in (b"", b"abc", np.zeros(3, np.uint8)):
        with pytest.raises(DispatchError, match="multiple of 4"):
            backend.params_handle(bad)


def test_gpu_params_handles_are_not_the_callers(gpu):
    h = gpu.params_handle(np.array([1, 2, 3, 4], U32))
    with pytest.raises(DispatchError, match="shared params uniform"):
        gpu.free_resident(h)
    with pytest.raises(DispatchError, match="shared params uniform"):
        gpu.upload_resident(h, np.zeros(4, U32))
    b = ProgramBuilder("writes_p", 64)
    p = b.buffer("p", "u32", access="read_write")
    with b.if_(b.global_index() < p.len()):
        p[b.global_index()] = p[b.global_index()] + 1
    with pytest.raises(DispatchError, match="writable buffer"):
        gpu.dispatch_resident(b.build(), [h])
    np.testing.assert_array_equal(gpu.download_resident(h).view(U32), [1, 2, 3, 4])
    # another backend's handle with the same id (the reference backend counts its own) is foreign, not shared
    foreign = ResidentHandle(h.id, h.nbytes, h.generation, h.owner + 1_000_000)
    for call in (lambda: gpu.free_resident(foreign), lambda: gpu.upload_resident(foreign, np.zeros(4, U32))):
        with pytest.raises(DispatchError, match="another backend"):
            call()


def test_protocol_defaults_are_loud():
    class Partial(Backend):
        name = "partial"

    with pytest.raises(UnsupportedFeatureError, match="params_handle"):
        Partial().params_handle(b"\0\0\0\0")
    with pytest.raises(UnsupportedFeatureError, match="flush"):
        Partial().flush()


def test_capabilities(backend):
    caps = backend.capabilities()
    assert isinstance(caps, Capabilities)
    assert caps.backend == backend.name
    assert caps.resident is True
    for field in ("native_pipelines", "timestamps", "f16", "subgroups", "async_dispatch"):
        assert isinstance(getattr(caps, field), bool), field
    assert caps.max_storage_buffer_bytes >= 128 << 20
    assert caps.max_workgroups_per_dimension >= 65535
    assert len(caps.max_workgroup_size) == 3 and all(d >= 64 for d in caps.max_workgroup_size)
    assert caps.max_invocations_per_workgroup >= 256
    if backend.name == "reference":
        assert (caps.native_pipelines, caps.timestamps, caps.f16, caps.subgroups, caps.async_dispatch) == (
            False, False, True, True, False)
        assert caps.max_workgroup_size == (256, 256, 64)
    else:
        assert caps.native_pipelines is True


def test_reference_limit_is_the_one_it_enforces():
    small = vyre.ReferenceBackend(max_storage_buffer_bytes=1024)
    assert small.capabilities().max_storage_buffer_bytes == 1024
    with pytest.raises(DispatchError, match="limit"):
        small.allocate_resident(2048)
    with pytest.raises(DispatchError, match="limit"):
        small.dispatch(MUL3, [np.zeros(512, U32)])
    small.dispatch(MUL3, [np.zeros(256, U32)])


# ---------------------------------------------------------------------------------- resident buffers
def test_resident_round_trips(backend):
    h = backend.allocate_resident(64, label="proto")
    try:
        assert isinstance(h, ResidentHandle) and h.nbytes == 64
        np.testing.assert_array_equal(backend.download_resident(h), np.zeros(64, np.uint8))
        x = np.arange(16, dtype=U32) * U32(0x01010101)
        backend.upload_resident(h, x)
        got = backend.download_resident(h)
        assert got.dtype == np.uint8 and got.shape == (64,)
        np.testing.assert_array_equal(got.view(U32), x)
        backend.upload_resident(h, b"\xff" * 8, offset=8)
        backend.upload_resident_many([(h, np.array([7], U32)), (h, np.array([9, 10], U32), 56)])
        want = x.copy()
        want[[2, 3]] = 0xFFFFFFFF
        want[0], want[14], want[15] = 7, 9, 10
        out = np.empty(16, U32)
        assert backend.download_resident(h, out=out) is out
        np.testing.assert_array_equal(out, want)
        whole, part, odd = backend.download_resident_ranges([h, (h, 8, 12), (h, 5, 3)])
        np.testing.assert_array_equal(whole.view(U32), want)
        np.testing.assert_array_equal(part, want.view(np.uint8)[8:20])
        np.testing.assert_array_equal(odd, want.view(np.uint8)[5:8])
        mine = np.empty(12, np.uint8)
        got = backend.download_resident_ranges([(h, 8, 12), h], outs=[mine, None])
        assert got[0] is mine
        np.testing.assert_array_equal(mine, want.view(np.uint8)[8:20])
    finally:
        backend.free_resident(h)


def test_dispatch_resident_matches_dispatch_and_numpy(backend):
    a, y = _data(1000, 1), _data(1000, 2)
    ha, hy = backend.allocate_resident(a.nbytes), backend.allocate_resident(y.nbytes)
    try:
        backend.upload_resident_many([(ha, a), (hy, y)])
        assert backend.dispatch_resident(MIX, [ha, hy]) is None
        got = backend.download_resident(hy).view(U32)
        np.testing.assert_array_equal(got, np_mix(a, y))
        np.testing.assert_array_equal(got, backend.dispatch(MIX, [a, y])[0])
        np.testing.assert_array_equal(backend.download_resident(ha).view(U32), a)  # read buffer untouched
        backend.dispatch_resident(MUL3, [hy], DispatchConfig(counts={"x": 10}))  # only the first 10
        again = backend.download_resident(hy).view(U32)
        np.testing.assert_array_equal(again[:10], np_mul3(got[:10]))
        np.testing.assert_array_equal(again[10:], got[10:])
    finally:
        backend.free_resident(ha)
        backend.free_resident(hy)


def test_dispatch_resident_does_not_clear_write_buffers(backend):
    h = backend.allocate_resident(100 * 4)
    try:
        backend.upload_resident(h, np.full(100, 7, U32))
        backend.dispatch_resident(EVENS, [h])
        want = np.full(100, 7, U32)
        want[::2] = np.arange(0, 100, 2, dtype=U32) + U32(100)
        np.testing.assert_array_equal(backend.download_resident(h).view(U32), want)
    finally:
        backend.free_resident(h)


def test_sequence_matches_dispatch_and_numpy(backend):
    a, x = _data(300, 3), _data(300, 4)
    ha, hx = backend.allocate_resident(a.nbytes), backend.allocate_resident(x.nbytes)
    try:
        backend.upload_resident_many([(ha, a), (hx, x)])
        steps = [(MUL3, [hx]), (MIX, [ha, hx]), (MUL3, [hx], (5, 1, 1)), (MUL3, (hx,), DispatchConfig(counts={"x": 3}))]
        whole, part = backend.dispatch_resident_sequence(steps, read=[hx, (hx, 4, 8)])
        want = np_mul3(np_mix(a, np_mul3(x)))
        want[:3] = np_mul3(want[:3])
        np.testing.assert_array_equal(whole.view(U32), want)
        np.testing.assert_array_equal(part, want.view(np.uint8)[4:12])
        step = backend.dispatch(MIX, [a, backend.dispatch(MUL3, [x])[0]])[0]  # the same through dispatch
        np.testing.assert_array_equal(np_mul3(step)[3:], whole.view(U32)[3:])
        assert backend.dispatch_resident_sequence([(MUL3, [hx])]) == []
        np.testing.assert_array_equal(backend.download_resident(hx).view(U32), np_mul3(want))
    finally:
        backend.free_resident(ha)
        backend.free_resident(hx)


def test_sequence_checks_every_step_before_running(backend):
    x = _data(64, 5)
    hx = backend.allocate_resident(x.nbytes)
    try:
        backend.upload_resident(hx, x)
        with pytest.raises(DispatchError, match="2 buffer"):
            backend.dispatch_resident_sequence([(MUL3, [hx]), (MIX, [hx])])
        with pytest.raises(DispatchError, match="list"):
            backend.dispatch_resident_sequence((MUL3, [hx]))
        with pytest.raises(DispatchError, match="read 0"):
            backend.dispatch_resident_sequence([(MUL3, [hx])], read=[(hx, 0, 4096)])
        np.testing.assert_array_equal(backend.download_resident(hx).view(U32), x)  # nothing ran
    finally:
        backend.free_resident(hx)


# ---------------------------------------------------------------------------------- bad handles
def test_freed_handles_raise(backend):
    h = backend.allocate_resident(16)
    backend.free_resident(h)
    for call in (lambda: backend.free_resident(h), lambda: backend.download_resident(h),
                 lambda: backend.upload_resident(h, np.zeros(4, U32)),
                 lambda: backend.dispatch_resident(MUL3, [h]),
                 lambda: backend.dispatch_resident_sequence([(MUL3, [h])]),
                 lambda: backend.download_resident_ranges([(h, 0, 4)])):
        with pytest.raises(DispatchError, match="freed") as err:
            call()
        assert err.value.fix


def test_foreign_handles_raise(backend):
    other = vyre.ReferenceBackend()
    foreign = other.allocate_resident(16)
    mine = backend.allocate_resident(16)
    try:
        for call in (lambda: backend.free_resident(foreign), lambda: backend.download_resident(foreign),
                     lambda: backend.upload_resident(foreign, np.zeros(4, U32)),
                     lambda: backend.dispatch_resident(MUL3, [foreign])):
            with pytest.raises(DispatchError, match="another backend"):
                call()
        with pytest.raises(DispatchError, match="another backend"):
            other.download_resident(mine)
        np.testing.assert_array_equal(other.download_resident(foreign), np.zeros(16, np.uint8))
    finally:
        backend.free_resident(mine)
        other.free_resident(foreign)


def test_gpu_and_reference_refuse_each_others_handles(gpu, reference):
    hg, hr = gpu.allocate_resident(16), reference.allocate_resident(16)
    try:
        with pytest.raises(DispatchError, match="another backend"):
            reference.download_resident(hg)
        with pytest.raises(DispatchError, match="another backend"):
            gpu.download_resident(hr)
    finally:
        gpu.free_resident(hg)
        reference.free_resident(hr)


@pytest.mark.parametrize("nbytes", [0, -4, 6, True, 4.0])
def test_bad_allocation_sizes_raise(backend, nbytes):
    with pytest.raises(DispatchError):
        backend.allocate_resident(nbytes)


def test_out_of_range_and_misaligned_transfers_raise(backend):
    h, h2 = backend.allocate_resident(16), backend.allocate_resident(16)
    try:
        backend.upload_resident(h, np.arange(4, dtype=U32))
        bad = [
            (lambda: backend.upload_resident(h, np.zeros(5, U32)), "do not fit"),
            (lambda: backend.upload_resident(h, np.zeros(1, U32), offset=16), "do not fit"),
            (lambda: backend.upload_resident(h, np.zeros(1, U32), offset=-4), "do not fit"),
            (lambda: backend.upload_resident(h, np.zeros(1, U32), offset=2), "multiples of 4"),
            (lambda: backend.upload_resident(h, b"abc"), "multiples of 4"),
            (lambda: backend.upload_resident(h, object()), "not a buffer"),
            (lambda: backend.download_resident_ranges([(h, 8, 12)]), "outside"),
            (lambda: backend.download_resident_ranges([(h, -1, 2)]), "outside"),
            (lambda: backend.download_resident(h, out=np.empty(3, U32)), "bytes"),
            (lambda: backend.download_resident_ranges([h], outs=[None, None]), "output"),
            (lambda: backend.dispatch_resident(MUL3, h), "list"),
            (lambda: backend.dispatch_resident(MIX, [h, h]), "several buffers"),
            (lambda: backend.dispatch_resident(MIX, [h]), "resident handle"),
            (lambda: backend.dispatch_resident(MUL3, [h], DispatchConfig(counts={"x": 5})), "holds 16 bytes"),
        ]
        for call, match in bad:
            with pytest.raises(DispatchError, match=match):
                call()
        # upload_resident_many checks every upload before writing any
        with pytest.raises(DispatchError, match="upload 1"):
            backend.upload_resident_many([(h2, np.full(4, 9, U32)), (h, np.zeros(8, U32))])
        np.testing.assert_array_equal(backend.download_resident(h2), np.zeros(16, np.uint8))
        np.testing.assert_array_equal(backend.download_resident(h).view(U32), np.arange(4, dtype=U32))
    finally:
        backend.free_resident(h)
        backend.free_resident(h2)


# ---------------------------------------------------------------------------------- compile
def test_compile_and_dispatch_compiled(backend):
    art = backend.compile(MIX)
    assert isinstance(art, CompiledProgram)
    assert art.program is MIX and art.fingerprint == MIX.fingerprint
    assert "@compute" in art.wgsl and art.entry_point
    assert [b.name for b in art.bindings[:2]] == ["a", "y"] and len(art.bindings) == 3  # + the params uniform
    assert art.workgroup_size == (64, 1, 1)
    if backend.name == "reference":
        assert art.key[0] == "reference"
    a, y = _data(200, 6), _data(200, 7)
    got = backend.dispatch_compiled(art, [a, y])
    np.testing.assert_array_equal(got[0], np_mix(a, y))
    np.testing.assert_array_equal(backend.dispatch_compiled(art, {"a": a, "y": y}, DispatchConfig(grid=1))[0][:64],
                                  np_mix(a, y)[:64])
    with pytest.raises(DispatchError, match="CompiledProgram"):
        backend.dispatch_compiled(MIX, [a, y])


def test_compiled_artifacts_agree_between_backends(gpu, reference):
    g, r = gpu.compile(MIX), reference.compile(MIX)
    assert g.wgsl == r.wgsl and g.bindings == r.bindings and g.fingerprint == r.fingerprint
    a, y = _data(100, 8), _data(100, 9)
    np.testing.assert_array_equal(reference.dispatch_compiled(g, [a, y])[0], gpu.dispatch_compiled(g, [a, y])[0])


# ---------------------------------------------------------------------------------- batch
def test_dispatch_batch_keeps_errors_per_job(backend):
    a, y, x = _data(128, 10), _data(128, 11), _data(50, 12)
    jobs = [(MIX, [a, y]), (MIX, [a.astype(np.float32), y]), "not a job", (42, []), (MUL3, [x], DispatchConfig())]
    res = backend.dispatch_batch(jobs)
    assert len(res) == len(jobs)
    np.testing.assert_array_equal(res[0][0], np_mix(a, y))
    assert all(isinstance(r, DispatchError) for r in res[1:4]), res[1:4]
    assert isinstance(res[1], VyreError) and "dtype" in str(res[1])
    np.testing.assert_array_equal(res[4][0], np_mul3(x))
    assert backend.dispatch_batch([]) == []


# ---------------------------------------------------------------------------------- run_pipeline
def _op_case(op_id: str):
    spec = get(op_id)
    rng = np.random.default_rng(13)
    if op_id == "sort.radix":
        arrays = (rng.integers(0, 2**32, 3000, dtype=np.uint64).astype(U32),)
    elif op_id == "scan.inclusive":
        arrays = (rng.integers(0, 1000, 5000, dtype=np.uint64).astype(U32),)
    elif op_id == "reduce.sum":
        arrays = (rng.standard_normal(10000).astype(np.float32),)
    else:  # hash.crc32: byte data, packed by host_inputs
        arrays = (rng.integers(0, 256, 1001, dtype=np.uint64).astype(np.uint8),)
    params = spec.params_for(*arrays)
    return spec, params, pipeline_for(op_id, params), arrays


@pytest.mark.parametrize("op_id", ["sort.radix", "scan.inclusive", "reduce.sum", "hash.crc32"])
def test_run_pipeline_of_registered_ops(gpu, reference, op_id):
    spec, params, pipe, arrays = _op_case(op_id)
    want = spec.reference(*arrays, **params)
    on_ref = reference.run_pipeline(pipe, list(arrays))
    on_gpu = gpu.run_pipeline(pipe, list(arrays))
    assert len(on_ref) == len(on_gpu) == len(want)
    for r, g, w in zip(on_ref, on_gpu, want):
        for got, who in ((r, "reference"), (g, "gpu")):
            ok, err, desc = compare(got, np.asarray(w), spec.tolerance)
            assert ok, f"{op_id} on {who}: {desc} (tolerance {spec.tolerance.describe()})"
        if np.asarray(w).dtype.kind not in "fc":
            np.testing.assert_array_equal(r, g)  # integers: bit-exact between backends


def test_run_pipeline_host_semantics(backend, reference):
    """A write buffer is zeroed before each step that writes it; non-input buffers start at zero."""
    n = 130
    pipe = Pipeline(
        name="proto_semantics",
        buffers={"out": BufferSpec(DataType.U32, n), "x": BufferSpec(DataType.U32, n),
                 "scratch": BufferSpec(DataType.U32, n)},
        inputs=("x",), outputs=("out", "x", "scratch"),
        steps=(Step(EVENS, ("out",)), Step(MUL3, ("out",)), Step(EVENS, ("out",)), Step(MIX, ("out", "x"))),
        output_shapes={"scratch": (10, 13)},
    )
    pipe.check()
    x = _data(n, 14)
    out, x_after, scratch = backend.run_pipeline(pipe, [x])
    evens = np.zeros(n, U32)
    evens[::2] = np.arange(0, n, 2, dtype=U32) + U32(100)  # odd slots: zero again, not mul3(0) == 1
    np.testing.assert_array_equal(out, evens)
    np.testing.assert_array_equal(x_after, np_mix(evens, x))
    assert scratch.shape == (10, 13) and not scratch.any()
    for got, want in zip(backend.run_pipeline(pipe, {"x": x}), reference.run_pipeline(pipe, [x])):
        np.testing.assert_array_equal(got, want)
    for bad in ([], [x, x], x):
        with pytest.raises(DispatchError):
            backend.run_pipeline(pipe, bad)


def test_ops_layer_goes_through_run_pipeline(backend, monkeypatch):
    import vyre.ops

    calls = []
    real = backend.run_pipeline
    monkeypatch.setattr(backend, "run_pipeline", lambda p, ins: calls.append(p.name) or real(p, ins))
    x = np.arange(10, dtype=U32)
    np.testing.assert_array_equal(vyre.ops.zip_add(backend, x, x), x + x)
    assert len(calls) == 1


# ---------------------------------------------------------------------------------- the catalogue, resident
@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_reference_dispatch_resident_equals_dispatch(reference, case):
    """Every parity-catalogue program (vectors, bools, f16, atomics, workgroup memory...) run over
    resident buffers on the reference gives exactly what its dispatch gives."""
    program, inputs, config = case.build()
    want = reference.dispatch(program, inputs, config)
    plan = plan_dispatch(program, inputs, config)
    handles = [reference.allocate_resident(b.nbytes) for b in plan.buffers]
    try:
        reference.upload_resident_many([(h, b.data.view(np.uint8)[: b.nbytes]) for h, b in zip(handles, plan.buffers)
                                        if b.data is not None and b.data.nbytes % 4 == 0])
        for h, b in zip(handles, plan.buffers):  # odd f16 inputs: pad to whole words
            if b.data is not None and b.data.nbytes % 4:
                raw = np.zeros(b.nbytes, np.uint8)
                raw[: b.data.nbytes] = b.data.view(np.uint8)
                reference.upload_resident(h, raw)
        counts = {b.decl.name: b.count for b in plan.buffers}
        reference.dispatch_resident(program, handles, DispatchConfig(grid=plan.grid, counts=counts))
        outs = reference.download_resident_ranges([h for h, b in zip(handles, plan.buffers) if b.is_output])
        got = [storage_to_host(b.decl, raw, b.count) for raw, b in zip(outs, plan.outputs)]
    finally:
        for h in handles:
            reference.free_resident(h)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_array_equal(g.view(np.uint8), w.view(np.uint8))  # bit-exact, floats included
