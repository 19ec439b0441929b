"""Import structure of vyre.ir: every module imports on its own, and a Program is plain data
(vyre.ir.program pulls in neither the validator nor the wire module)."""

from __future__ import annotations

import ast
import os
import pkgutil
import subprocess
import sys
from pathlib import Path

import pytest

import vyre.ir

ROOT = Path(__file__).resolve().parents[2]
IR_MODULES = sorted(m.name for m in pkgutil.walk_packages(vyre.ir.__path__, "vyre.ir."))


def _run(code: str) -> str:
    path = os.pathsep.join(dict.fromkeys([str(ROOT), *filter(None, sys.path)]))
    out = subprocess.run([sys.executable, "-c", code], env=dict(os.environ, PYTHONPATH=path), cwd=ROOT,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_ir_modules_are_found():
    assert {"vyre.ir.program", "vyre.ir.validate", "vyre.ir.wire", "vyre.ir.traverse",
            "vyre.ir.passes"} <= set(IR_MODULES)


@pytest.mark.parametrize("module", IR_MODULES)
def test_each_ir_module_imports_in_a_fresh_interpreter(module):
    _run(f"import {module}")


def test_program_pulls_in_neither_validate_nor_wire():
    code = (
        "import sys\n"
        "import vyre.ir.program as m\n"
        "p = m.Program(name='p')\n"
        "fp, back = p.fingerprint, m.Program.from_wire(p.to_wire())\n"
        "assert back.fingerprint == fp and p.to_text()\n"
        "print(' '.join(sorted(k for k in sys.modules if k.startswith('vyre'))))\n"
    )
    loaded = set(_run(code).split())
    assert "vyre.ir.program" in loaded
    assert "vyre.ir.validate" not in loaded
    assert "vyre.ir.wire" not in loaded
    assert "vyre.ir.builder" not in loaded  # the builder validates, so it is not loaded with the data


def _imported_modules(path: Path, package: str) -> set[str]:
    """Every module ``path`` imports, at module level or inside functions, as absolute names."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package.rsplit(".", node.level - 1)[0] if node.level else ""
            mod = ".".join(x for x in (base, node.module) if x)
            found.add(mod)
            found.update(f"{mod}.{a.name}" for a in node.names)
    return found


def test_program_source_imports_neither_validate_nor_wire():
    imported = _imported_modules(ROOT / "vyre" / "ir" / "program.py", "vyre.ir")
    assert "vyre.ir.nodes" in imported  # the scanner sees relative imports
    assert not imported & {"vyre.ir.validate", "vyre.ir.wire"}


def test_builder_still_validates_and_vyre_validate_still_works():
    code = (
        "import vyre\n"
        "from vyre.errors import ValidationError\n"
        "from vyre.ir import ProgramBuilder\n"
        "b = ProgramBuilder('bad')\n"
        "b.break_()\n"
        "try:\n"
        "    b.build()\n"
        "except ValidationError as e:\n"
        "    print(e.rules)\n"
        "vyre.validate(ProgramBuilder('ok').build())\n"
    )
    assert _run(code).strip() == "['control-flow']"


def test_building_a_program_loads_neither_pydantic_nor_numpy():
    """Import time (issue 24): the IR is plain dataclasses, so a first program needs neither pydantic
    (the wire format loads it) nor numpy (no numpy value can exist before numpy is imported); the
    CLI's help loads neither either."""
    code = (
        "import sys\n"
        "import vyre\n"
        "b = vyre.ProgramBuilder('x', 64)\n"
        "x = b.buffer('x', 'f32', access='read_write')\n"
        "i = b.global_index()\n"
        "with b.if_(i < x.len()):\n"
        "    x[i] = x[i] * 2.0 + b.lit(1.5)\n"
        "p = b.build()\n"
        "print(sorted(m for m in ('pydantic', 'numpy', 'wgpu') if m in sys.modules))\n"
        "p.fingerprint\n"
        "print('pydantic' in sys.modules, 'numpy' in sys.modules)\n"
    )
    built, after_wire = _run(code).splitlines()
    assert built == "[]"
    assert after_wire == "True False"  # the first fingerprint brings pydantic in, never numpy
    loaded = _run("import sys\nfrom vyre.cli import main\n"
                  "print(sorted(m for m in ('pydantic', 'numpy', 'wgpu', 'vyre.ir') if m in sys.modules))\n")
    assert loaded.strip() == "[]"
