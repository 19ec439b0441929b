"""Export a program for other WebGPU runtimes (``vyre export PROGRAM --out DIR``).

:func:`export_program` writes three files into ``out_dir``:

* ``NAME.wgsl``: the lowered shader (exactly what vyre's own backends compile);
* ``NAME.json``: the manifest (:mod:`vyre.export.manifest`): bindings with dtypes, access and host
  layout, workgroup size, features and limits, the params uniform's byte layout, the grid rule,
  the fingerprint and lowering version;
* ``NAME.js``: a dependency-free ES module that runs the program with the WebGPU API
  (``navigator.gpu`` in a browser, the npm package ``webgpu`` in Node.js) on TypedArrays, with
  the manifest and the WGSL embedded.

:func:`export_pipeline`, :func:`export_op`, :func:`export_kernel` and :func:`export_array` export what
users run (an op call's programs in order, a kernel launch with its named parameters, a fused array
expression) as one unit (vyre/export/unit.py, vyre/export/forms.py); :func:`export_function` a traced
call of a function (a model's forward pass) with its weights in a safetensors file
(vyre/export/traced.py, vyre/export/weights.py). See docs/export.md.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from jinja2 import Environment, PackageLoader, StrictUndefined

from ..errors import ArgumentTypeError, InvalidArgumentError, LoweringError
from ..ir.program import Program
from ..lower import lower, refuse_nonstandard
from .manifest import FORMAT, FORMAT_VERSION, build_manifest
from .unit import Unit, from_kernel, from_op, from_pipeline

_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*")


def _file_name(name: str) -> str:
    """``name`` as a file stem: characters other than letters, digits, ``_``, ``-`` and ``.`` become ``_``."""
    stem = re.sub(r"[^A-Za-z0-9_.-]", "_", name).lstrip(".") or "program"
    return stem[:120]


def render_module(manifest: dict, wgsl: str) -> str:
    """The ES module of an exported program (template ``vyre/export/templates/module.js.j2``)."""
    env = Environment(loader=PackageLoader("vyre.export", "templates"), undefined=StrictUndefined,
                      keep_trailing_newline=True, autoescape=False)
    return env.get_template("module.js.j2").render(
        name=manifest["name"], program_name=manifest["program"].replace("\n", " "),
        fingerprint=manifest["fingerprint"], lowering_version=manifest["lowering_version"],
        manifest_json=json.dumps(manifest, indent=2), wgsl_json=json.dumps(wgsl))


def export_program(program: Program, out_dir: str | Path, *, name: str | None = None) -> Path:
    """Write ``NAME.wgsl``, ``NAME.json`` and ``NAME.js`` of ``program`` into ``out_dir`` (created if
    missing) and return the manifest's path. ``name`` defaults to the program's name (characters
    unfit for a file name become ``_``). Raises, before writing anything, ArgumentTypeError (a TypeError:
    not a Program, a name that is not a string) or InvalidArgumentError (a ValueError: a name that is not a
    plain file name, such as ``../x``, which would leave ``out_dir``); ValidationError (an invalid program);
    LoweringError (the output directory cannot be written)."""
    if not isinstance(program, Program):
        raise ArgumentTypeError(f"export_program() takes a vyre Program, got {type(program).__name__}",
                                fix="build one with vyre.ProgramBuilder(...).build() or Program.from_wire(...)")
    stem = _file_name(program.name) if name is None else name
    if not isinstance(stem, str):
        raise ArgumentTypeError(f"export name {stem!r} is a {type(stem).__name__}, not a string",
                                fix="pass name='my_kernel' (letters, digits, '_', '-' and '.')")
    if not _NAME.fullmatch(stem) or len(stem) > 120:
        raise InvalidArgumentError(f"export name {stem!r} is not a plain file name",
                                   fix="use letters, digits, '_', '-' and '.', not starting with '.' or '-' "
                                       "(at most 120 characters); choose the folder with out_dir")
    lowered = lower(program)  # ValidationError / LoweringError
    refuse_nonstandard(lowered, f"export of {program.name!r}")  # f64/i64/u64: not WebGPU
    manifest = build_manifest(program, lowered, stem)
    out = Path(out_dir)
    try:
        out.mkdir(parents=True, exist_ok=True)
        (out / f"{stem}.wgsl").write_text(lowered.wgsl, encoding="utf-8")
        (out / f"{stem}.js").write_text(render_module(manifest, lowered.wgsl), encoding="utf-8")
        path = out / f"{stem}.json"
        path.write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    except OSError as exc:
        raise LoweringError(f"cannot write the export of {program.name!r} into {str(out)!r}: {exc}",
                            fix="pass a writable output directory") from None
    return path


# after export_program: forms.py reuses this module's conventions
from .forms import export_array, export_function, export_kernel, export_op, export_pipeline, export_unit  # noqa: E402
from .traced import from_function  # noqa: E402

__all__ = ["export_program", "render_module", "build_manifest", "FORMAT", "FORMAT_VERSION", "Unit", "from_op",
           "from_kernel", "from_pipeline", "export_unit", "export_pipeline", "export_op", "export_kernel",
           "export_array", "export_function", "from_function"]
