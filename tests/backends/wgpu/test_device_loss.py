"""Device loss and recovery for resident handles, sequences, async dispatches and run_pipeline.

Uses its own backend (not the session's), since it destroys the device: the ``backend`` fixture of
tests/backends/wgpu/conftest.py."""

from __future__ import annotations

import numpy as np
import pytest

from vyre.errors import BackendError, DeviceLostError, DispatchError
from vyre.ir.builder import ProgramBuilder
from vyre.ir.types import DataType
from vyre.ops.pipeline import BufferSpec, Pipeline, Step

U32 = np.uint32


def _mul3():
    b = ProgramBuilder("loss_mul3", workgroup_size=64)
    x = b.buffer("x", "u32", access="read_write")
    i = b.global_index()
    with b.if_(i < x.len()):
        x[i] = x[i] * 3 + 1
    return b.build()


MUL3 = _mul3()
PIPE = Pipeline(name="loss_pipe", buffers={"x": BufferSpec(DataType.U32, 100)}, inputs=("x",), outputs=("x",),
                steps=(Step(MUL3, ("x",)),) * 3)


def _run(b, h, x):
    b.upload_resident(h, x)
    return b.dispatch_resident_sequence([(MUL3, [h])] * 5, read=[h])[0]


def test_loss_then_recovery_gives_identical_results(backend):
    x = np.arange(1000, dtype=U32)
    old = backend.allocate_resident(4000)
    before = _run(backend, old, x)
    pipe_before = backend.run_pipeline(PIPE, [x[:100]])[0]
    backend.force_device_lost()
    assert backend.device_lost()
    uses = {
        "upload": lambda: backend.upload_resident(old, x),
        "download": lambda: backend.download_resident(old),
        "range": lambda: backend.download_resident_ranges([(old, 0, 4)]),
        "dispatch": lambda: backend.dispatch_resident(MUL3, [old]),
        "sequence": lambda: backend.dispatch_resident_sequence([(MUL3, [old])], read=[old]),
        "free": lambda: backend.free_resident(old),
        "allocate": lambda: backend.allocate_resident(16),
        "async": lambda: backend.dispatch_async(MUL3, [x]),
        "timed": lambda: backend.dispatch_timed(MUL3, [x]),
        "pipeline": lambda: backend.run_pipeline(PIPE, [x[:100]]),
    }
    for use in uses.values():
        with pytest.raises(DeviceLostError):
            use()
    backend.try_recover()
    assert not backend.device_lost()
    assert backend.stats()["resident"] == {"bytes": 0, "handles": 0}
    for name in ("upload", "download", "range", "dispatch", "sequence", "free"):
        with pytest.raises(DeviceLostError, match="before the GPU device was lost"):
            uses[name]()
    new = backend.allocate_resident(4000)
    assert new.generation == backend.generation != old.generation
    after = _run(backend, new, x)
    assert after.tobytes() == before.tobytes()
    np.testing.assert_array_equal(backend.run_pipeline(PIPE, [x[:100]])[0], pipe_before)
    backend.free_resident(new)
    with pytest.raises(DispatchError, match="freed"):
        backend.free_resident(new)


def test_pending_async_from_before_a_loss_raises(backend):
    x = np.arange(4096, dtype=U32)
    pending = [backend.dispatch_async(MUL3, [x]) for _ in range(2)]
    backend.force_device_lost()
    for p in pending:
        assert p.done()
        with pytest.raises(DeviceLostError):
            p.wait(timeout=5)
        with pytest.raises(DeviceLostError):
            p.wait()
    backend.try_recover()
    (out,) = backend.dispatch_async(MUL3, [x]).wait(timeout=60)
    np.testing.assert_array_equal(out, x * U32(3) + U32(1))


def test_shutdown_ends_handles_and_pending_dispatches(backend):
    h = backend.allocate_resident(64)
    pending = backend.dispatch_async(MUL3, [np.arange(4096, dtype=U32)])
    backend.shutdown()
    for use in (lambda: backend.download_resident(h), lambda: pending.wait(), lambda: backend.allocate_resident(64)):
        with pytest.raises(BackendError, match="shut down"):
            use()


def test_handles_of_another_backend_are_refused(backend, gpu):
    h = backend.allocate_resident(64)
    with pytest.raises(DispatchError, match="another backend"):
        gpu.download_resident(h)
    backend.free_resident(h)
