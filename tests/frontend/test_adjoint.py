"""The adjoints of differentiable kernels (vyre.ir.adjoint through @vyre.kernel(differentiable=True)):
``Kernel.vjp`` against central finite differences of a float64 numpy twin of each kernel (h = 1e-6,
rtol 1e-3 of the largest gradient, atol 1e-4), on the reference interpreter and the GPU; which arrays get
plain (deterministic) and which compare-exchange adds; and the refusals, each a KernelError at its line."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

import vyre
from vyre.errors import ArgumentTypeError, InvalidArgumentError, KernelError

from . import adjoint_cases as C
from . import adjoint_rejects as R

RNG = np.random.default_rng(11)


def fd(f, args, wrt, seeds, h=1e-6):
    """d sum(seed * f(args)) / d args[wrt], central differences in float64."""
    def total(a):
        outs = f(*a)
        outs = outs if isinstance(outs, tuple) else (outs,)
        return sum(float((o * s).sum()) for o, s in zip(outs, seeds, strict=True))
    base = [np.asarray(a, np.float64) if isinstance(a, np.ndarray) else a for a in args]
    g = np.zeros(base[wrt].shape)
    for k in np.ndindex(g.shape):
        up, down = [a.copy() if isinstance(a, np.ndarray) else a for a in base], \
            [a.copy() if isinstance(a, np.ndarray) else a for a in base]
        up[wrt][k] += h
        down[wrt][k] -= h
        g[k] = (total(up) - total(down)) / (2 * h)
    return g


def close(got, want):
    scale = max(1.0, float(np.abs(want).max()))
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-3 * scale + 1e-4)


def f32(*shape, lo=-1.0, hi=1.0):
    return RNG.uniform(lo, hi, shape).astype(np.float32)


def check(kernel, twin, dim, args, wrt, twin_args, backend):
    """vjp of ``kernel`` against finite differences of ``twin`` for every In array named in ``wrt``
    (name -> index in ``twin_args``)."""
    outs = [a for (n, kind), a in zip(kernel.params, args, strict=True) if getattr(kind, "marker", "") == "Out"
            and a.dtype == np.float32]
    seeds = [RNG.standard_normal(o.shape).astype(np.float32) for o in outs]
    got = kernel.vjp(dim, args, seeds, backend=backend)
    assert set(got) == set(wrt) | set(got)
    for name, k in wrt.items():
        close(got[name], fd(twin, twin_args, k, [s.astype(np.float64) for s in seeds]))
    return got


def test_unary_functions(xb):
    x = f32(40, lo=-0.9, hi=0.9)
    check(C.unary, C.unary64, 40, [x, np.zeros_like(x)], {"x": 0}, [x], xb)


def test_binary_operators_select_and_two_outputs(xb):
    a, b = f32(33, lo=0.1, hi=1.0), f32(33, lo=0.1, hi=1.0)
    check(C.binary, C.binary64, 33, [a, b, np.zeros_like(a), np.zeros_like(a), 0.7], {"a": 0, "b": 1},
          [a, b, 0.7], xb)


def test_if_elif_else_on_values(xb):
    x, y = f32(64), f32(64, lo=-0.5, hi=0.5)
    check(C.branches, C.branches64, 64, [x, y, np.zeros_like(x)], {"x": 0, "y": 1}, [x, y], xb)


def test_loop_with_a_carried_product_and_a_runtime_trip_count(xb):
    x, c = f32(20), f32(6)
    for n in (0, 1, 6):
        got = check(C.horner, C.horner64, 20, [x, c, np.zeros_like(x), n], {"x": 0, "c": 1}, [x, c, n], xb)
    assert np.any(got["c"] != 0)


def test_branches_inside_a_loop_and_a_helper(xb):
    x, w = f32(32), f32(7)
    for n in (1, 7):
        check(C.looped_branch, C.looped_branch64, 32, [x, w, np.zeros_like(x), n], {"x": 0, "w": 1},
              [x, w, n], xb)


def test_neighbour_loads_accumulate_atomically(xb):
    x, w = f32(50), f32(5)
    check(C.neighbours, C.neighbours64, 50, [x, w, np.zeros_like(x)], {"x": 0, "w": 1}, [x, w], xb)
    text = C.neighbours.adjoint(x, w, x, dim=50).to_text()
    assert "atomic_compare_exchange(grad_x" in text and "atomic_compare_exchange(grad_w" in text


def test_own_index_is_a_plain_add_and_2d_launch(xb):
    img = f32(5, 7)
    check(C.grid2d, C.grid2d64, img.shape, [img, np.zeros_like(img), np.zeros(img.shape, np.int32)],
          {"img": 0}, [img], xb)
    assert "atomic" not in C.grid2d.adjoint(img, img, img.astype(np.int32), dim=img.shape).to_text()
    x = f32(40)
    assert "atomic" not in C.unary.adjoint(x, x, dim=40).to_text()


def test_a_launch_narrower_than_the_array_keeps_plain_adds_a_wider_one_atomics(ref_backend):
    img = f32(4, 8)
    ints = np.zeros(img.shape, np.int32)
    narrow = C.grid2d.adjoint(img, img, ints, dim=(4, 6)).to_text()  # 6 <= 8 columns: still one-to-one
    assert "atomic" not in narrow
    x = f32(40)
    wide = C.unary.adjoint(x, x, dim=(5, 8)).to_text()  # global_id.x repeats across rows: not one-to-one
    assert "atomic_compare_exchange(grad_x" in wide


def test_the_adjoint_is_deterministic_where_adds_are_plain(xb):
    x = f32(300)
    seeds = [RNG.standard_normal(300).astype(np.float32)]
    a = C.unary.vjp(300, [x, np.zeros_like(x)], seeds, backend=xb)["x"]
    b = C.unary.vjp(300, [x, np.zeros_like(x)], seeds, backend=xb)["x"]
    assert np.array_equal(a, b)


@pytest.mark.parametrize("kernel", R.REJECTS, ids=lambda k: k.__name__)
def test_refused_with_the_line(kernel):
    lines, first = inspect.getsourcelines(kernel.fn)
    here = first + next(k for k, ln in enumerate(lines) if "# HERE" in ln)
    x = np.ones(64, np.float32)
    args = {"hist": np.zeros(1, np.uint32)}
    inputs = [args.get(n, x) for n, _ in kernel.params]
    with pytest.raises(KernelError, match="not differentiable") as info:
        kernel.program(*inputs, dim=64)
    assert info.value.line == here, str(info.value)
    assert info.value.fix


def test_vjp_argument_errors(ref_backend):
    x = f32(8)

    @vyre.kernel
    def plain(x: vyre.In[vyre.f32], out: vyre.Out[vyre.f32]):
        out[vyre.tid()] = x[vyre.tid()]

    with pytest.raises(ArgumentTypeError, match="not differentiable"):
        plain.vjp(8, [x, x], [x], backend=ref_backend)
    with pytest.raises(InvalidArgumentError, match="one gradient per float Out"):
        C.unary.vjp(8, [x, x], [], backend=ref_backend)
    with pytest.raises(InvalidArgumentError, match="shape"):
        C.unary.vjp(8, [x, x], [np.ones(3, np.float32)], backend=ref_backend)
    with pytest.raises(ArgumentTypeError, match="bool"):
        vyre.kernel(differentiable=1)(plain.fn)
