"""GPU vs reference parity: run a program on both backends and compare every output.

Test files import :func:`assert_parity` from here (``from parity import assert_parity``) or use
the ``assert_parity`` fixture of conftest.py, which passes the session's backends.
"""

from __future__ import annotations

import numpy as np

from vyre.ir.types import DataType

# Default tolerances by scalar type: (rtol, atol). Integers and bools are compared bit-exact.
FLOAT_TOLERANCES = {
    DataType.F32: (1e-5, 1e-6),
    DataType.F16: (1e-2, 1e-2),
}


def compare_outputs(program, got, want, *, rtol=None, atol=None) -> None:
    """Compare GPU outputs ``got`` with reference outputs ``want`` buffer by buffer (binding order)."""
    decls = program.output_buffers
    a, b = "gpu", "reference"
    assert len(got) == len(decls), f"{a} returned {len(got)} outputs, the program has {len(decls)}"
    assert len(want) == len(decls), f"{b} returned {len(want)} outputs, the program has {len(decls)}"
    for decl, g, w in zip(decls, got, want):
        where = f"program {program.name!r}, output {decl.name!r} ({decl.dtype.value})"
        g, w = np.asarray(g), np.asarray(w)
        assert g.shape == w.shape, f"{where}: shape {a}={g.shape} {b}={w.shape}"
        assert g.dtype == w.dtype == decl.dtype.numpy_dtype, (
            f"{where}: dtype {a}={g.dtype} {b}={w.dtype}, declared {decl.dtype.numpy_dtype}"
        )
        if decl.dtype.is_float:
            d_rtol, d_atol = FLOAT_TOLERANCES[decl.dtype.scalar]
            np.testing.assert_allclose(
                g.astype(np.float64), w.astype(np.float64),
                rtol=d_rtol if rtol is None else rtol, atol=d_atol if atol is None else atol,
                err_msg=f"{where}: {a} (actual) vs {b} (desired)",
            )
        else:
            np.testing.assert_array_equal(g, w, err_msg=f"{where}: {a} (actual) vs {b} (desired)")


def _snapshot(inputs) -> list[np.ndarray]:
    values = inputs.values() if isinstance(inputs, dict) else inputs if isinstance(inputs, (list, tuple)) else [inputs]
    return [np.array(v, copy=True) for v in values if v is not None]


def assert_parity(gpu, reference, program, inputs, *, rtol=None, atol=None, config=None) -> list[np.ndarray]:
    """Dispatch ``program`` on both backends, assert the outputs agree, return the GPU outputs.

    Integer and bool outputs must match bit for bit; float outputs within ``rtol``/``atol``
    (defaults: f32 1e-5/1e-6, f16 1e-2/1e-2). NaNs must sit in the same places. Neither
    backend may modify the caller's input arrays.
    """
    before = _snapshot(inputs)
    got = gpu.dispatch(program, inputs, config=config)
    want = reference.dispatch(program, inputs, config=config)
    for k, (old, new) in enumerate(zip(before, _snapshot(inputs))):
        np.testing.assert_array_equal(new, old, err_msg=f"dispatch modified input {k} of {program.name!r}")
    compare_outputs(program, got, want, rtol=rtol, atol=atol)
    return got


__all__ = ["FLOAT_TOLERANCES", "compare_outputs", "assert_parity"]
