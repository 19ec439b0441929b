"""docs/random.md runs as written: its python blocks run in order in one namespace (on the default backend,
the GPU adapter here), and a ``text`` block right after a python block is exactly what that block prints;
vyre.random's docstring names every public function."""

from __future__ import annotations

from doc_pages import DOCS, blocks, run_page

import vyre.random as vr

PAGE = DOCS / "random.md"


def test_random_page_runs_and_prints_what_it_shows(gpu, tmp_path, capsys):
    ran, checked = run_page(PAGE, tmp_path, capsys)
    assert ran >= 5
    assert checked == sum(kind == "text" for kind, _ in blocks(PAGE)) >= 5


def test_docs_name_every_function():
    text = PAGE.read_text(encoding="utf-8")
    for name in vr.__all__:
        assert f"``{name}(" in (vr.__doc__ or "") and f"`{name}(" in text, name
