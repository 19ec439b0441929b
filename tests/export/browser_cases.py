"""The browser check's catalogue: exported modules, their inputs, and what each output must equal.

Every case is exported into one folder, run once in headless Chromium (tests/export/browser.py) and
compared, output by output, with vyre's own dispatch on the session's GPU backend and with an
independent reference (numpy for ops, kernels and arrays; the reference interpreter for the parity
corpus) under the case's tolerance (an op's OpSpec tolerance; integers and bools bit-exact).

The catalogue (a fixed subset, the same every run, chosen to keep SwiftShader's compiles within the
check's budget on two cores):

* **ops**: for every registered op, its smallest witness and its largest witness of at most
  ``OP_MAX_ELEMENTS`` input elements, exported as the witness's whole pipeline
  (``vyre.export.from_pipeline``: every step, grid and shared buffer);
* **corpus**: every parity program (tests/programs.py) as a single-program export (``export_program``);
* **kernels**: the docs/kernels.md kernels (tests/export/browser_kernels.py) by ``export_kernel``,
  with named parameters and dims;
* **arrays**: fused array expressions by ``vyre.array.program_of`` (one kernel, several kernels with
  intermediates, views, integer and bool work, a constant array);
* **op calls**: ``export_op`` of multi-step ops at sizes their witnesses do not use;
* **traced functions** (tests/export/browser_functions.py): ``export_function`` of an MLP and a softmax
  with their weights, the digits CNN trained in the session, the committed examples/digits_web page
  (its module and index.html), and a tampered weights file.

Cases whose needs the browser's adapter lacks (a feature such as shader-f16, a limit such as
maxStorageBuffersPerShaderStage) are counted apart as not fitting, from the adapter the page reports;
:data:`BROWSER_SKIPS` lists the ops left out, each with its reason.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from vyre.ir.types import DataType
from vyre.ops.registry import EXACT, Tolerance, rel

OP_MAX_ELEMENTS = 1 << 14
#: ops left out of the browser run, and why: SwiftShader never finishes compiling their tiled GEMM programs
#: (~640 lines of unrolled vec4 tiles; matmul's compile in about 5 s), and Chromium's GPU watchdog then
#: kills the GPU process, losing the device for every later module. lavapipe runs them (tests/ops, the
#: conformance run); Tint compiles them (tests/export/test_export_programs.py).
BROWSER_SKIPS = {
    "conv2d": "its first dispatch did not return within 4 min (the GPU process was then killed)",
    "search.knn": "createComputePipelineAsync of its first program did not finish within 4 min (the module "
                  "itself parses in 34 ms): SwiftShader's compile, not the shader's run",
}
F32_TOL = rel(1e-5, 1e-6)  # the parity corpus's default (tests/parity.py)
F16_TOL = rel(1e-2, 1e-2)


@dataclass
class Case:
    id: str
    family: str  # op, corpus, kernel, array, op-call, tampered
    label: str
    module: str  # path of the .js module relative to the served folder
    manifest: dict
    inputs: dict[str, Any]  # name -> host array (or a Python scalar)
    options: dict = field(default_factory=dict)
    want: dict[str, dict[str, np.ndarray]] = field(default_factory=dict)  # source -> {output name: array}
    tolerance: dict[str, Tolerance] = field(default_factory=dict)  # output name -> tolerance
    trig: bool = False  # its WGSL calls sin, cos or tan (compared at WGSL's accuracy for them, see below)
    job: dict | None = None  # a job of its own (a whole page: tests/export/browser_functions.py)


def stem(k: int, label: str) -> str:
    return f"{k:03d}_" + re.sub(r"[^A-Za-z0-9_]", "_", label)[:60]


_JS = {DataType.U32: ("Uint32Array", np.uint32), DataType.I32: ("Int32Array", np.int32),
       DataType.F32: ("Float32Array", np.float32), DataType.F16: ("Uint16Array", np.uint16),
       DataType.BOOL: ("Uint8Array", np.uint8)}


def job(case: Case, root: Path) -> dict:
    """The page's job of a case: its inputs as raw host-layout files (f16 as bits, bool as 0/1 bytes)."""
    if case.job is not None:
        return {"id": case.id, **case.job}
    dtypes = {b["name"]: b["dtype"] for b in case.manifest["buffers"]}
    specs: dict[str, Any] = {}
    for k, (name, value) in enumerate(case.inputs.items()):
        if not isinstance(value, np.ndarray):
            specs[name] = {"scalar": value}
            continue
        d = DataType(dtypes[name])
        array, np_type = _JS[d.scalar]
        flat = value.astype(np.float16).reshape(-1).view(np.uint16) if d.scalar is DataType.F16 else \
            value.reshape(-1).astype(np_type)
        path = root / "data" / f"{case.id}.{k}.bin"
        path.parent.mkdir(exist_ok=True)
        flat.tofile(path)
        specs[name] = {"array": array, "file": f"./data/{path.name}"}
    return {"id": case.id, "module": f"./{case.module}", "inputs": specs, "options": case.options}


#: WGSL's required accuracy of sin and cos (absolute error 2^-11 on [-pi, pi]; tan is sin/cos): SwiftShader
#: is that coarse (errors to 4.4e-4 seen), lavapipe and numpy much finer, so a module whose WGSL calls them
#: is compared with its float tolerance widened to this absolute error
WGSL_TRIG_ATOL = 2.0 ** -11
TRIG = re.compile(r"\b(sin|cos|tan)\(")


def browser_tolerance(case: Case, name: str, dtype: np.dtype) -> Tolerance:
    """The tolerance of output ``name`` in the browser: the case's, widened for trig (see WGSL_TRIG_ATOL)."""
    tol = case.tolerance[name]
    if not case.trig or dtype.kind != "f":
        return tol
    return rel(tol.rtol if tol.kind == "rel" else 0.0, max(tol.atol, WGSL_TRIG_ATOL))


def finite_only(got: np.ndarray, want: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
    """Float outputs without the positions where ``want`` is +-inf or NaN and ``got`` is not the same: WGSL
    lets an implementation assume no infinities or NaNs (SwiftShader's log(0) is -88.03, not -inf), so the
    browser is held to finite values only; returns the count of such positions left out."""
    if want.dtype.kind != "f":
        return got, want, 0
    same = (got == want) | (np.isnan(got) & np.isnan(want))
    keep = np.isfinite(want) | same
    return got[keep], want[keep], int(want.size - keep.sum())


def tolerance_for(dtype: np.dtype, given: Tolerance | None = None) -> Tolerance:
    if dtype.kind not in "fc":
        return EXACT
    if given is not None:
        return given
    return F16_TOL if dtype == np.float16 else F32_TOL


def needs(case: Case) -> tuple[list[str], dict[str, int]]:
    """The features and limits a case's module asks of the device."""
    return list(case.manifest.get("features", [])), dict(case.manifest.get("limits", {}))


def fits(case: Case, adapter: dict) -> str | None:
    """Why the browser's adapter cannot run the case (None: it can)."""
    features, limits = needs(case)
    missing = [f for f in features if f not in adapter.get("features", [])]
    if missing:
        return f"adapter lacks {', '.join(missing)}"
    for key, value in limits.items():
        have = adapter.get("limits", {}).get(key)
        if have is not None and have < value:
            return f"needs {key} {value}, adapter has {have}"
    return None


def load_manifest(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


__all__ = ["Case", "stem", "job", "tolerance_for", "browser_tolerance", "finite_only", "fits", "load_manifest",
           "OP_MAX_ELEMENTS", "F32_TOL", "WGSL_TRIG_ATOL", "TRIG", "BROWSER_SKIPS"]
