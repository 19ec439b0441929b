"""docs/kernels.md runs as written: its python blocks run in order in one namespace on the GPU (each
saved as a file first: a kernel's source is read from its file), a block starting ``# oops.py`` runs
alone as the file oops.py, and a ``text`` block right after a python block is exactly what it prints
(the error messages on the page are the ones vyre gives)."""

from __future__ import annotations

import re
from pathlib import Path

PAGE = Path(__file__).resolve().parents[2] / "docs" / "kernels.md"


def blocks() -> list[tuple[str, str]]:
    return re.findall(r"```(python|text)\n(.*?)```", PAGE.read_text(encoding="utf-8"), flags=re.S)


def test_kernels_page_runs_and_prints_what_it_shows(gpu, tmp_path, capsys):
    found = blocks()
    assert sum(kind == "python" for kind, _ in found) >= 10
    shared: dict = {"__name__": "__kernels_md__"}
    checked = 0
    for k, (kind, code) in enumerate(found):
        if kind != "python":
            continue
        alone = code.startswith("# oops.py")
        path = tmp_path / ("oops.py" if alone else f"kernels_md_{k}.py")
        path.write_text(code, encoding="utf-8")
        namespace = {"__name__": "__oops__"} if alone else shared
        exec(compile(code, str(path), "exec"), namespace)
        printed = capsys.readouterr().out
        if k + 1 < len(found) and found[k + 1][0] == "text":
            assert printed == found[k + 1][1], f"block {k} of {PAGE.name} printed:\n{printed}"
            checked += 1
    assert checked >= 3
