"""The README's quick start must run as written (on the session's GPU adapter)."""

from __future__ import annotations

import linecache
import re
from pathlib import Path

README = Path(__file__).resolve().parent.parent / "README.md"


def quick_start_code() -> str:
    text = README.read_text(encoding="utf-8")
    section = text.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```python\n(.*?)```", section, flags=re.S)
    assert len(blocks) == 1, "the Quick start section must hold exactly one python code block"
    return blocks[0]


def test_quick_start_runs(gpu, capsys):
    # The gpu fixture skips (or fails under CI=true) without an adapter; the code acquires its own.
    code = quick_start_code()
    assert "WgpuBackend.acquire()" in code and ".dispatch(" in code
    name = f"{README}:quick-start"
    # @vyre.kernel reads its function's source: keep the code where inspect finds it, as IPython does
    linecache.cache[name] = (len(code), None, code.splitlines(keepends=True), name)
    exec(compile(code, name, "exec"), {"__name__": "__readme__"})
    assert capsys.readouterr().out.strip(), "the quick start prints its result"
