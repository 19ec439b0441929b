"""docs/kernels.md runs as written: its python blocks run in order in one namespace on the GPU (each
saved as a file first: a kernel's source is read from its file), a block starting ``# oops.py`` runs
alone as the file oops.py, and a ``text`` block right after a python block is exactly what it prints
(the error messages on the page are the ones vyre gives)."""

from __future__ import annotations

from doc_pages import DOCS, run_page

PAGE = DOCS / "kernels.md"


def test_kernels_page_runs_and_prints_what_it_shows(gpu, tmp_path, capsys):
    ran, checked = run_page(PAGE, tmp_path, capsys)
    assert ran >= 10
    assert checked >= 3
