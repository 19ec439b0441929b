"""Import time, in fresh processes: what a user waits for before vyre does anything.

* first program: ``import vyre``, ``vyre.ProgramBuilder("x", 64)`` and building (validating) a
  one-statement program, in a new ``python -c`` process (wall clock of the whole process).
* ``vyre --help``: ``python -m vyre --help`` in a new process.

Baseline: ``python -c pass`` (the interpreter's own start-up, part of both). The check of the
first-program row is structural, not a time: the child reports whether numpy, pydantic or wgpu
got imported (none should be: the IR builds without them).
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
import time
from pathlib import Path

from ._harness import Context, Outcome, Timing, record

NAME = "import_time"
ROOT = Path(__file__).resolve().parent.parent
HEAVY = ("numpy", "pydantic", "wgpu")

FIRST_PROGRAM = f"""
import sys
import vyre
b = vyre.ProgramBuilder("x", 64)
x = b.buffer("x", "f32", access="read_write")
i = b.global_index()
with b.if_(i < x.len()):
    x[i] = x[i] * 2.0
b.build()
print({{"loaded": [m for m in {HEAVY!r} if m in sys.modules]}})
"""


def plan(ctx: Context) -> int:
    return 2


def _reps(ctx: Context) -> int:
    return 5 if ctx.quick else 11


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(ROOT)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p])}


def _spawn(args: list[str], reps: int) -> tuple[Timing, str]:
    """Wall clock of ``reps`` fresh processes (after one unmeasured run that warms the OS file cache)."""
    samples: list[float] = []
    out = ""
    for k in range(reps + 1):
        t = time.perf_counter()
        r = subprocess.run([sys.executable, *args], capture_output=True, text=True, cwd=ROOT, env=_env(), timeout=120)
        dt = time.perf_counter() - t
        if r.returncode != 0:
            raise RuntimeError(f"{args} failed ({r.returncode}): {r.stderr[-2000:]}")
        if k:
            samples.append(dt)
        out = r.stdout
    return Timing(samples, method="wall clock of a fresh process (perf_counter around subprocess.run)"), out


def first_program(ctx: Context) -> dict:
    reps = _reps(ctx)
    vy, out = _spawn(["-c", FIRST_PROGRAM], reps)
    loaded = ast.literal_eval(out.strip().splitlines()[-1])["loaded"]  # the child's repr (json costs an import)
    startup, _ = _spawn(["-c", "pass"], reps)
    return record(bench=NAME, name="import vyre + first ProgramBuilder program", metric="import_time.first_program",
                  params={"python": sys.version.split()[0]}, unit="ms", scale=1e3,
                  vyre=Outcome(vy, method="python -c 'import vyre; ProgramBuilder(...); ...; build()'"),
                  baselines={"python": Outcome(startup, method="python -c pass (interpreter start-up)")},
                  check={"ok": not loaded, "against": f"none of {', '.join(HEAVY)} imported", "loaded": loaded})


def cli_help(ctx: Context) -> dict:
    reps = _reps(ctx)
    vy, out = _spawn(["-m", "vyre", "--help"], reps)
    startup, _ = _spawn(["-c", "pass"], reps)
    return record(bench=NAME, name="vyre --help", metric="import_time.cli_help", params={}, unit="ms", scale=1e3,
                  vyre=Outcome(vy, method="python -m vyre --help"),
                  baselines={"python": Outcome(startup, method="python -c pass (interpreter start-up)")},
                  check={"ok": "Usage:" in out, "against": "the help text is printed"})


def run(ctx: Context):
    yield first_program(ctx)
    yield cli_help(ctx)
