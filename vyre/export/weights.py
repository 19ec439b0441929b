"""A unit's constants in a safetensors file beside the module (a traced function's weights).

Why safetensors rather than a raw ``.bin`` with offsets only in the manifest: the file describes itself
(each tensor's name, dtype, shape and byte range in an 8-byte-length-prefixed JSON header), Python reads
it back with ``safetensors.numpy.load_file`` (vyre.nn's checkpoints use the same format, so the package is
already a dependency), and a JavaScript reader needs no parser: the manifest gives every constant's
absolute byte ``offset`` and ``bytes`` in the file, so the module slices it (and checks the file's
length and sha256 against the manifest).

Each tensor holds the constant's **storage bytes**, exactly what the GPU buffer holds
(vyre/backends/host.py's layout): f32/i32/u32 as they are, f16 as float16, bool as u32 words (0/1),
``vec3`` padded to 4 components. A tensor's shape is the array's shape where the constant is a
closed-over array of one-component elements, else ``[count]`` or ``[count, lanes]``.
"""

from __future__ import annotations

import hashlib
import json
import struct
from typing import Any

import numpy as np

from ..backends.host import host_to_storage
from ..ir.program import BufferDecl
from ..ir.types import Access, DataType
from .unit import Unit, UnitBuffer

_NUMPY = {DataType.F32: np.float32, DataType.I32: np.int32, DataType.U32: np.uint32, DataType.F16: np.float16}


def storage_tensor(b: UnitBuffer) -> np.ndarray:
    """The storage bytes of constant ``b`` as a typed array (see the module docstring)."""
    decl = BufferDecl(name=b.name, binding=0, dtype=b.dtype, access=Access.READ, count=b.count)
    raw, count = host_to_storage(decl, b.value)
    scalar = b.dtype.storage_scalar
    flat = np.frombuffer(np.ascontiguousarray(raw).reshape(-1).view(np.uint8).tobytes(), _NUMPY[scalar])
    lanes = b.dtype.storage_lanes
    flat = flat[:count * lanes]
    if lanes == 1 and b.shape and int(np.prod(b.shape)) == flat.size:
        return flat.reshape(b.shape)
    return flat.reshape(count, lanes) if lanes > 1 else flat


def weights_file(unit: Unit, file: str) -> tuple[bytes, dict[str, dict[str, Any]], dict[str, Any]]:
    """(the safetensors bytes of ``unit``'s constants, each constant's manifest ``value``, the manifest's
    ``weights`` entry) for a file named ``file``."""
    from safetensors.numpy import save  # why: import time (only exports with a weights file need it)

    tensors = {b.name: storage_tensor(b) for b in unit.buffers.values() if b.role == "constant"}
    # one metadata key: safetensors writes a map of several in no fixed order (the bytes would differ run to run)
    data = save(tensors, metadata={"format": "vyre-export"}) if tensors else b""
    values: dict[str, dict[str, Any]] = {}
    if data:
        (n,) = struct.unpack("<Q", data[:8])
        header = json.loads(data[8:8 + n])
        for name, t in header.items():
            if name == "__metadata__":
                continue
            lo, hi = t["data_offsets"]
            b = unit.buffers[name]
            values[name] = {"count": b.count, "file": file, "key": name, "offset": 8 + n + lo, "bytes": hi - lo,
                            "dtype": t["dtype"], "shape": t["shape"]}
    entry = {"file": file, "format": "safetensors", "bytes": len(data), "sha256": hashlib.sha256(data).hexdigest(),
             "tensors": len(values)}
    return data, values, entry


__all__ = ["weights_file", "storage_tensor"]
