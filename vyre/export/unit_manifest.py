"""The manifest of an exported :class:`~vyre.export.unit.Unit` (op call, kernel launch, array expression).

Same conventions as a single program's manifest (vyre/export/manifest.py: host and storage layout,
params uniform, WebGPU limits), over named unit buffers and a list of steps. Every uniform word is
documented by name: a ``words`` buffer's layout (a kernel's ``kparams``: ``dim[k]`` then each scalar
parameter), a constant's scalar words (a fused expression's ``in_p``), and each step's params words
(``grid.x`` .. ``count(buffer)``). A traced function's constants may live in a weights file beside
the module (``value.file``, ``offset``, ``bytes``: vyre/export/weights.py). See docs/export.md.
"""

from __future__ import annotations

import base64
from typing import Any

from ..backends.host import host_to_storage
from ..ir.program import BufferDecl
from ..ir.types import Access
from ..lower import LoweredProgram
from .manifest import FORMAT, FORMAT_VERSION, HOST_ARRAY, TYPED_ARRAY, _buffer, _limits, _params
from .unit import Unit, UnitBuffer


def _layout(b: UnitBuffer) -> dict[str, Any]:
    d = b.dtype
    storage = d.storage_scalar
    return {"host": {"scalar": d.scalar.value, "lanes": d.lanes, "array": HOST_ARRAY[d.scalar]},
            "storage": {"scalar": storage.value, "lanes": d.storage_lanes,
                        "scalar_bytes": d.element_nbytes // d.storage_lanes, "element_bytes": d.element_nbytes,
                        "array": TYPED_ARRAY[storage]}}


def _constant(b: UnitBuffer) -> dict[str, Any]:
    decl = BufferDecl(name=b.name, binding=0, dtype=b.dtype, access=Access.READ, count=b.count)
    raw, count = host_to_storage(decl, b.value)
    return {"count": count, "base64": base64.b64encode(raw.tobytes()).decode("ascii")}


def build_unit_manifest(unit: Unit, lowered: list[LoweredProgram], shader_of: list[int], name: str,
                        wgsl_files: list[str], in_file: dict[str, dict[str, Any]] | None = None) -> dict[str, Any]:
    """The manifest of ``unit`` exported as ``name``; ``lowered[k]`` is the lowering of distinct program k,
    ``shader_of[i]`` the distinct program of step i and ``wgsl_files[k]`` its file name; ``in_file``: the
    ``value`` of each constant kept in a weights file (vyre/export/weights.py), else inline base64."""
    uses: dict[str, list[dict[str, Any]]] = {n: [] for n in unit.buffers}
    steps: list[dict[str, Any]] = []
    touched = {n for n, b in unit.buffers.items() if b.role in ("input", "inout", "constant", "words")}
    limits: dict[str, int] = {}
    features: set[str] = set()
    for i, (s, k) in enumerate(zip(unit.steps, shader_of)):
        low = lowered[k]
        atomics = {x.name for x in low.bindings if x.atomic and x.group == 0}
        decls = s.program.sorted_buffers
        bindings = []
        zero = []
        for j, (d, bname) in enumerate(zip(decls, s.bind)):
            entry = _buffer(d, j, d.name in atomics)
            entry["buffer"] = bname
            entry["program_buffer"] = entry.pop("name")
            for key in ("input", "output", "count", "host", "storage"):
                entry.pop(key)
            if s.counts is not None:  # a traced step: the element count this binding was dispatched with
                entry["elements"] = s.counts[j]
            bindings.append(entry)
            uses[bname].append(entry)
            if d.access is Access.WRITE and bname in touched:
                zero.append(bname)
        touched.update(b for d, b in zip(decls, s.bind) if d.access.writable)
        for key, v in _limits(s.program, low).items():
            limits[key] = max(limits.get(key, 0), v)
        features.update(low.features)
        params = _params(s.program)
        for w in params["layout"][4:]:  # count(<program buffer>) -> also the unit buffer it is bound to
            w["buffer"] = s.bind[w["word"] - 4]
            if s.counts is not None:
                w["elements"] = s.counts[w["word"] - 4]
        grid: dict[str, Any] = {"fixed": list(s.grid)} if s.grid is not None else \
            {"from": "dims", "workgroup_size": list(s.program.workgroup_size),
             "rule": "x = ceil(dim[rank-1] / ws.x), y = ceil(dim[rank-2] / ws.y), z = ceil(dim[rank-3] / ws.z)"}
        steps.append({"index": i, "program": s.program.name, "fingerprint": low.fingerprint, "shader": k,
                      "wgsl": wgsl_files[k], "entry_point": low.entry_point,
                      "workgroup_size": list(low.workgroup_size), "bindings": bindings, "grid": grid,
                      "zero_before": zero, "params": params})
    buffers = []
    for b in unit.buffers.values():
        item: dict[str, Any] = {"name": b.name, "role": b.role, "dtype": b.dtype.value, "count": b.count,
                                "input": b.role in ("input", "inout"), "output": b.name in unit.outputs,
                                **_layout(b)}
        if b.count is None:
            item["default_count"] = b.default_count
            item["count_from"] = b.count_from
            item["trailing_shape"] = list(b.trailing)
        types = sorted({u["binding_type"] for u in uses[b.name]})
        item["binding_types"] = types
        sizes = [u["binding_bytes"] for u in uses[b.name] if "binding_bytes" in u]
        if sizes:
            item["binding_bytes"] = max(sizes)
        if b.role == "constant":
            item["value"] = in_file[b.name] if in_file and b.name in in_file else _constant(b)
        if b.words:
            item["words"] = [dict(w) for w in b.words]
        buffers.append(item)
    inputs = [{"name": n, "kind": "scalar", "dtype": unit.scalars[n].value} if n in unit.scalars
              else {"name": n, "kind": "buffer", "dtype": unit.buffers[n].dtype.value} for n in unit.inputs]
    return {
        "format": FORMAT, "version": FORMAT_VERSION, "kind": unit.kind, "name": name, "program": unit.name,
        "about": unit.about, "module": f"{name}.js", "wgsl": wgsl_files,
        "features": sorted(features), "limits": limits,
        "inputs": inputs, "outputs": list(unit.outputs),
        "output_shapes": {k: list(v) for k, v in unit.output_shapes.items()},
        "dims": unit.dims, "buffers": buffers, "steps": steps,
        "uniforms": _uniform_docs(unit, steps),
    }


def _uniform_docs(unit: Unit, steps: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every uniform (and scalar-words) buffer word by name, in one list: what a reader of the manifest
    needs to fill or interpret them without reading vyre."""
    docs: list[dict[str, Any]] = []
    for b in unit.buffers.values():
        if b.words:
            docs.append({"buffer": b.name, "role": b.role, "words": [dict(w) for w in b.words]})
    for s in steps:
        docs.append({"buffer": f"step {s['index']} {s['params']['name']}", "role": "params",
                     "group": s["params"]["group"], "binding": s["params"]["binding"],
                     "words": [{"word": w["word"], "name": w["value"]} for w in s["params"]["layout"]]})
    return docs


__all__ = ["build_unit_manifest"]
