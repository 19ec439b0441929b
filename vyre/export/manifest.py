"""The manifest of an exported program: everything another WebGPU runtime needs to run its WGSL.

:func:`build_manifest` turns a program and its lowering into a JSON-ready dict (see
docs/export.md for the fields). It restates vyre's host layout (``vyre/backends/host.py``) and
grid rule (``host.default_grid``, ``host.fold_grid``, ``host.params_words``) as data, so a runtime
that never imports vyre (the exported JavaScript module, or any other) can follow them.
"""

from __future__ import annotations

import math
from typing import Any

from ..backends import host
from ..backends.grid import GridFacts
from ..ir.program import Program
from ..ir.types import Access, DataType
from ..lower import PARAMS_BINDING, PARAMS_GROUP, PARAMS_NAME, LoweredProgram
from ..lower.layout import uniform_binding_nbytes, uniform_layout

FORMAT = "vyre-export"
FORMAT_VERSION = 1

#: The JavaScript TypedArray of each storage scalar (f16 travels as raw bits in a Uint16Array).
TYPED_ARRAY = {DataType.U32: "Uint32Array", DataType.I32: "Int32Array", DataType.F32: "Float32Array",
               DataType.F16: "Uint16Array"}
#: What the caller passes / gets back per scalar (bool: 0/1 bytes; f16: Float32Array values, see docs).
HOST_ARRAY = {DataType.U32: "Uint32Array", DataType.I32: "Int32Array", DataType.F32: "Float32Array",
              DataType.F16: "Float32Array", DataType.BOOL: "Uint8Array"}

_BINDING_TYPE = {Access.READ: "read-only-storage", Access.READ_WRITE: "storage", Access.WRITE: "storage",
                 Access.UNIFORM: "uniform"}

#: WebGPU's default limits (the spec's), which a device has unless it asks for more.
DEFAULT_LIMITS = {
    "maxBindingsPerBindGroup": 1000,
    "maxStorageBuffersPerShaderStage": 8,
    "maxUniformBuffersPerShaderStage": 12,
    "maxComputeWorkgroupSizeX": 256,
    "maxComputeWorkgroupSizeY": 256,
    "maxComputeWorkgroupSizeZ": 64,
    "maxComputeInvocationsPerWorkgroup": 256,
    "maxComputeWorkgroupStorageSize": 16384,
    "maxComputeWorkgroupsPerDimension": 65535,
}


def _wgsl_type(dtype: DataType, access: Access, count: int | None, atomic: bool) -> str:
    """The type the WGSL declares for a buffer (what ``vyre/lower/state.py`` writes)."""
    stored = DataType.U32 if dtype is DataType.BOOL else dtype
    if access is Access.UNIFORM:
        row, rows, _ = uniform_layout(stored, count or 0)
        return f"array<{row}, {rows}>"
    element = f"atomic<{stored.value}>" if atomic else stored.value
    return f"array<{element}>"


def _buffer(decl: Any, index: int, atomic: bool) -> dict[str, Any]:
    d: DataType = decl.dtype
    storage = d.storage_scalar
    entry: dict[str, Any] = {
        "name": decl.name,
        "index": index,
        "group": 0,
        "binding": decl.binding,
        "dtype": d.value,
        "access": decl.access.value,
        "binding_type": _BINDING_TYPE[decl.access],
        "input": decl.access.readable,
        "output": decl.access.writable,
        "atomic": atomic,
        "count": decl.count,
        "wgsl_type": _wgsl_type(d, decl.access, decl.count, atomic),
        "host": {"scalar": d.scalar.value, "lanes": d.lanes, "array": HOST_ARRAY[d.scalar]},
        "storage": {
            "scalar": storage.value,
            "lanes": d.storage_lanes,
            "scalar_bytes": d.element_nbytes // d.storage_lanes,
            "element_bytes": d.element_nbytes,
            "array": TYPED_ARRAY[storage],
        },
    }
    if decl.access is Access.UNIFORM:
        entry["binding_bytes"] = uniform_binding_nbytes(decl)
    return entry


def _grid(program: Program) -> dict[str, Any]:
    """The default-grid rule of ``host.default_grid`` for this program, as data."""
    lay = GridFacts(program)
    decls = program.sorted_buffers
    inv = program.workgroup_invocations
    rule: dict[str, Any] = {
        "invocations_per_workgroup": inv,
        "max_workgroups_per_dimension": host.MAX_WORKGROUPS_PER_DIM,
        "grid_from": program.grid_from,
        "needs_explicit_grid": None,
        "refuse_if_larger": [],
    }
    if lay.grid_from is not None:
        rule.update(default="count", buffer=decls[lay.grid_from].name)
    elif not decls:
        rule.update(default="fixed", buffer=None, fixed=[1, 1, 1])
    else:
        basis = next((d for d in decls if d.access.writable), decls[0])
        rule.update(default="count", buffer=basis.name)
        if lay.multi_dim is not None:
            rule.update(default="explicit", needs_explicit_grid=lay.multi_dim)
        else:
            rule["refuse_if_larger"] = [d.name for d in decls
                                        if d.access.readable and d.access is not Access.UNIFORM and d is not basis]
    return rule


def _params(program: Program) -> dict[str, Any]:
    decls = program.sorted_buffers
    rows = max(1, math.ceil(len(decls) / 4))
    words = [{"word": 0, "value": "grid.x"}, {"word": 1, "value": "grid.y"}, {"word": 2, "value": "grid.z"},
             {"word": 3, "value": "min(grid.x * grid.y * grid.z, 4294967295)"}]
    words += [{"word": 4 + k, "value": f"count({d.name})"} for k, d in enumerate(decls)]
    return {
        "group": PARAMS_GROUP,
        "binding": PARAMS_BINDING,
        "name": PARAMS_NAME,
        "wgsl_type": f"struct VyreParams {{ grid: vec4<u32>, lens: array<vec4<u32>, {rows}> }}",
        "words": 4 + 4 * rows,
        "bytes": 16 * (1 + rows),
        "layout": words,
    }


def _limits(program: Program, lowered: LoweredProgram) -> dict[str, int]:
    """The device limits the program needs beyond WebGPU's defaults (name -> least value)."""
    decls = program.sorted_buffers
    wx, wy, wz = program.workgroup_size
    shared = sum(-(-w.count * w.dtype.element_nbytes // 16) * 16 for w in program.workgroup)
    need = {
        "maxBindingsPerBindGroup": max((d.binding for d in decls), default=0) + 1,
        "maxStorageBuffersPerShaderStage": sum(d.access is not Access.UNIFORM for d in decls),
        "maxUniformBuffersPerShaderStage": sum(d.access is Access.UNIFORM for d in decls) + 1,
        "maxComputeWorkgroupSizeX": wx,
        "maxComputeWorkgroupSizeY": wy,
        "maxComputeWorkgroupSizeZ": wz,
        "maxComputeInvocationsPerWorkgroup": wx * wy * wz,
        "maxComputeWorkgroupStorageSize": shared,
    }
    return {k: v for k, v in need.items() if v > DEFAULT_LIMITS[k]}


def build_manifest(program: Program, lowered: LoweredProgram, name: str) -> dict[str, Any]:
    """The manifest of ``program`` exported as ``name`` (``name.wgsl``, ``name.js``)."""
    atomics = {b.name for b in lowered.bindings if b.atomic and b.group == 0}
    decls = program.sorted_buffers
    buffers = [_buffer(d, k, d.name in atomics) for k, d in enumerate(decls)]
    first_input = next((d.name for d in decls if d.access.readable), None)
    for b, d in zip(buffers, decls):
        if not d.access.readable and d.count is None:
            # a runtime-sized write buffer: options.counts[name], else the first input's element count
            b["count_from"] = first_input
    return {
        "format": FORMAT,
        "version": FORMAT_VERSION,
        "name": name,
        "program": program.name,
        "fingerprint": lowered.fingerprint,
        "lowering_version": lowered.lowering_version,
        "wgsl": f"{name}.wgsl",
        "module": f"{name}.js",
        "entry_point": lowered.entry_point,
        "workgroup_size": list(lowered.workgroup_size),
        "features": sorted(lowered.features),
        "limits": _limits(program, lowered),
        "buffers": buffers,
        "params": _params(program),
        "grid": _grid(program),
    }


__all__ = ["FORMAT", "FORMAT_VERSION", "build_manifest", "DEFAULT_LIMITS"]
