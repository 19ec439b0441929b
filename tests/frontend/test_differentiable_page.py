"""docs/differentiable.md runs as written: its python blocks run in order in one namespace (on the default
backend, the GPU adapter here), and a ``text`` block right after a python block is exactly what it prints."""

from __future__ import annotations

from doc_pages import DOCS, blocks, run_page

PAGE = DOCS / "differentiable.md"


def test_differentiable_page_runs_and_prints_what_it_shows(gpu, tmp_path, capsys):
    ran, checked = run_page(PAGE, tmp_path, capsys)
    assert ran >= 3
    assert checked == sum(kind == "text" for kind, _ in blocks(PAGE)) >= 3
