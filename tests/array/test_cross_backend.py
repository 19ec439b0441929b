"""One realistic array program run on the ReferenceBackend (the numpy interpreter, the oracle) and on the
WgpuBackend gives the same answers: integers bit-exact; floats within ``RTOL``/``ATOL`` for elementwise
work (the same IEEE operations, but the GPU may contract a*b+c into one rounding) and ``RTOL_ACC`` for
reductions and matmul (the summation order differs). Each part is also checked against numpy, so a bug
both backends share cannot pass.

The program, part by part: creation (arange, linspace, asarray, ones, reshape); elementwise work with
broadcasting and Python scalars, in float32 and int32; reductions (sum, mean, max, argmax); a matmul;
sorting and searching (sort, argsort, searchsorted, nonzero); indexing (slices with steps, negative steps,
integers, None, Ellipsis, take, a boolean mask, an integer array with a slice).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import vyre
import vyre.array as xp

RTOL, ATOL = 1e-6, 1e-6  # elementwise float32 (values of order 1..100)
RTOL_ACC, ATOL_ACC = 1e-5, 1e-4  # sums of up to 48 terms, 8-term dot products


def _base(lib: Any) -> dict[str, Any]:
    """Creation and elementwise work; ``lib`` is vyre.array or numpy (the same code runs on both)."""
    x = lib.reshape(lib.arange(48, dtype=lib.float32), (6, 8)) / 7.0
    w = lib.linspace(-1.0, 1.0, 8, dtype=lib.float32)
    col = lib.asarray([[1.0], [2.0], [3.0], [4.0], [5.0], [6.0]], dtype=lib.float32)
    y = (x * w - col) ** 2 + 0.5  # (6, 8) * (8,) - (6, 1): broadcasting both ways, Python scalars
    y = lib.where(y > 10.0, lib.sqrt(y), y)
    k = lib.reshape(lib.arange(48, dtype=lib.int32), (6, 8))
    ki = (k * 7 + 3) % 11 - 5  # int32 with negatives
    return {"x": x, "w": w, "y": y, "ki": ki, "ones": lib.ones((8, 3), dtype=lib.float32)}


def _elementwise(lib: Any) -> dict[str, Any]:
    b = _base(lib)
    return {"y": b["y"], "ki": b["ki"], "bits": (b["ki"] & 6) | 1, "cmp": b["y"] > b["x"]}


def _reductions(lib: Any) -> dict[str, Any]:
    b = _base(lib)
    return {"rowsum": lib.sum(b["y"], axis=1), "colmean": lib.mean(b["y"], axis=0), "total": lib.sum(b["ki"]),
            "max": lib.max(b["ki"], axis=-1), "argmax": lib.argmax(b["y"], axis=1)}


def _matmul(lib: Any) -> dict[str, Any]:
    b = _base(lib)
    m = lib.matmul(b["y"], b["ones"] * 0.25 + lib.reshape(b["w"], (8, 1)))
    return {"mm": m, "gram": b["x"] @ lib.permute_dims(b["x"], (1, 0))}


def _sorting(lib: Any) -> dict[str, Any]:
    b = _base(lib)
    flat = lib.sort(lib.reshape(b["ki"], (48,)))
    rows, cols = lib.nonzero(b["ki"] > 2)
    return {"sorted": lib.sort(b["ki"], axis=1), "desc": lib.sort(b["y"], axis=0, descending=True),
            "argsort": lib.argsort(b["ki"], axis=-1, stable=True),
            "search": lib.searchsorted(flat, lib.asarray([-5, 0, 3, 9], dtype=lib.int32), side="right"),
            "nz_rows": rows, "nz_cols": cols}


def _indexing(lib: Any) -> dict[str, Any]:
    b = _base(lib)
    y, ki = b["y"], b["ki"]
    return {"step": y[1:5:2, ::-1], "row": ki[-2], "col": y[..., 3], "newaxis": y[None, 2, 1:3],
            "take": lib.take(ki, lib.asarray([4, 0, 4], dtype=lib.int32), axis=0), "mask": y[y > 2.0],
            "gather": ki[lib.asarray([5, 1], dtype=lib.int32), 2:6]}


def _chain(lib: Any) -> dict[str, Any]:
    """All of it in one flow: results of each part feed the next."""
    b = _base(lib)
    s = lib.sort(b["y"], axis=1)
    m = s @ (b["ones"] + lib.reshape(b["w"], (8, 1)))
    top = m[::-1, 1:]
    return {"top": top, "score": lib.sum(top * 2.0 - 1.0, axis=0), "best": lib.argmax(top, axis=0)}


class _Numpy:
    """numpy under the standard's names where numpy differs (sort/argsort take ``descending``)."""

    def __getattr__(self, name: str) -> Any:
        return getattr(np, name)

    @staticmethod
    def sort(x: np.ndarray, /, *, axis: int = -1, descending: bool = False, stable: bool = True) -> np.ndarray:
        out = np.sort(x, axis=axis, stable=True)
        return np.flip(out, axis=axis) if descending else out

    @staticmethod
    def argsort(x: np.ndarray, /, *, axis: int = -1, descending: bool = False, stable: bool = True) -> np.ndarray:
        assert not descending  # a stable descending argsort is not a flipped ascending one
        return np.argsort(x, axis=axis, stable=True)


# part -> (program, the namespace functions it needs, the outputs that are accumulations)
PARTS: dict[str, tuple[Callable[[Any], dict[str, Any]], tuple[str, ...], set[str]]] = {
    "elementwise": (_elementwise, ("where", "sqrt", "reshape", "linspace"), set()),
    "reductions": (_reductions, ("sum", "mean", "max", "argmax"), {"rowsum", "colmean"}),
    "matmul": (_matmul, ("matmul", "permute_dims"), {"mm", "gram"}),
    "sorting": (_sorting, ("sort", "argsort", "searchsorted", "nonzero"), set()),
    "indexing": (_indexing, ("take",), set()),
    "chain": (_chain, ("sort", "sum", "argmax", "matmul"), {"top", "score"}),
}


def _run(backend: Any, program: Callable[[Any], dict[str, Any]]) -> dict[str, np.ndarray]:
    with vyre.use(backend):
        out = program(xp)
        for v in out.values():
            assert v.device is backend
        return {k: np.asarray(v) for k, v in out.items()}


def _same(name: str, got: np.ndarray, want: np.ndarray, accumulated: bool, what: str) -> None:
    assert got.shape == want.shape and got.dtype == want.dtype, (what, name, got.shape, want.shape, got.dtype)
    if got.dtype.kind in "biu":
        np.testing.assert_array_equal(got, want, err_msg=f"{what}: {name}")
    else:
        rtol, atol = (RTOL_ACC, ATOL_ACC) if accumulated else (RTOL, ATOL)
        np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, err_msg=f"{what}: {name}")


@pytest.mark.parametrize("part", list(PARTS))
def test_same_program_same_answers(part, ref_backend, gpu):
    program, needs, accumulated = PARTS[part]
    assert all(hasattr(xp, f) for f in needs), [f for f in needs if not hasattr(xp, f)]
    ref = _run(ref_backend, program)
    dev = _run(gpu, program)
    host = {k: np.asarray(v) for k, v in program(_Numpy()).items()}
    assert set(ref) == set(dev) == set(host)
    for name in ref:
        # the standard's results: sum of int32 is int32, argmax/argsort give the default index dtype
        # (int32 here: no 64-bit types), the rest keeps numpy's dtype
        want = host[name] if host[name].dtype.kind not in "iu" else host[name].astype(ref[name].dtype)
        _same(name, ref[name], want, name in accumulated, "reference vs numpy")
        _same(name, dev[name], ref[name], name in accumulated, "wgpu vs reference")
