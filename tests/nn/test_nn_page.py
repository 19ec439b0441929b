"""docs/nn.md runs as written: its python blocks run in order in one namespace (on the default backend,
the GPU adapter here), and a ``text`` block right after a python block is exactly what that block prints;
the page names every public name of vyre.nn, vyre.nn.functional and vyre.optim."""

from __future__ import annotations

from doc_pages import DOCS, blocks, run_page
from extras import require

import vyre.nn as nn
import vyre.nn.functional as F
import vyre.optim as optim

PAGE = DOCS / "nn.md"


def test_nn_page_runs_and_prints_what_it_shows(gpu, tmp_path, capsys):
    require("sklearn.datasets", "the page trains on scikit-learn's digits")
    ran, checked = run_page(PAGE, tmp_path, capsys)
    assert ran >= 7
    assert checked == sum(kind == "text" for kind, _ in blocks(PAGE)) >= 7


def test_page_names_every_public_name():
    text = PAGE.read_text(encoding="utf-8")
    for name in [*nn.__all__, *F.__all__, *optim.__all__]:
        if name in ("functional", "init", "Optimizer", "LRScheduler", "Module", "Parameter"):
            continue
        assert f"`{name}" in text or f"{name}(" in text, name
