"""docs/compile.md runs as written (on the default backend: the GPU adapter here), and every output it
shows is what its block prints."""

from __future__ import annotations

from doc_pages import DOCS, blocks, run_page

PAGE = DOCS / "compile.md"


def test_compile_page_runs_and_prints_what_it_shows(gpu, tmp_path, capsys):
    ran, checked = run_page(PAGE, tmp_path, capsys)
    assert ran >= 3
    assert checked == sum(kind == "text" for kind, _ in blocks(PAGE)) >= 3
