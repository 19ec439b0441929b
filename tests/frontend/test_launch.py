"""Launching: arguments (positional, by name, dtype and shape checks), dims, in-place outputs, the
specialization cache (no rebuild, no recompile), threads, program()/wgsl(), the default backend."""

from __future__ import annotations

import logging
import threading

import numpy as np
import pytest

import vyre
from vyre import In, InOut, Out, f32, tid, u32
from vyre.errors import ArgumentTypeError, DispatchError, InvalidArgumentError, NoAdapterError


def make_saxpy():
    @vyre.kernel
    def saxpy(x: In[f32], y: InOut[f32], a: f32):
        i = tid()
        y[i] = a * x[i] + y[i]
    return saxpy


def test_launch_forms_agree(backend):
    saxpy = make_saxpy()
    x, y = np.arange(100, dtype=np.float32), np.ones(100, np.float32)
    want = 2 * x + 1
    (a,) = saxpy.launch(dim=100, inputs=[x, y.copy(), 2.0], backend=backend)
    (b,) = saxpy.launch(dim=100, inputs={"x": x, "y": y.copy(), "a": 2.0}, backend=backend)
    (c,) = saxpy[100](x, y.copy(), 2.0, backend=backend)
    (d,) = saxpy[100](x=x, y=y.copy(), a=2.0, backend=backend)
    for got in (a, b, c, d):
        assert np.array_equal(got, want)


def test_outputs_fill_writeable_contiguous_arrays_in_place(reference):
    saxpy = make_saxpy()
    x = np.arange(10, dtype=np.float32)
    y = np.ones(10, np.float32)
    (got,) = saxpy[10](x, y, 3.0, backend=reference)
    assert got is y and np.array_equal(y, 3 * x + 1)
    frozen = np.ones(10, np.float32)
    frozen.flags.writeable = False
    (got,) = saxpy[10](x, frozen, 3.0, backend=reference)
    assert got is not frozen and (frozen == 1).all() and np.array_equal(got, 3 * x + 1)


@pytest.mark.parametrize("dim", [0, -3, (4, 0), (1, 2, 3, 4), 2.5, "8", True])
def test_bad_dims_raise_before_any_work(dim, reference):
    saxpy = make_saxpy()
    with pytest.raises(DispatchError, match="dim"):
        saxpy.launch(dim, [np.zeros(4, np.float32), np.zeros(4, np.float32), 1.0], backend=reference)
    assert saxpy.cache_info()["builds"] == 0


@pytest.mark.parametrize("inputs,match,builtin", [
    ([np.zeros(4, np.float64), np.zeros(4, np.float32), 1.0], "float64", TypeError),
    ([np.zeros(4, np.float32), np.zeros(4, np.float32)], "takes 3", TypeError),
    ({"x": np.zeros(4, np.float32), "a": 1.0}, "misses", TypeError),
    ([np.zeros(4, np.float32), np.zeros(4, np.float32), "two"], "'a' is f32", TypeError),
    ([[1.0, 2.0], np.zeros(4, np.float32), 1.0], "numpy array", TypeError),
    ([np.zeros((2, 2, 2, 2), np.float32), np.zeros(4, np.float32), 1.0], "1 to 3 dimensions", ValueError),
])
def test_bad_arguments_raise_dispatch_error(inputs, match, builtin, reference):
    # issue 27's rule: a bad argument is a DispatchError and the builtin Python code expects
    with pytest.raises(DispatchError, match=match) as info:
        make_saxpy().launch(4, inputs, backend=reference)
    assert isinstance(info.value, builtin) and isinstance(info.value, InvalidArgumentError)
    assert info.value.fix


@pytest.mark.parametrize("dim,builtin", [(0, ValueError), ((4, 0), ValueError), (2.5, TypeError), ("8", TypeError)])
def test_bad_dims_are_builtin_errors(dim, builtin, reference):
    with pytest.raises(builtin, match="dim"):
        make_saxpy().launch(dim, [np.zeros(4, np.float32), np.zeros(4, np.float32), 1.0], backend=reference)


@pytest.mark.parametrize("bad", ["gpu", "reference", 3, object()])
def test_backend_must_be_a_backend_object(bad, reference):
    # issue 27: backend="gpu" was an AttributeError ('str' object has no attribute 'dispatch') from the launch
    saxpy = make_saxpy()
    x = np.zeros(4, np.float32)
    with pytest.raises(ArgumentTypeError, match="not a vyre backend") as info:
        saxpy[4](x, x.copy(), 1.0, backend=bad)
    assert "vyre.WgpuBackend.shared()" in info.value.fix and isinstance(info.value, TypeError)
    with pytest.raises(ArgumentTypeError, match="not a vyre backend"):
        saxpy.launch(4, [x, x.copy(), 1.0], backend=bad)
    with pytest.raises(ArgumentTypeError, match="not a vyre backend"):
        saxpy.wgsl(x, x.copy(), 1.0, dim=4, backend=bad)
    assert saxpy.cache_info()["builds"] == 0  # refused before any work
    (y,) = saxpy[4](x, np.ones(4, np.float32), 1.0, backend=reference)
    assert np.array_equal(y, np.ones(4, np.float32))


def test_strided_views_are_written_through(backend):
    # issue 27: a non-contiguous writeable Out/InOut view (big[::2]) was silently not written
    @vyre.kernel
    def fill(x: In[f32], y: Out[f32], z: InOut[f32]):
        i = tid()
        y[i] = x[i] * 2.0
        z[i] = z[i] + x[i]

    x = np.arange(1, 6, dtype=np.float32)
    big_y, big_z = np.zeros(10, np.float32), np.arange(10, dtype=np.float32)
    y, z = big_y[::2], big_z[1::2]
    want_z = z + x
    got_y, got_z = fill[5](x, y, z, backend=backend)
    assert got_y is y and got_z is z
    assert np.array_equal(big_y[::2], 2 * x) and (big_y[1::2] == 0).all()
    assert np.array_equal(big_z[1::2], want_z) and np.array_equal(big_z[::2], np.arange(0, 10, 2))

    @vyre.kernel
    def fill2(x: In[f32], y: Out[f32], z: InOut[f32]):
        r, c = vyre.tid2()
        y[r, c] = x[r, c] + 1.0
        z[r, c] = z[r, c] * x[r, c]

    x2 = np.arange(12, dtype=np.float32).reshape(3, 4)
    big_y2 = np.zeros((6, 8), np.float32)
    big_z2 = np.full((4, 4), 2.0, np.float32)
    y2 = big_y2[::2, 1::2]      # a strided 2-D view
    z2 = big_z2.T[:3]           # a transposed (Fortran-ordered) 2-D view
    got_y2, got_z2 = fill2[3, 4](x2, y2, z2, backend=backend)
    assert got_y2 is y2 and got_z2 is z2
    assert np.array_equal(big_y2[::2, 1::2], x2 + 1) and big_y2.sum() == (x2 + 1).sum()
    assert np.array_equal(big_z2.T[:3], 2 * x2) and (big_z2.T[3:] == 2).all()


def test_scalar_range_is_checked(reference):
    @vyre.kernel
    def put(out: Out[u32], v: u32):
        out[tid()] = v

    with pytest.raises(DispatchError, match="u32"):
        put[1](np.zeros(1, np.uint32), -1, backend=reference)
    with pytest.raises(DispatchError, match="u32"):
        put[1](np.zeros(1, np.uint32), 1.5, backend=reference)


def test_second_launch_builds_and_compiles_nothing(gpu):
    saxpy = make_saxpy()
    x, y = np.arange(64, dtype=np.float32), np.ones(64, np.float32)
    saxpy[64](x, y, 2.0, backend=gpu)
    before = gpu.stats()
    for n, a in ((64, 3.0), (50, 4.0), (64, 5.0)):  # other lengths and scalars: same program
        (got,) = saxpy[n](x[:n], np.ones(n, np.float32), a, backend=gpu)
        assert np.array_equal(got, a * x[:n] + 1)
    after = gpu.stats()
    assert saxpy.cache_info() == {"builds": 1, "hits": 3, "entries": 1}
    assert after["pipelines_compiled"] == before["pipelines_compiled"]
    assert after["lowerings"] == before["lowerings"]


def test_new_types_or_shapes_specialize(reference):
    @vyre.kernel
    def first_col(m: In[f32], out: Out[f32]):
        i = tid()
        out[i] = m[i, 0]

    for shape in ((4, 3), (5, 3), (4, 6)):
        m = np.arange(np.prod(shape), dtype=np.float32).reshape(shape)
        (got,) = first_col[shape[0]](m, np.zeros(shape[0], np.float32), backend=reference)
        assert np.array_equal(got, m[:, 0])
    assert first_col.cache_info()["builds"] == 2  # the trailing dim is baked, the first is not


def test_threads_launching_one_kernel(backend):
    saxpy = make_saxpy()
    x = np.arange(256, dtype=np.float32)
    results, errors = [], []

    def work(a: float) -> None:
        try:
            (got,) = saxpy[256](x, np.ones(256, np.float32), a, backend=backend)
            results.append(np.array_equal(got, a * x + 1))
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(float(k),)) for k in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and results == [True] * 6
    assert saxpy.cache_info()["builds"] == 1


def test_program_and_wgsl(reference):
    saxpy = make_saxpy()
    x, y = np.zeros(8, np.float32), np.zeros(8, np.float32)
    prog = saxpy.program(x, y, 2.0, dim=8)
    assert isinstance(prog, vyre.Program) and prog.name == "saxpy"
    assert vyre.Program.from_wire(prog.to_wire()).fingerprint == prog.fingerprint
    assert "@compute @workgroup_size(256, 1, 1)" in saxpy.wgsl(x, y, 2.0, dim=8)
    assert saxpy.program(x, y, 2.0, dim=(2, 4)).workgroup_size == (16, 16, 1)
    with pytest.raises(DispatchError, match="not called"):
        saxpy(x, y, 2.0)


def test_default_backend(monkeypatch, caplog):
    import vyre.backends.default as default

    monkeypatch.setenv("VYRE_BACKEND", "reference")
    assert isinstance(vyre.default_backend(), vyre.ReferenceBackend)
    (got,) = make_saxpy()[4](np.ones(4, np.float32), np.ones(4, np.float32), 1.0)
    assert np.array_equal(got, np.full(4, 2, np.float32))
    monkeypatch.setenv("VYRE_BACKEND", "cuda")
    with pytest.raises(DispatchError, match="VYRE_BACKEND"):
        vyre.default_backend()

    def no_adapter():
        raise NoAdapterError("none here", fix="install one")

    monkeypatch.setattr(vyre.WgpuBackend, "shared", staticmethod(no_adapter))
    monkeypatch.setenv("VYRE_BACKEND", "gpu")
    with pytest.raises(NoAdapterError):
        vyre.default_backend()
    monkeypatch.delenv("VYRE_BACKEND")
    monkeypatch.setattr(default, "_fallback", None)
    with caplog.at_level(logging.WARNING, logger="vyre"):
        assert isinstance(vyre.default_backend(), vyre.ReferenceBackend)
    assert "no GPU adapter" in caplog.text


def test_resident_launch_returns_none_and_leaves_results_on_the_device(backend):
    saxpy = make_saxpy()
    x = np.arange(32, dtype=np.float32)
    hx, hy = backend.allocate_resident(x.nbytes), backend.allocate_resident(x.nbytes)
    try:
        backend.upload_resident(hx, x)
        backend.upload_resident(hy, np.ones(32, np.float32))
        assert saxpy[32](hx, (hy, (32,)), 2.0, backend=backend) is None
        assert np.array_equal(backend.download_resident(hy).view(np.float32), 2 * x + 1)
        with pytest.raises(DispatchError, match="mixes"):
            saxpy[32](hx, np.ones(32, np.float32), 2.0, backend=backend)
    finally:
        backend.free_resident(hx)
        backend.free_resident(hy)



class _Resident:
    """A resident array that is not a vyre.Array: the launch sees it through vyre.frontend.resident's
    protocol (members of its class), never through vyre.array."""

    def __init__(self, backend, values: np.ndarray) -> None:
        self._backend, self._values = backend, values
        self._handle = backend.allocate_resident(values.nbytes)
        backend.upload_resident(self._handle, values)
        self.written = 0

    dtype = property(lambda self: self._values.dtype)
    shape = property(lambda self: self._values.shape)
    ndim = property(lambda self: self._values.ndim)
    size = property(lambda self: self._values.size)
    device = property(lambda self: self._backend)
    handle = property(lambda self: self._handle)

    def evaluate(self):
        return self

    def __vyre_write_handle__(self):
        self.written += 1
        return self._handle

    def values(self) -> np.ndarray:
        return self._backend.download_resident(self._handle).view(self._values.dtype)


def test_resident_array_protocol_without_vyre_array(backend):
    from vyre.frontend.resident import is_resident_array

    saxpy = make_saxpy()
    xn = np.arange(16, dtype=np.float32)
    x, y = _Resident(backend, xn), _Resident(backend, np.ones(16, np.float32))
    try:
        assert is_resident_array(x) and not is_resident_array(xn) and not is_resident_array(x.handle)
        assert saxpy[16](x, y, 2.0) is None  # runs on the arrays' backend
        assert (x.written, y.written) == (0, 1)  # only the InOut argument is asked for a handle to write
        np.testing.assert_array_equal(y.values(), 2 * xn + 1)
    finally:
        backend.free_resident(x.handle)
        backend.free_resident(y.handle)


class _ReadOnlyResident(_Resident):
    """A resident array whose class cannot be written in place (no __vyre_write_handle__ method)."""

    __vyre_write_handle__ = None


def test_resident_array_without_write_handle_is_refused_as_output(backend):
    saxpy = make_saxpy()
    x, y = _Resident(backend, np.arange(16, dtype=np.float32)), _Resident(backend, np.ones(16, np.float32))
    ro = _ReadOnlyResident(backend, np.ones(16, np.float32))
    try:
        with pytest.raises(DispatchError, match="cannot be written in place"):
            saxpy[16](x, ro, 2.0)
        saxpy[16](ro, y, 2.0)  # read: fine
        np.testing.assert_array_equal(y.values(), 2 * np.ones(16, np.float32) + 1)
    finally:
        for a in (x, y, ro):
            backend.free_resident(a.handle)


def test_array_marker_with_a_non_dtype_is_an_argument_type_error():
    with pytest.raises(ArgumentTypeError, match=r"In\[...\] takes a vyre dtype marker") as info:
        In[np.float32]
    assert isinstance(info.value, TypeError) and "In[f32]" in info.value.fix
