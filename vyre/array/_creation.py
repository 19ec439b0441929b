"""Creation functions of the standard: asarray (numpy, buffer-protocol objects, Python scalars and nested
lists, Arrays), zeros, ones, empty, full, arange, linspace, eye and the ``*_like`` forms. ``device=`` (a
backend) and ``dtype=`` everywhere; see _device for the default backend. Host data is uploaded once;
``full``/``ones`` are lazy (a scalar broadcast), so they fuse into what consumes them."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..errors import DispatchError, UnsupportedDTypeError
from . import _dtypes as D
from ._array import Array
from ._device import check_dtype_on, current_backend
from ._expr import Map, Scalar

Shape = int | Sequence[int]


def _shape(shape: Shape) -> tuple[int, ...]:
    dims = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
    if not all(isinstance(d, (int, np.integer)) and not isinstance(d, bool) and d >= 0 for d in dims):
        raise DispatchError(f"shape {shape!r} must be non-negative ints", fix="e.g. zeros((3, 4))")
    return tuple(int(d) for d in dims)


def upload(host: np.ndarray, device: Any) -> Array:
    """A new materialised array holding ``host`` (a numpy array of a supported dtype) on ``device``."""
    dt = D.as_dtype(host.dtype, "asarray")
    check_dtype_on(device, dt)
    a = Array(host.shape, dt, device)
    h = a._allocate()
    if host.size:
        flat = np.ascontiguousarray(host).reshape(-1)
        if dt == D.bool:
            flat = flat.astype(np.uint32)
        raw = flat.view(np.uint8)
        if raw.nbytes % 4:
            raw = np.concatenate([raw, np.zeros(4 - raw.nbytes % 4, np.uint8)])
        device.upload_resident(h, raw)
    return a


def _default_host(obj: Any) -> np.ndarray:
    """Python scalars and nested lists: bool -> bool, int -> int32 (range-checked), float -> float32."""
    host = np.asarray(obj)
    if host.dtype.kind == "i" or host.dtype.kind == "u":
        info = np.iinfo(np.int32)
        if host.size and (host.min() < info.min or host.max() > info.max):
            raise UnsupportedDTypeError("asarray: Python ints out of int32 range",
                                        fix="pass dtype=uint32 for values up to 2**32 - 1, or floats")
        return host.astype(np.int32)
    if host.dtype.kind == "f":
        return host.astype(np.float32)
    return host


def asarray(obj: Any, /, *, dtype: Any = None, device: Any = None, copy: bool | None = None) -> Array:
    """An array from ``obj``. numpy arrays and buffer-protocol objects keep their dtype (int64, uint64,
    float64 raise UnsupportedDTypeError: convert with ``.astype`` first, nothing is narrowed silently);
    Python data gets bool/int32/float32. ``copy=False`` on host data raises (uploading copies)."""
    dt = None if dtype is None else D.as_dtype(dtype, "asarray")
    if isinstance(obj, Array):
        if device is not None and device is not obj.device:
            if copy is False:
                raise DispatchError("asarray: copy=False but the array is on another device", fix="allow a copy")
            obj = obj.to_device(device)
        if dt is not None and dt != obj.dtype:
            if copy is False:
                raise DispatchError("asarray: copy=False but the dtype differs", fix="allow a copy")
            from ._functions import astype
            return astype(obj, dt)
        if copy:
            from ._functions import astype
            return astype(obj, obj.dtype, copy=True)
        return obj
    if copy is False:
        raise DispatchError("asarray: copy=False is impossible for host data (it is uploaded)",
                            fix="pass copy=None or True")
    dev = current_backend(device)
    if isinstance(obj, np.ndarray) or isinstance(obj, np.generic) or (
            not isinstance(obj, (list, tuple, bool, int, float)) and hasattr(obj, "__buffer__")):
        host = np.asarray(obj)
        if dt is None:
            D.as_dtype(host.dtype, "asarray")  # 64-bit input: a typed error with the fix
    elif isinstance(obj, memoryview) or isinstance(obj, (bytes, bytearray)):
        host = np.asarray(memoryview(obj))
    else:
        host = _default_host(obj)
    if dt is not None:
        host = host.astype(dt)  # an explicit dtype is a requested conversion, not a silent one
    return upload(host, dev)


def empty(shape: Shape, *, dtype: Any = None, device: Any = None) -> Array:
    """An array of ``shape`` (zero-filled: resident buffers start at zero)."""
    return zeros(shape, dtype=dtype, device=device)


def zeros(shape: Shape, *, dtype: Any = None, device: Any = None) -> Array:
    dt = D.float32 if dtype is None else D.as_dtype(dtype, "zeros")
    dev = current_backend(device)
    check_dtype_on(dev, dt)
    a = Array(_shape(shape), dt, dev)
    a._allocate()
    return a


def full(shape: Shape, fill_value: bool | int | float, *, dtype: Any = None, device: Any = None) -> Array:
    """A lazy array of ``fill_value`` (a scalar broadcast: it fuses into whatever consumes it)."""
    if dtype is None:
        dt = D.bool if isinstance(fill_value, bool) else D.int32 if isinstance(fill_value, int) else D.float32
    else:
        dt = D.as_dtype(dtype, "full")
    if not isinstance(fill_value, (bool, int, float)):
        raise DispatchError(f"full: fill_value must be a Python scalar, not {type(fill_value).__name__}",
                            fix="pass a bool, int or float")
    D.check_scalar(fill_value, dt, "full")
    dev = current_backend(device)
    check_dtype_on(dev, dt)
    s = _shape(shape)
    v = dt.type(fill_value).item() if dt.kind != "f" else float(fill_value)
    return Array(s, dt, dev, Map("positive", (Scalar(v, dt),), dt, s))


def ones(shape: Shape, *, dtype: Any = None, device: Any = None) -> Array:
    dt = D.float32 if dtype is None else D.as_dtype(dtype, "ones")
    return full(shape, True if dt == D.bool else 1.0 if dt.kind == "f" else 1, dtype=dt, device=device)


def arange(start: int | float, /, stop: int | float | None = None, step: int | float = 1, *, dtype: Any = None,
           device: Any = None) -> Array:
    if stop is None:
        start, stop = 0, start
    if step == 0:
        raise DispatchError("arange: step must not be 0", fix="pass a non-zero step")
    floats = any(isinstance(v, float) for v in (start, stop, step))
    dt = (D.float32 if floats else D.int32) if dtype is None else D.as_dtype(dtype, "arange")
    n = max(0, math.ceil((stop - start) / step))
    host = (start + np.arange(n, dtype=np.float64) * step)
    return upload(host.astype(dt), current_backend(device))


def linspace(start: float, stop: float, /, num: int, *, dtype: Any = None, device: Any = None,
             endpoint: bool = True) -> Array:
    dt = D.float32 if dtype is None else D.as_dtype(dtype, "linspace")
    if dt.kind != "f":
        raise UnsupportedDTypeError("linspace needs a float dtype", fix="dtype=float32")
    host = np.linspace(start, stop, num, endpoint=endpoint, dtype=np.float64).astype(dt)
    return upload(host, current_backend(device))


def eye(n_rows: int, n_cols: int | None = None, /, *, k: int = 0, dtype: Any = None, device: Any = None) -> Array:
    dt = D.float32 if dtype is None else D.as_dtype(dtype, "eye")
    return upload(np.eye(n_rows, n_cols, k=k, dtype=dt), current_backend(device))


def _like(x: Array, dtype: Any, device: Any) -> tuple[Any, Any]:
    return (x.dtype if dtype is None else dtype), (x.device if device is None else device)


def zeros_like(x: Array, /, *, dtype: Any = None, device: Any = None) -> Array:
    dt, dev = _like(x, dtype, device)
    return zeros(x.shape, dtype=dt, device=dev)


def empty_like(x: Array, /, *, dtype: Any = None, device: Any = None) -> Array:
    dt, dev = _like(x, dtype, device)
    return empty(x.shape, dtype=dt, device=dev)


def ones_like(x: Array, /, *, dtype: Any = None, device: Any = None) -> Array:
    dt, dev = _like(x, dtype, device)
    return ones(x.shape, dtype=dt, device=dev)


def full_like(x: Array, /, fill_value: bool | int | float, *, dtype: Any = None, device: Any = None) -> Array:
    dt, dev = _like(x, dtype, device)
    return full(x.shape, fill_value, dtype=dt, device=dev)


__all__ = ["asarray", "zeros", "ones", "empty", "full", "arange", "linspace", "eye", "zeros_like", "ones_like",
           "full_like", "empty_like", "upload"]
