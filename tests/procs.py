"""Child Python processes that see what the test process sees.

``child_env(**overrides)`` is ``os.environ`` with ``PYTHONPATH`` set to the repository root followed
by this process's ``sys.path``: a child started with ``sys.executable`` imports the same vyre and the
same installed packages, however the tests were started (a venv, a system Python with PYTHONPATH,
pytest's own path insertions).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def child_env(**overrides: str) -> dict[str, str]:
    paths = [str(ROOT), *(p for p in sys.path if p)]
    paths += [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    unique = list(dict.fromkeys(paths))
    return {**os.environ, "PYTHONPATH": os.pathsep.join(unique), **overrides}
