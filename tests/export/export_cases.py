"""What the export tests export and run: every op's programs, the parity corpus and fuzzed programs.

:func:`collect` gives one :class:`Exported` per distinct program (by fingerprint) with the element
counts and grid of its first use: an op pipeline step (its pipeline buffers' counts and the
step's grid; inputs are zeros), a parity case or a fuzzed program (its real inputs and config).
:func:`export_all` writes each with :func:`vyre.export.export_program`; :func:`run_node` sends runs
and calls to one ``node tests/tint/run_exported.mjs`` process (Dawn's null backend).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import tint_check

from vyre.backends.config import DispatchConfig
from vyre.backends.schedule import zeros
from vyre.ir.program import Program
from vyre.ir.types import DataType
from vyre.ops.registry import all_ops

from programs import CASES

DRIVER = tint_check.TINT_DIR / "run_exported.mjs"


@dataclass
class Exported:
    name: str  # export name (file stem)
    label: str  # where it comes from
    program: Program
    inputs: list[np.ndarray]  # host arrays of the program's inputs (binding order)
    config: DispatchConfig
    real: bool  # real inputs (parity corpus) or zeros of the right size (op steps)
    manifest_path: Path | None = None
    manifest: dict = field(default_factory=dict)


def _stem(k: int, label: str) -> str:
    return f"{k:04d}_" + re.sub(r"[^A-Za-z0-9_]", "_", label)[:60]


def _op_uses():
    for spec in all_ops():
        for w in spec.witnesses():
            pipe = spec.build(**w.params)
            for step in pipe.steps:
                decls = step.program.sorted_buffers
                ins = [zeros(pipe.buffers[n]) for d, n in zip(decls, step.bind) if d.access.readable]
                counts = {d.name: pipe.buffers[n].count for d, n in zip(decls, step.bind)
                          if not d.access.readable and d.count is None}
                yield f"op {spec.id} [{w.name}] {step.program.name}", step.program, ins, \
                    DispatchConfig(grid=step.grid, counts=counts), False


def _corpus_uses():
    for c in CASES:
        program, inputs, config = c.build()
        if isinstance(inputs, dict):
            inputs = [inputs[b.name] for b in program.input_buffers]
        yield f"corpus {c.name}", program, list(inputs), config or DispatchConfig(), True


FUZZ_DIR = Path(__file__).resolve().parent.parent / "fuzz"
FUZZ_PER_FAMILY = 20  # x 5 families, derandomized (the same sample every run)


def _fuzz_uses():
    """A derandomized sample of the fuzzer's programs (tests/fuzz/strategies.py) with their inputs and grid."""
    if not (FUZZ_DIR / "strategies.py").is_file():
        return
    if str(FUZZ_DIR) not in sys.path:
        sys.path.insert(0, str(FUZZ_DIR))
    import strategies
    from hypothesis import HealthCheck, Phase, given, settings

    drawn: list = []
    for family in strategies.FAMILIES:
        @settings(max_examples=FUZZ_PER_FAMILY, derandomize=True, database=None, phases=[Phase.generate],
                  deadline=None, suppress_health_check=list(HealthCheck))
        @given(strategies.fuzz_cases(family, f16=family in ("float", "vector")))
        def draw(case):
            drawn.append(case)

        draw()
    for k, case in enumerate(drawn):
        yield f"fuzz {case.family} {k}", case.program, list(case.inputs), case.config, True


def collect() -> list[Exported]:
    seen: set[str] = set()
    out: list[Exported] = []
    for label, program, inputs, config, real in [*_op_uses(), *_corpus_uses(), *_fuzz_uses()]:
        if program.fingerprint in seen:
            continue
        seen.add(program.fingerprint)
        out.append(Exported(_stem(len(out), label), label, program, inputs, config, real))
    return out


def export_all(cases: list[Exported], out_dir: Path) -> None:
    from vyre.export import export_program

    for c in cases:
        c.manifest_path = export_program(c.program, out_dir, name=c.name)
        c.manifest = json.loads(c.manifest_path.read_text(encoding="utf-8"))


# ---- what the JavaScript module takes: TypedArrays in host layout ----------------------------------
_JS_ARRAY = {DataType.U32: ("Uint32Array", np.uint32), DataType.I32: ("Int32Array", np.int32),
             DataType.F32: ("Float32Array", np.float32), DataType.F16: ("Uint16Array", np.uint16),
             DataType.BOOL: ("Uint8Array", np.uint8)}


def js_input(dtype: DataType, value, path: Path | None) -> dict:
    """A run's input spec: the host array as raw bytes in a file (f16 as bits in a Uint16Array, bool
    as 0/1 bytes), or only its length when ``path`` is None (zeros)."""
    arr = np.asarray(value)
    if arr.ndim == 0:
        arr = arr.reshape(1)
    name, np_type = _JS_ARRAY[dtype.scalar]
    if dtype.scalar is DataType.F16:
        flat = arr.astype(np.float16).reshape(-1).view(np.uint16)
    else:
        flat = arr.reshape(-1).astype(np_type)
    if path is None:
        return {"array": name, "length": int(flat.size)}
    flat.tofile(path)
    return {"array": name, "file": str(path)}


def run_spec(c: Exported, data_dir: Path) -> dict:
    inputs = {}
    for k, (decl, value) in enumerate(zip(c.program.input_buffers, c.inputs)):
        path = data_dir / f"{c.name}.{k}.bin" if c.real else None
        inputs[decl.name] = js_input(decl.dtype, value, path)
    grid = list(c.config.grid) if c.config.grid is not None else None
    return {"id": c.name, "module": str(c.manifest_path.with_suffix(".js")), "inputs": inputs, "grid": grid,
            "counts": dict(c.config.counts)}


def run_node(runs: list[dict], calls: list[dict], timeout: float = 600) -> dict:
    """Run the driver once; {id: result} plus "summary"."""
    with tempfile.TemporaryDirectory(prefix="vyre-export-node-") as tmp:
        jobs = Path(tmp) / "jobs.json"
        jobs.write_text(json.dumps({"runs": runs, "calls": calls}), encoding="utf-8")
        result = Path(tmp) / "results.jsonl"
        r = subprocess.run([tint_check.node(), str(DRIVER), str(jobs), f"--out={result}"], capture_output=True,
                           text=True, timeout=timeout, cwd=tint_check.TINT_DIR,
                           env={**os.environ, "NODE_NO_WARNINGS": "1"})
        output = result.read_text(encoding="utf-8") if result.exists() else ""
    results: dict = {}
    for line in output.splitlines():
        doc = json.loads(line)
        results["summary" if "summary" in doc else doc["id"]] = doc.get("summary", doc)
    if r.returncode != 0 or "summary" not in results:
        raise RuntimeError(f"run_exported.mjs failed (exit {r.returncode}, {len(results)} results):\n"
                           f"{r.stderr[-4000:]}{r.stdout[-2000:]}")
    return results
