"""Running a documentation page as written (docs/kernels.md, docs/arrays.md): its python blocks run in
order in one namespace, each saved as a file first (a kernel's source is read from its file); a block
starting ``# NAME.py`` runs alone as the file NAME.py; a ``text`` block right after a python block is
exactly what that block prints."""

from __future__ import annotations

import re
from pathlib import Path

DOCS = Path(__file__).resolve().parents[1] / "docs"


def blocks(page: Path) -> list[tuple[str, str]]:
    return re.findall(r"```(python|text)\n(.*?)```", page.read_text(encoding="utf-8"), flags=re.S)


def run_page(page: Path, tmp_path: Path, capsys) -> tuple[int, int]:
    """Runs every python block; asserts each shown output. Returns (python blocks, outputs checked)."""
    found = blocks(page)
    shared: dict = {"__name__": f"__{page.stem}_md__"}
    ran = checked = 0
    for k, (kind, code) in enumerate(found):
        if kind != "python":
            continue
        alone = re.match(r"# (\w+\.py)\n", code)
        path = tmp_path / (alone.group(1) if alone else f"{page.stem}_md_{k}.py")
        path.write_text(code, encoding="utf-8")
        namespace = {"__name__": f"__{path.stem}__"} if alone else shared
        exec(compile(code, str(path), "exec"), namespace)
        ran += 1
        printed = capsys.readouterr().out
        if k + 1 < len(found) and found[k + 1][0] == "text":
            assert printed == found[k + 1][1], f"block {k} of {page.name} printed:\n{printed}"
            checked += 1
    return ran, checked
