"""Every script in examples/ runs as a user runs it and checks itself against numpy (exit 0)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from procs import child_env

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = sorted((ROOT / "examples").glob("*.py"))
# examples whose defaults train for minutes run a small configuration of the same code here
ARGS = {"train_chars": ["--steps", "30", "--d-model", "32", "--context", "32", "--batch", "8", "--sample", "40",
                        "--eval-batches", "2"],
        # an example that writes files: into a folder of its own ({out}), not the working directory checked below
        "export_digits_web": ["--out", "{out}"]}


def test_the_examples_are_there():
    names = {p.stem for p in EXAMPLES}
    assert names >= {"saxpy", "blur", "histogram", "resident_loop", "ops_tour"}, names


@pytest.mark.parametrize("script", EXAMPLES, ids=lambda p: p.stem)
def test_example_runs(script, gpu, tmp_path, tmp_path_factory):
    # a fresh working directory: an example must not depend on being run from the repository root;
    # the gpu fixture skips (or fails under CI=true) without an adapter
    args = [a.format(out=tmp_path_factory.mktemp("out")) for a in ARGS.get(script.stem, [])]
    r = subprocess.run([sys.executable, str(script), *args], capture_output=True, text=True,
                       cwd=tmp_path, env=child_env(), timeout=600)
    assert r.returncode == 0, f"{script.name} exited {r.returncode}\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}"
    lines = r.stdout.strip().splitlines()
    assert lines and "MISMATCH" not in r.stdout, r.stdout
    assert not list(tmp_path.iterdir()), "an example leaves no files behind"


def test_examples_have_a_docstring_and_check_themselves():
    for script in EXAMPLES:
        text = script.read_text(encoding="utf-8")
        assert text.startswith('"""'), f"{script.name}: start with a docstring saying what it shows"
        assert "sys.exit(" in text, f"{script.name}: exit non-zero when the result is wrong"
