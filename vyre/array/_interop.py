"""Interop with other WebGPU code: ``arr.wgpu_buffer`` (the ``wgpu.GPUBuffer`` holding an array) and
:func:`from_wgpu_buffer` (an array from a buffer other code wrote). With ``WgpuBackend.from_device(device)``
vyre runs on a device another library created, so both sides bind each other's buffers directly.

Usage limits:

* buffers vyre allocates have usage ``STORAGE | UNIFORM | COPY_SRC | COPY_DST``: bindable as storage or
  uniform buffers and copyable both ways; not ``VERTEX``/``INDEX``/``MAP_READ`` (copy into a buffer of
  yours for those);
* the layout is row-major, C order, with vyre's storage types: bool as one u32 word per element, float16
  packed two per word; the buffer's ``size`` may exceed ``x.nbytes`` (rounded up to vyre's alignment);
* the buffer belongs to the array: it is valid while the array is alive and is destroyed when it is
  collected; in-place operators (``x += 1``) give the array a new buffer, so ask again after them;
* writes made by other code to an array's buffer are seen by vyre (no copy is cached), but arrays are
  meant to be immutable: expressions recorded earlier read the buffer when they are evaluated;
* ``from_wgpu_buffer`` copies on the device (one command, no host round trip): later writes to the source
  buffer do not change the array. The source needs ``COPY_SRC`` and must belong to the backend's device.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ..backends.host import storage_nbytes
from ..errors import ArgumentTypeError
from . import _dtypes as D
from ._array import Array
from ._creation import asarray, check_shape, check_size
from ._device import check_dtype_on, current_backend

if TYPE_CHECKING:
    from ..backends.base import Backend


def _wgpu_backend(device: Backend, what: str) -> Any:
    from ..backends.wgpu.backend import WgpuBackend  # why: imports wgpu; loaded on first use

    if not isinstance(device, WgpuBackend):
        raise ArgumentTypeError(f"{what}: the array lives on {device!r}, which has no wgpu buffers",
                                fix="create the array on a vyre.WgpuBackend (vyre.use(backend) or device=backend)")
    return device


def wgpu_buffer(x: Array, /) -> Any:
    """The ``wgpu.GPUBuffer`` holding ``x`` (a pending expression is evaluated first). See the module
    docstring for its usage flags, layout and lifetime."""
    if not isinstance(x, Array):
        raise ArgumentTypeError(f"wgpu_buffer takes a vyre array, got {type(x).__name__}",
                                fix="pass an array made by vyre.array (asarray, zeros, ...)")
    backend = _wgpu_backend(x.device, "wgpu_buffer")
    from ..backends.wgpu.interop import buffer_of  # why: imports wgpu; loaded on first use
    return buffer_of(backend, x.handle)


def from_wgpu_buffer(buffer: Any, /, shape: Sequence[int] | int, dtype: Any, *, device: Backend | None = None) -> Array:
    """A new array of ``shape`` and ``dtype`` holding a copy of the first bytes of ``buffer`` (a
    ``wgpu.GPUBuffer`` of ``device``'s wgpu device, with ``COPY_SRC``; vyre's storage layout: bool as u32
    words). The copy happens on the device, ordered after work already submitted to its queue."""
    dt = D.as_dtype(dtype, "from_wgpu_buffer")
    backend = _wgpu_backend(current_backend(device), "from_wgpu_buffer")
    dims = check_shape(shape, "from_wgpu_buffer")
    check_dtype_on(backend, dt)
    n = math.prod(dims)
    check_size(n, dt, backend, "from_wgpu_buffer")
    out = Array(dims, dt, backend)
    if n == 0:
        return out
    h = out._allocate()
    from ..backends.wgpu.interop import copy_into  # why: imports wgpu; loaded on first use
    copy_into(backend, buffer, h, storage_nbytes(D.ir_type(dt), n))
    return out


def from_dlpack(x: Any, /, *, device: Any = None, copy: bool | None = None) -> Array:
    """An array from any DLPack producer whose data numpy can read (a CPU tensor of torch, jax, cupy's host
    arrays, numpy itself...): read through ``numpy.from_dlpack`` and uploaded to ``device`` (the current
    backend by default). The upload copies, so ``copy=False`` raises BufferError."""
    if copy is False:
        raise BufferError("from_dlpack: uploading to a WebGPU device always copies (pass copy=True or None)")
    try:
        host = np.from_dlpack(x)
    except (AttributeError, TypeError, BufferError, RuntimeError) as exc:
        raise ArgumentTypeError(f"from_dlpack: cannot read {type(x).__name__} through DLPack on the host: {exc}",
                                fix="move the tensor to the CPU first (e.g. t.cpu()), or pass a numpy array") \
            from None
    return asarray(host, device=device)


__all__ = ["wgpu_buffer", "from_wgpu_buffer", "from_dlpack"]
