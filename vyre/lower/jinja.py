"""The jinja2 environment of the WGSL templates in ``vyre/lower/templates`` (created on first use,
so importing vyre.lower does not import jinja2)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from jinja2 import Environment

_env: Environment | None = None


def template_env() -> Environment:
    """The jinja2 environment, created on first use."""
    global _env
    if _env is None:
        from jinja2 import Environment, PackageLoader, StrictUndefined  # why: import time (jinja2: ~50 ms)

        _env = Environment(
            loader=PackageLoader("vyre.lower", "templates"), undefined=StrictUndefined, keep_trailing_newline=True
        )
    return _env


def macros(name: str) -> Any:
    """The module of template ``name``: its macros are attributes."""
    return template_env().get_template(name).module


__all__ = ["template_env", "macros"]
