"""vyre.compile: trace once, replay as one submission (vyre/trace/api.py has the contract)."""

from __future__ import annotations

from .api import Compiled, compile

__all__ = ["compile", "Compiled"]
