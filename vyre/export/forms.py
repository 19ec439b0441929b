"""Exports of what users run: a pipeline, an op call, a kernel launch, a fused array expression.

Each form becomes a :class:`~vyre.export.unit.Unit` and :func:`export_unit` writes ``NAME.json`` (the
manifest), ``NAME.<k>.wgsl`` (one file per distinct program), ``NAME.js`` (an ES module whose
``run(device, inputs)`` takes the inputs by name and returns the outputs by name) and, for a traced
function (:func:`export_function`), ``NAME.safetensors`` (its weights). See docs/export.md.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from jinja2 import Environment, PackageLoader, StrictUndefined

from ..errors import ArgumentTypeError, InvalidArgumentError, LoweringError
from ..lower import LoweredProgram, lower, refuse_nonstandard
from .traced import from_function
from .unit import Unit, from_kernel, from_op, from_pipeline
from .unit_manifest import build_unit_manifest
from .weights import weights_file

_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*")


def _stem(unit: Unit, name: str | None) -> str:
    stem = (re.sub(r"[^A-Za-z0-9_.-]", "_", unit.name).lstrip(".") or "unit")[:120] if name is None else name
    if not isinstance(stem, str):
        raise ArgumentTypeError(f"export name {stem!r} is a {type(stem).__name__}, not a string",
                                fix="pass name='my_unit' (letters, digits, '_', '-' and '.')")
    if not _NAME.fullmatch(stem) or len(stem) > 120:
        raise InvalidArgumentError(f"export name {stem!r} is not a plain file name",
                                   fix="use letters, digits, '_', '-' and '.', not starting with '.' or '-' "
                                       "(at most 120 characters); choose the folder with out_dir")
    return stem


def render_unit_module(manifest: dict, wgsl: list[str]) -> str:
    """The ES module of an exported unit (template ``vyre/export/templates/unit.js.j2``)."""
    env = Environment(loader=PackageLoader("vyre.export", "templates"), undefined=StrictUndefined,
                      keep_trailing_newline=True, autoescape=False)
    return env.get_template("unit.js.j2").render(
        name=manifest["name"], kind=manifest["kind"], program_name=manifest["program"].replace("\n", " "),
        lowering_version=manifest["lowering_version"], nsteps=len(manifest["steps"]),
        input_names=", ".join(x["name"] for x in manifest["inputs"]) or "(none)",
        output_names=", ".join(manifest["outputs"]),
        manifest_json=json.dumps(manifest, indent=1), wgsl_json=json.dumps(wgsl, indent=1))


def export_unit(unit: Unit, out_dir: str | Path, *, name: str | None = None, weights: str = "auto") -> Path:
    """Write ``unit`` into ``out_dir`` (created if missing) and return the manifest's path. ``weights``:
    where the constants' values go: ``"file"`` (``NAME.safetensors`` beside the module, see
    vyre/export/weights.py), ``"inline"`` (base64 in the manifest), ``"auto"`` (a file for a traced
    function, inline otherwise). Raises, before writing anything, ArgumentTypeError / InvalidArgumentError
    (a bad ``name`` or ``weights``), ValidationError (an invalid program); LoweringError (a program that
    cannot be lowered, a directory that cannot be written)."""
    if not isinstance(unit, Unit):
        raise ArgumentTypeError(f"export_unit() takes a vyre.export.Unit, got {type(unit).__name__}",
                                fix="use export_pipeline, export_op, export_kernel, export_array or export_function")
    if weights not in ("auto", "file", "inline"):
        raise InvalidArgumentError(f"export_unit(weights={weights!r}): expected 'auto', 'file' or 'inline'",
                                   fix="weights='file' writes NAME.safetensors beside the module")
    stem = _stem(unit, name)
    distinct: dict[str, int] = {}
    lowered: list[LoweredProgram] = []
    shader_of: list[int] = []
    for s in unit.steps:
        fp = s.program.fingerprint
        if fp not in distinct:
            distinct[fp] = len(lowered)
            lowered.append(lower(s.program))  # ValidationError / LoweringError
            refuse_nonstandard(lowered[-1], f"export of {s.program.name!r}")  # f64/i64/u64: not WebGPU
        shader_of.append(distinct[fp])
    files = [f"{stem}.{k}.wgsl" for k in range(len(lowered))]
    blob: bytes | None = None
    in_file = None
    if weights == "file" or (weights == "auto" and unit.kind == "function"):
        blob, in_file, entry = weights_file(unit, f"{stem}.safetensors")
    manifest = build_unit_manifest(unit, lowered, shader_of, stem, files, in_file)
    manifest["lowering_version"] = lowered[0].lowering_version if lowered else ""
    manifest["weights"] = entry if blob is not None else None
    wgsl = [x.wgsl for x in lowered]
    out = Path(out_dir)
    try:
        out.mkdir(parents=True, exist_ok=True)
        for f, text in zip(files, wgsl):
            (out / f).write_text(text, encoding="utf-8")
        if blob is not None:
            (out / f"{stem}.safetensors").write_bytes(blob)
        (out / f"{stem}.js").write_text(render_unit_module(manifest, wgsl), encoding="utf-8")
        path = out / f"{stem}.json"
        path.write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
    except OSError as exc:
        raise LoweringError(f"cannot write the export of {unit.name!r} into {str(out)!r}: {exc}",
                            fix="pass a writable output directory") from None
    return path


def export_pipeline(pipeline: Any, out_dir: str | Path, *, name: str | None = None) -> Path:
    """Export a vyre :class:`~vyre.backends.schedule.Pipeline` (an op's ``vyre.ops.api.pipeline_for``, a
    ``vyre.ops.pipeline.single`` program, or a :class:`~vyre.export.unit.Unit` as it is): every step in
    order with its grid and the buffers shared between steps."""
    unit = pipeline if isinstance(pipeline, Unit) else from_pipeline(pipeline)
    return export_unit(unit, out_dir, name=name)


def export_op(op_id: str, *arrays: Any, out_dir: str | Path, name: str | None = None, variant: str | None = None,
              **params: Any) -> Path:
    """Export the op call ``vyre.ops.<op>(backend, *arrays, **params)`` (see :func:`vyre.export.unit.from_op`):
    the module runs on arrays of the same sizes and dtypes."""
    return export_unit(from_op(op_id, *arrays, variant=variant, **params), out_dir, name=name)


def export_kernel(kernel: Any, *args: Any, dim: Any, out_dir: str | Path, name: str | None = None,
                  **named: Any) -> Path:
    """Export the launch ``kernel[dim](*args)`` (see :func:`vyre.export.unit.from_kernel`): the module's
    ``run(device, {param: value, ...}, {dim})`` takes the kernel's parameters by their Python names."""
    return export_unit(from_kernel(kernel, *args, dim=dim, **named), out_dir, name=name)


def export_array(expr: Any, out_dir: str | Path, *, name: str | None = None, inputs: dict[str, Any] | None = None
                 ) -> Path:
    """Export the fused array expression ``expr`` (``vyre.array.program_of(expr, inputs=...)``): the arrays
    named in ``inputs`` are the module's inputs, every other array it reads is a constant in the export."""
    from ..array._export_view import program_of  # why: vyre.array is a front end above vyre.export

    return export_unit(program_of(expr, inputs=inputs), out_dir, name=name or "array_expr")


def export_function(fn: Any, *args: Any, out_dir: str | Path, name: str | None = None,
                    inputs: Sequence[str] | None = None, outputs: Sequence[str] | None = None,
                    constants: Mapping[str, Any] | None = None, weights: str = "auto") -> Path:
    """Export a call of ``fn`` on arrays shaped like ``args`` (see :func:`vyre.export.traced.from_function`):
    every program it runs in order, the arrays it closes over (weights) in ``NAME.safetensors`` beside the
    module; the module's ``run(device, {input: array})`` returns the results by name."""
    unit = from_function(fn, *args, inputs=inputs, outputs=outputs, constants=constants)
    return export_unit(unit, out_dir, name=name, weights=weights)


__all__ = ["export_unit", "export_pipeline", "export_op", "export_kernel", "export_array", "export_function",
           "render_unit_module"]
