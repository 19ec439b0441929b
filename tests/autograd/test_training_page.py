"""docs/training.md runs as written: its python blocks run in order in one namespace (on the default
backend, the GPU adapter here), and a ``text`` block right after a python block is exactly what it prints."""

from __future__ import annotations

from doc_pages import DOCS, blocks, run_page

import vyre.autograd as ag

PAGE = DOCS / "training.md"


def test_training_page_runs_and_prints_what_it_shows(gpu, tmp_path, capsys):
    ran, checked = run_page(PAGE, tmp_path, capsys)
    assert ran >= 4
    assert checked == sum(kind == "text" for kind, _ in blocks(PAGE)) >= 4


def test_rule_table_names_every_rule():
    """Every entry of vyre.autograd.RULES and ZERO is named on the page (in backticks)."""
    text = PAGE.read_text(encoding="utf-8")
    names = {n.split(".")[-1] for n in ag.RULES if not n.startswith("autograd.")} | set(ag.ZERO)
    missing = sorted(n for n in names if f"`{n}" not in text and f"`linalg.{n}" not in text)
    assert not missing, f"docs/training.md does not name {missing}"
