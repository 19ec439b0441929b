"""Packaging and repository hygiene: lazy import, error codes, layering, CI and README."""

from __future__ import annotations

import ast
import inspect
import re
import subprocess
import sys
from pathlib import Path

import vyre
import vyre.errors as errors

from procs import child_env

ROOT = Path(__file__).resolve().parent.parent
PKG = ROOT / "vyre"


def test_import_vyre_does_not_load_wgpu():
    code = "import vyre, sys; assert 'wgpu' not in sys.modules, sorted(m for m in sys.modules if 'wgpu' in m)"
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, env=child_env())
    assert r.returncode == 0, r.stderr


def test_lazy_attributes_resolve():
    for name in ("ProgramBuilder", "Program", "DataType", "Access", "DispatchConfig", "errors"):
        assert getattr(vyre, name) is not None
    assert set(dir(vyre)) >= {"ProgramBuilder", "WgpuBackend", "ReferenceBackend", "lower"}


# Codes are part of the public API: tools match on them, so they never change.
STABLE_CODES = {
    "VyreError": "VYRE-E000",
    "ValidationError": "VYRE-E100",
    "LoweringError": "VYRE-E200",
    "BackendError": "VYRE-E300",
    "NoAdapterError": "VYRE-E301",
    "DispatchError": "VYRE-E302",
    "DeviceLostError": "VYRE-E303",
    "OutOfMemoryError": "VYRE-E304",
    "UnsupportedFeatureError": "VYRE-E305",
}


def _error_classes():
    return {
        name: obj for name, obj in vars(errors).items()
        if inspect.isclass(obj) and issubclass(obj, errors.VyreError) and obj.__module__ == errors.__name__
    }


def test_error_codes_are_unique_and_stable():
    classes = _error_classes()
    assert set(STABLE_CODES) <= set(classes)
    for name, cls in classes.items():
        assert "code" in vars(cls), f"{name} inherits its code: give it its own"
        assert re.fullmatch(r"VYRE-E\d{3}", cls.code), f"{name}.code = {cls.code!r}"
        if name in STABLE_CODES:
            assert cls.code == STABLE_CODES[name], f"{name}.code changed"
    codes = [cls.code for cls in classes.values()]
    assert len(codes) == len(set(codes)), sorted(codes)
    assert set(errors.__all__) >= set(classes)


# Layer rules (docs/architecture.md): a layer imports only from layers to its left.
FORBIDDEN = {
    "vyre.errors": ("vyre.ir", "vyre.lower", "vyre.backends", "vyre.ops"),
    "vyre.ir": ("vyre.lower", "vyre.backends"),
    "vyre.lower": ("vyre.backends",),
}


def _module_name(path: Path, root: Path = ROOT) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imports(path: Path, root: Path = ROOT) -> set[str]:
    """Every module an import statement in ``path`` names (relative imports resolved), at any depth."""
    module = _module_name(path, root)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            found.add(target)
            found.update(f"{target}.{alias.name}" for alias in node.names)
    return found


def _in(name: str, prefix: str) -> bool:
    return name == prefix or name.startswith(prefix + ".")


def test_no_imports_against_the_layering():
    violations = []
    for path in sorted(PKG.rglob("*.py")):
        module = _module_name(path)
        for layer, banned in FORBIDDEN.items():
            if not _in(module, layer):
                continue
            for imported in _imports(path):
                violations += [f"{module} imports {imported}" for b in banned if _in(imported, b)]
    assert not violations, "\n".join(sorted(set(violations)))


def test_layer_scanner_resolves_relative_imports(tmp_path):
    # The scanner itself must see `from ..backends import x` inside vyre/ir as vyre.backends.
    probe = tmp_path / "vyre" / "ir" / "probe.py"
    probe.parent.mkdir(parents=True)
    probe.write_text("from ..backends import host\nfrom . import nodes\ndef f():\n    import vyre.lower\n")
    found = _imports(probe, tmp_path)
    assert {"vyre.backends", "vyre.backends.host", "vyre.ir.nodes", "vyre.lower"} <= found


def test_ci_runs_make_test():
    run = ROOT / ".ci" / "run"
    text = run.read_text()
    assert text.startswith("#!/usr/bin/env bash")
    assert "set -euo pipefail" in text
    commands = [line.strip() for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")]
    assert "make test" in commands


def test_make_test_runs_the_checks_then_the_tests():
    make = (ROOT / "Makefile").read_text()
    recipe = make.split("\ncheck:", 1)[1].split("\nclean:", 1)[0]
    steps = [line.strip() for line in recipe.splitlines() if line.startswith("\t")]
    assert steps == ["$(PY) -m ruff check vyre tests benches examples", "$(PY) -m mypy",
                     "$(PY) -m pytest -n $(PYTEST_JOBS) $(PYTEST_ARGS)",
                     "VYRE_WGPU_NATIVE=0 $(PY) -m pytest -n $(PYTEST_JOBS) $(PYTEST_ARGS) $(PUBLIC_API_TESTS)",
                     "$(MAKE) --no-print-directory docs-build",
                     "$(VENV)/bin/mkdocs build --strict --quiet --site-dir site",
                     "$(VENV)/bin/mkdocs serve"]
    # the documentation site is built (strict: a warning fails) last; make docs serves it; site/ is ignored
    assert "\ndocs-build: $(STAMP)\n" in make and "\ndocs: $(STAMP)\n" in make
    assert "-e '.[test,docs,distributed]'" in make  # Ray: tests/distributed
    assert "/site/" in (ROOT / ".gitignore").read_text()
    # the second run is the GPU backend's tests on wgpu-py's public API
    assert "PUBLIC_API_TESTS := tests/backends/wgpu " in make
    assert "\ntest: install tint browser check\n" in make
    # make test installs Node.js (apt) and Dawn's Tint (npm ci from the lock) for tests/tint_check.py
    assert "NODE_DEBS   := nodejs npm" in make
    assert "$(TINT_STAMP): $(TINT_DIR)/package.json $(TINT_DIR)/package-lock.json" in make
    assert "\tnpm ci --prefix $(TINT_DIR) --ignore-scripts" in make
    assert "/tests/tint/node_modules/" in (ROOT / ".gitignore").read_text()
    # the checks' tools come with the test extras; vyre ships its type information
    assert (PKG / "py.typed").is_file()
    pyproject = (ROOT / "pyproject.toml").read_text()
    assert '"vyre" = ["py.typed"]' in pyproject
    for tool in ("pytest-xdist", "mypy", "ruff", "mkdocs", "mkdocs-material", "mkdocstrings[python]"):
        assert f'"{tool}>=' in pyproject


def test_readme_shows_the_two_commands():
    readme = (ROOT / "README.md").read_text()
    assert "make demo" in readme
    assert "make test" in readme


def test_demo_runs(gpu):
    # `make demo` runs this module; the gpu fixture only decides skip/fail when there is no adapter.
    r = subprocess.run([sys.executable, "-m", "vyre.demo", "-n", "1000"], capture_output=True, text=True,
                       cwd=ROOT, env=child_env(), timeout=300)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    assert "fn main(" in r.stdout and "OK" in r.stdout.splitlines()[-1]


def test_assert_parity_fixture(assert_parity):
    import numpy as np

    b = vyre.ProgramBuilder("mixed", workgroup_size=32)
    x = b.buffer("x", "f32")
    u = b.buffer("u", "u32", access="write")
    flag = b.buffer("flag", "bool", access="write")
    y = b.buffer("y", "f32", access="write")
    i = b.global_index()
    with b.if_(i < x.len()):
        u[i] = x[i].bitcast("u32")
        flag[i] = (x[i] > 0.0) | (i == 0)
        y[i] = x[i].sqrt() * 0.5
    program = b.build()
    xs = np.linspace(0.0, 4.0, 100, dtype=np.float32)
    u_out, flag_out, y_out = assert_parity(program, {"x": xs})
    np.testing.assert_array_equal(u_out, xs.view(np.uint32))
    assert flag_out.dtype == np.bool_ and flag_out.all()
    np.testing.assert_allclose(y_out, np.sqrt(xs) * 0.5, rtol=1e-6)
