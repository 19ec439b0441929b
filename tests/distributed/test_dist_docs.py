"""docs/distributed.md's one-machine example runs as written (on the test session's Ray instance)."""

from __future__ import annotations

import re
from pathlib import Path

DOCS = Path(__file__).resolve().parents[2] / "docs"


def test_local_pool_example_runs(ray_pool, capsys):
    text = (DOCS / "distributed.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    example = next(b for b in blocks if "local_pool(" in b)
    exec(compile(example, f"{DOCS / 'distributed.md'}", "exec"), {"__name__": "__distributed_md__"})
    printed = capsys.readouterr().out
    assert printed.startswith("[(0, ") and "(1, " in printed  # both workers' host and adapter
