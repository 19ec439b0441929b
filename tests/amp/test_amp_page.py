"""docs/amp.md runs as written: its python blocks run in order in one namespace (on the default backend,
the GPU adapter here), and a ``text`` block right after a python block is exactly what it prints; the
page names every public name of vyre.amp and every op of its two lists."""

from __future__ import annotations

from doc_pages import DOCS, blocks, run_page

from vyre import amp

PAGE = DOCS / "amp.md"


def test_amp_page_runs_and_prints_what_it_shows(gpu, tmp_path, capsys):
    ran, checked = run_page(PAGE, tmp_path, capsys)
    assert ran >= 4
    assert checked == sum(kind == "text" for kind, _ in blocks(PAGE)) >= 4


def test_page_names_the_api_and_the_op_lists():
    text = PAGE.read_text(encoding="utf-8")
    for name in [*amp.__all__, *amp.FLOAT16_OPS, *amp.FLOAT32_OPS]:
        assert f"`{name}" in text or f"{name}(" in text, name
