"""Creation functions of the standard (2024.12): asarray (numpy, buffer-protocol objects, Python scalars
and nested lists, Arrays), zeros, ones, empty, full, arange, linspace, eye, the ``*_like`` forms, and the
ones built from views of existing arrays: meshgrid, tril, triu. ``device=`` (a backend) and ``dtype=``
everywhere; see _device for the default backend. Host data is uploaded once (:func:`upload`).

* ``full``/``ones`` are lazy (a scalar broadcast), so they fuse into what consumes them;
* ``meshgrid``: each output is a lazy broadcast view of one input (strides 0 along the other axes): no
  copy, it fuses into whatever consumes it;
* ``tril``/``triu``: a lazy elementwise select ``where(col - row <= k, x, 0)`` (``>= k`` for triu). The
  expression IR has no node for the element's own coordinates, so the row and column numbers are views
  (strides 0/1) of one small uploaded int32 ramp of max(rows, cols) elements; the select fuses with the
  pending work on ``x`` and with its consumer (one kernel).
"""

from __future__ import annotations

import math
import operator
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ..backends.host import storage_nbytes
from ..errors import ArgumentTypeError, InvalidArgumentError, UnsupportedDTypeError
from . import _dtypes as D
from ._array import Array
from ._array import check_array as _check
from ._device import check_backend, check_dtype_on, current_backend, same_device
from ._elementwise import greater_equal, less_equal, where
from ._kernels.dtypes import DType
from ._kernels.index_maps import Strided
from ._kernels.nodes import Map, Scalar

if TYPE_CHECKING:
    from ..backends.base import Backend

Shape = int | Sequence[int]


def _int(value: Any, what: str, name: str) -> int:
    """``value`` as an int (ints and numpy integers; bools and floats refused: ArgumentTypeError)."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise ArgumentTypeError(f"{what}: {name} must be an int, not {type(value).__name__} {value!r}",
                                fix=f"pass an int as {name}")
    return int(value)


def check_shape(shape: Any, what: str) -> tuple[int, ...]:
    """``shape`` (an int or a tuple/list of ints) as a tuple of non-negative ints: a float, a string or a bool
    is an ArgumentTypeError, a negative dimension an InvalidArgumentError."""
    if isinstance(shape, (tuple, list)):
        dims = tuple(_int(d, what, "each dimension of the shape") for d in shape)
    elif isinstance(shape, (int, np.integer)) and not isinstance(shape, (bool, np.bool_)):
        dims = (int(shape),)
    else:
        raise ArgumentTypeError(f"{what}: shape must be an int or a tuple of ints, not {type(shape).__name__} "
                                f"{shape!r}", fix=f"e.g. {what}((3, 4)) or {what}(3)")
    if any(d < 0 for d in dims):
        raise InvalidArgumentError(f"{what}: shape {shape!r} has a negative dimension",
                                   fix="dimensions are non-negative ints")
    return dims


_GUARANTEED_BYTES = 1 << 27  # WebGPU's default maxStorageBufferBindingSize: every adapter allows this much


def check_size(n: int, dtype: DType, device: Backend, what: str) -> None:
    """Refuse ``n`` elements of ``dtype`` that no buffer of ``device`` can hold (over its
    ``max_storage_buffer_bytes``, or over the 2**32 - 1 elements vyre indexes), before anything is allocated
    on the host or the device: an InvalidArgumentError."""
    if n > 2**32 - 1:
        raise InvalidArgumentError(f"{what}: {n} elements are over the 2**32 - 1 a vyre array can index",
                                   fix="create a smaller array, or split the work into several arrays")
    nbytes = storage_nbytes(D.ir_type(dtype), n)
    if nbytes <= _GUARANTEED_BYTES:
        return
    limit = int(device.capabilities().max_storage_buffer_bytes)
    if nbytes > limit:
        raise InvalidArgumentError(f"{what}: {n} elements of {dtype} take {nbytes} bytes, over the largest buffer "
                                   f"of {device!r} ({limit} bytes)",
                                   fix="create a smaller array, or split the work into several arrays")


def _real(value: Any, what: str, name: str) -> int | float:
    """A real Python number from a Python or numpy int/float (bools, complex and others: ArgumentTypeError)."""
    if isinstance(value, np.generic) and value.dtype.kind in "iuf":
        value = value.item()
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ArgumentTypeError(f"{what}: {name} must be an int or a float, not {type(value).__name__} {value!r}",
                                fix=f"pass a real number as {name}")
    return value


def _finite(value: int | float, what: str, name: str) -> None:
    if isinstance(value, float) and not math.isfinite(value):
        raise InvalidArgumentError(f"{what}: {name} must be finite, not {value!r}", fix=f"pass a finite {name}")


def upload(host: np.ndarray, device: Backend) -> Array:
    """A new materialised array holding ``host`` (a numpy array of a supported dtype) on ``device``."""
    dt = D.as_dtype(host.dtype, "asarray")
    check_dtype_on(device, dt)
    check_size(host.size, dt, device, "asarray")
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
    """Python scalars and nested lists: bool -> bool, int -> int32 (range-checked), float -> float32,
    complex -> complex64."""
    try:
        host = np.asarray(obj)
    except (ValueError, TypeError, OverflowError) as exc:  # ragged lists, ...
        raise InvalidArgumentError(f"asarray: cannot make an array of {type(obj).__name__}: {exc}",
                                   fix="pass a rectangular nested list of numbers, a numpy array or a scalar") from None
    if host.dtype == object and host.size and all(isinstance(v, int) for v in host.flat):
        raise UnsupportedDTypeError("asarray: Python ints out of int32 range",
                                    fix="pass dtype=uint32 for values up to 2**32 - 1, or floats")
    if host.dtype == object:
        raise ArgumentTypeError(f"asarray: cannot make an array of {type(obj).__name__} {obj!r:.80}",
                                fix="pass numbers (Python ints in int32 range, floats, bools), nested lists of "
                                    "them or a numpy array")
    if host.dtype.kind == "i" or host.dtype.kind == "u":
        info = np.iinfo(np.int32)
        if host.size and (host.min() < info.min or host.max() > info.max):
            raise UnsupportedDTypeError("asarray: Python ints out of int32 range",
                                        fix="pass dtype=uint32 for values up to 2**32 - 1, or floats")
        return host.astype(np.int32)
    if host.dtype.kind == "f":
        return host.astype(np.float32)
    if host.dtype.kind == "c":  # Python complex: the default complex dtype, as Python float gives float32
        return host.astype(np.complex64)
    return host


def _typed_host(obj: Any, dt: DType) -> np.ndarray:
    """Python data converted straight to ``dt`` (so int64/uint64 take Python ints beyond int32, and uint32 those
    up to 2**32 - 1); a Python int out of ``dt``'s range raises. Anything numpy cannot convert directly goes
    the default way (_default_host, then astype)."""
    try:
        return np.asarray(obj, dtype=dt)
    except OverflowError:
        info = np.iinfo(dt) if dt.kind in "iu" else None
        span = f" [{info.min}, {info.max}]" if info is not None else ""
        raise UnsupportedDTypeError(f"asarray: a Python int out of the range of {dt}{span}",
                                    fix="pass values in range, or a wider dtype (int64, uint64)") from None
    except (ValueError, TypeError):
        return _default_host(obj)


def asarray(obj: Any, /, *, dtype: Any = None, device: Backend | None = None, copy: bool | None = None) -> Array:
    """An array from ``obj``. numpy arrays and buffer-protocol objects keep their dtype (int64, uint64,
    float64 where the device has shader-int64 / shader-f64, else UnsupportedDTypeError naming the feature:
    nothing is narrowed silently); Python data gets bool/int32/float32, or ``dtype`` (Python ints out of its
    range raise). ``copy=False`` on host data raises (uploading copies)."""
    dt = None if dtype is None else D.as_dtype(dtype, "asarray")
    if copy is not None and not isinstance(copy, (bool, np.bool_)):
        raise ArgumentTypeError(f"asarray: copy must be True, False or None, not {copy!r}", fix="copy=None")
    if isinstance(obj, Array):
        if device is not None and check_backend(device, "asarray") is not obj.device:
            if copy is False:
                raise InvalidArgumentError("asarray: copy=False but the array is on another device", fix="allow a copy")
            obj = obj.to_device(device)
        arr: Array = obj
        if dt is not None and dt != arr.dtype:
            if copy is False:
                raise InvalidArgumentError("asarray: copy=False but the dtype differs", fix="allow a copy")
            return D.astype(arr, dt)
        if copy:
            return D.astype(arr, arr.dtype, copy=True)
        return arr
    if copy is False:
        raise InvalidArgumentError("asarray: copy=False is impossible for host data (it is uploaded)",
                                   fix="pass copy=None or True")
    dev = current_backend(device)
    if isinstance(obj, np.ndarray) or isinstance(obj, np.generic) or (
            not isinstance(obj, (list, tuple, bool, int, float)) and hasattr(obj, "__buffer__")):
        host = np.asarray(obj)
        if dt is None:
            check_dtype_on(dev, D.as_dtype(host.dtype, "asarray"))  # int8, complex, or 64-bit without the feature
    elif isinstance(obj, memoryview) or isinstance(obj, (bytes, bytearray)):
        host = np.asarray(memoryview(obj))
    elif dt is not None and dt != D.bool:
        host = _typed_host(obj, dt)
    else:
        host = _default_host(obj)
    if dt is not None:
        host = host.astype(dt)  # an explicit dtype is a requested conversion, not a silent one
    return upload(host, dev)


def empty(shape: Shape, *, dtype: Any = None, device: Backend | None = None) -> Array:
    """An array of ``shape`` (zero-filled: resident buffers start at zero)."""
    return zeros(shape, dtype=dtype, device=device)


def zeros(shape: Shape, *, dtype: Any = None, device: Backend | None = None) -> Array:
    s = check_shape(shape, "zeros")
    dt = D.float32 if dtype is None else D.as_dtype(dtype, "zeros")
    dev = current_backend(device)
    check_dtype_on(dev, dt)
    check_size(math.prod(s), dt, dev, "zeros")
    a = Array(s, dt, dev)
    a._allocate()
    return a


def full(shape: Shape, fill_value: bool | int | float | complex, *, dtype: Any = None,
         device: Backend | None = None) -> Array:
    """A lazy array of ``fill_value`` (a scalar broadcast: it fuses into whatever consumes it). A numpy
    scalar counts as the Python scalar of its kind."""
    s = check_shape(shape, "full")
    if isinstance(fill_value, np.generic) and fill_value.dtype.kind in "biufc":
        fill_value = fill_value.item()
    if dtype is None:
        dt = D.bool if isinstance(fill_value, bool) else D.int32 if isinstance(fill_value, int) else \
            D.complex64 if isinstance(fill_value, complex) else D.float32
    else:
        dt = D.as_dtype(dtype, "full")
    if not isinstance(fill_value, (bool, int, float, complex)):
        raise ArgumentTypeError(f"full: fill_value must be a Python scalar, not {type(fill_value).__name__}",
                                fix="pass a bool, int or float")
    D.check_scalar(fill_value, dt, "full")
    dev = current_backend(device)
    check_dtype_on(dev, dt)
    check_size(math.prod(s), dt, dev, "full")
    v: Any
    if isinstance(fill_value, complex) or dt.kind == "c":  # (a complex value with a real dtype was refused)
        v = complex(fill_value)
    else:
        v = dt.type(fill_value).item() if dt.kind != "f" else float(fill_value)
    return Array(s, dt, dev, Map("positive", (Scalar(v, dt),), dt, s))


def ones(shape: Shape, *, dtype: Any = None, device: Backend | None = None) -> Array:
    s = check_shape(shape, "ones")
    dt = D.float32 if dtype is None else D.as_dtype(dtype, "ones")
    return full(s, True if dt == D.bool else 1.0 if dt.kind == "f" else 1, dtype=dt, device=device)


def arange(start: int | float, /, stop: int | float | None = None, step: int | float = 1, *, dtype: Any = None,
           device: Backend | None = None) -> Array:
    if stop is None:
        start, stop = 0, start
    start, stop, step = (_real(v, "arange", name) for v, name in ((start, "start"), (stop, "stop"), (step, "step")))
    for v, name in ((start, "start"), (stop, "stop"), (step, "step")):
        _finite(v, "arange", name)
    if step == 0:
        raise InvalidArgumentError("arange: step must not be 0", fix="pass a non-zero step")
    floats = any(isinstance(v, float) for v in (start, stop, step))
    dt = (D.float32 if floats else D.int32) if dtype is None else D.as_dtype(dtype, "arange")
    dev = current_backend(device)
    check_dtype_on(dev, dt)
    n = max(0, math.ceil((stop - start) / step))
    check_size(n, dt, dev, "arange")  # before the host ramp: arange(0, 1e12) is refused, not allocated
    host = (start + np.arange(n, dtype=np.float64) * step)
    return upload(host.astype(dt), dev)


def linspace(start: float, stop: float, /, num: int, *, dtype: Any = None, device: Backend | None = None,
             endpoint: bool = True) -> Array:
    if isinstance(start, complex) or isinstance(stop, complex) or (dtype is not None and D.as_dtype(dtype).kind == "c"):
        return _complex_linspace(start, stop, num, dtype=dtype, device=device, endpoint=endpoint)
    start, stop = _real(start, "linspace", "start"), _real(stop, "linspace", "stop")
    _finite(start, "linspace", "start")
    _finite(stop, "linspace", "stop")
    count = _int(num, "linspace", "num")
    if count < 0:
        raise InvalidArgumentError(f"linspace: num must be non-negative, not {count}", fix="pass num >= 0")
    if not isinstance(endpoint, (bool, np.bool_)):
        raise ArgumentTypeError(f"linspace: endpoint must be a bool, not {endpoint!r}", fix="endpoint=True")
    dt = D.float32 if dtype is None else D.as_dtype(dtype, "linspace")
    if dt.kind != "f":
        raise UnsupportedDTypeError("linspace needs a float dtype", fix="dtype=float32")
    dev = current_backend(device)
    check_dtype_on(dev, dt)
    check_size(count, dt, dev, "linspace")
    host = np.linspace(start, stop, count, endpoint=bool(endpoint), dtype=np.float64).astype(dt)
    return upload(host, dev)


def _complex_linspace(start: Any, stop: Any, num: int, *, dtype: Any, device: Backend | None,
                      endpoint: bool) -> Array:
    """linspace between complex endpoints (the real and imaginary parts spaced alike; complex64)."""
    dt = D.complex64 if dtype is None else D.as_dtype(dtype, "linspace")
    if dt.kind != "c":
        raise UnsupportedDTypeError(f"linspace: complex endpoints need a complex dtype, not {dt}", fix="complex64")
    ends = []
    for v, name in ((start, "start"), (stop, "stop")):
        if isinstance(v, bool) or not isinstance(v, (int, float, complex, np.number)):
            raise ArgumentTypeError(f"linspace: {name} must be a number, not {type(v).__name__}", fix="pass a number")
        c = complex(v)
        _finite(c.real, "linspace", name)
        _finite(c.imag, "linspace", name)
        ends.append(c)
    count = _int(num, "linspace", "num")
    if count < 0:
        raise InvalidArgumentError(f"linspace: num must be non-negative, not {count}", fix="pass num >= 0")
    dev = current_backend(device)
    check_size(count, dt, dev, "linspace")
    host = np.linspace(ends[0], ends[1], count, endpoint=bool(endpoint), dtype=np.complex128).astype(dt)
    return upload(host, dev)


def eye(n_rows: int, n_cols: int | None = None, /, *, k: int = 0, dtype: Any = None,
        device: Backend | None = None) -> Array:
    rows = _int(n_rows, "eye", "n_rows")
    cols = rows if n_cols is None else _int(n_cols, "eye", "n_cols")
    diag = _int(k, "eye", "k")
    if rows < 0 or cols < 0:
        raise InvalidArgumentError(f"eye: n_rows and n_cols must be non-negative, not {rows} and {cols}",
                                   fix="pass sizes >= 0")
    dt = D.float32 if dtype is None else D.as_dtype(dtype, "eye")
    dev = current_backend(device)
    check_dtype_on(dev, dt)
    check_size(rows * cols, dt, dev, "eye")
    return upload(np.eye(rows, cols, k=diag, dtype=dt), dev)


def _like(x: Array, dtype: Any, device: Backend | None) -> tuple[Any, Backend]:
    _check(x, "*_like")
    return (x.dtype if dtype is None else dtype), (x.device if device is None else device)


def zeros_like(x: Array, /, *, dtype: Any = None, device: Backend | None = None) -> Array:
    dt, dev = _like(x, dtype, device)
    return zeros(x.shape, dtype=dt, device=dev)


def empty_like(x: Array, /, *, dtype: Any = None, device: Backend | None = None) -> Array:
    dt, dev = _like(x, dtype, device)
    return empty(x.shape, dtype=dt, device=dev)


def ones_like(x: Array, /, *, dtype: Any = None, device: Backend | None = None) -> Array:
    dt, dev = _like(x, dtype, device)
    return ones(x.shape, dtype=dt, device=dev)


def full_like(x: Array, /, fill_value: bool | int | float | complex, *, dtype: Any = None,
              device: Backend | None = None) -> Array:
    dt, dev = _like(x, dtype, device)
    return full(x.shape, fill_value, dtype=dt, device=dev)


def meshgrid(*arrays: Array, indexing: str = "xy") -> list[Array]:
    """Coordinate grids from 1-D arrays (of one dtype): with N inputs of sizes n_0..n_{N-1}, N arrays of
    shape (n_0, ..., n_{N-1}) for ``indexing='ij'``, or with the first two sizes swapped for ``'xy'``
    (Cartesian; only when N >= 2). Lazy views: nothing is copied."""
    if indexing not in ("xy", "ij"):
        raise InvalidArgumentError(f"meshgrid: indexing must be 'xy' or 'ij', got {indexing!r}", fix="indexing='ij'")
    xs = [_check(a, "meshgrid") for a in arrays]
    if not xs:
        return []
    same_device(xs, "meshgrid")
    for a in xs:
        if a.ndim != 1:
            raise InvalidArgumentError(f"meshgrid: inputs must be 1-D, got shape {list(a.shape)}",
                                       fix="reshape each input to 1-D first")
        if a.dtype != xs[0].dtype:
            raise InvalidArgumentError(f"meshgrid: inputs must share one dtype, got {xs[0].dtype} and {a.dtype}",
                                       fix="convert them with astype to one dtype")
    axis = list(range(len(xs)))  # the output axis each input runs along
    if indexing == "xy" and len(xs) >= 2:
        axis[0], axis[1] = 1, 0
    shape = [0] * len(xs)
    for k, a in enumerate(xs):
        shape[axis[k]] = a.shape[0]
    out_shape = tuple(shape)
    return [Array(out_shape, a.dtype, a.device,
                  Strided(a._node(), out_shape, 0, tuple(1 if d == axis[k] else 0 for d in range(len(xs)))))
            for k, a in enumerate(xs)]


def _triangle(value: Any, k: Any, lower: bool, what: str) -> Array:
    x = _check(value, what)
    try:
        kk = operator.index(k)
    except TypeError:
        raise ArgumentTypeError(f"{what}: k must be an int, got {k!r}", fix="e.g. k=0 (the main diagonal)") from None
    if isinstance(k, bool):
        raise ArgumentTypeError(f"{what}: k must be an int, got {k!r}", fix="e.g. k=0 (the main diagonal)")
    if x.ndim < 2:
        raise InvalidArgumentError(f"{what}: needs an array of at least 2 dimensions, got shape {list(x.shape)}",
                                   fix="reshape it to (..., M, N)")
    m, n = x.shape[-2:]
    if x.size == 0:
        return x
    # col - row lies in [-(m - 1), n - 1]: a k beyond that keeps or clears everything, and clamping it
    # keeps the scalar in int32 range without changing the result
    kk = max(-m, min(n, kk))
    ramp = upload(np.arange(max(m, n), dtype=np.int32), x.device)
    nd = x.ndim
    rows = Array(x.shape, D.int32, x.device,
                 Strided(ramp._node(), x.shape, 0, tuple(1 if d == nd - 2 else 0 for d in range(nd))))
    cols = Array(x.shape, D.int32, x.device,
                 Strided(ramp._node(), x.shape, 0, tuple(1 if d == nd - 1 else 0 for d in range(nd))))
    keep = less_equal(cols - rows, kk) if lower else greater_equal(cols - rows, kk)
    zero: bool | int | float = False if x.dtype == D.bool else 0.0 if x.dtype.kind == "f" else 0
    return where(keep, x, zero)


def tril(x: Array, /, *, k: int = 0) -> Array:
    """The lower triangle of the last two axes of ``x`` (elements with col - row <= k; the rest zero)."""
    return _triangle(x, k, True, "tril")


def triu(x: Array, /, *, k: int = 0) -> Array:
    """The upper triangle of the last two axes of ``x`` (elements with col - row >= k; the rest zero)."""
    return _triangle(x, k, False, "triu")


__all__ = ["asarray", "zeros", "ones", "empty", "full", "arange", "linspace", "eye", "zeros_like", "ones_like",
           "full_like", "empty_like", "meshgrid", "tril", "triu"]
