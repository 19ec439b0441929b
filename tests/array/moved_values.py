"""Helpers of the tests whose values are moved, never computed (masked and integer-array assignment):
random data of every dtype with the bits that must survive, and a bit-exact comparison."""

from __future__ import annotations

import numpy as np

from vyre import array_api as xp


def same(got: xp.Array, want: np.ndarray) -> None:
    """``got`` equals ``want`` bit for bit (NaN payloads, -0.0), with its dtype and shape."""
    if want.size == 0:
        assert got.shape == want.shape and got.dtype == want.dtype
        return
    g = np.asarray(got)
    assert g.dtype == want.dtype and g.shape == want.shape, (g.dtype, g.shape, want.dtype, want.shape)
    raw = [np.ascontiguousarray(a).reshape(-1).view(np.uint8) for a in (g, want)]
    np.testing.assert_array_equal(raw[0], raw[1])


def data(rng: np.random.Generator, shape: tuple[int, ...], dt: str) -> np.ndarray:
    """Random values of ``dt`` over its whole range (floats with signed zeros; complex: normal parts)."""
    if dt == "bool":
        return rng.random(shape) < 0.5
    if dt.startswith("complex"):
        return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dt)
    if dt.startswith("float"):
        v = rng.standard_normal(shape).astype(dt)
        v.flat[::7] = -0.0  # signed zeros travel bit-exact
        return v
    info = np.iinfo(dt)
    return rng.integers(info.min, info.max, size=shape, dtype=dt, endpoint=True)
