"""mkdocs hooks (mkdocs.yml ``hooks:``): the generated pages, rendered from the code at build time.

* ``errors.md``: every error class of :mod:`vyre.errors` (code, place in the hierarchy, meaning and typical
  fix from its docstring) and every validation rule of :data:`vyre.ir.validate.RULES`, in place of the
  ``<!-- vyre:errors -->`` marker;
* ``ops.md``: the op catalogue from the registry (``vyre.conform.catalogue_markdown()``, the text that
  ``python -m vyre.conform --catalogue docs/ops.md`` writes), so the site is current even when the
  committed file is not.

It also drops the reST roles (``:class:``, ``:meth:``, ...) that the docstrings use in front of a name,
which mkdocstrings' Markdown shows as text: the name stays, as code.

A class without a docstring or without a ``Typical fix:`` paragraph fails the build (``mkdocs build
--strict`` runs in ``make test``): a new error class needs its entry.
"""

from __future__ import annotations

import inspect
import re

ERRORS_MARKER = "<!-- vyre:errors -->"


class DocsError(Exception):
    """A generated page cannot be produced (mkdocs stops the build)."""


def error_classes() -> list[type]:
    """vyre.errors' exception classes, parents before children, in the order of ``__all__``."""
    import vyre.errors as errors

    return [cls for name in errors.__all__ if inspect.isclass(cls := getattr(errors, name))
            and issubclass(cls, errors.VyreError)]


def _rst_to_md(text: str) -> str:
    """The docstrings' reST bits that Markdown does not read: ``code`` and :role:`target`."""
    text = re.sub(r":[a-z]+:`~?([^`]+)`", r"`\1`", text)
    return text.replace("``", "`")


def split_doc(cls: type) -> tuple[str, str]:
    """(meaning, typical fix) from a class docstring; the fix is the paragraph starting ``Typical fix:``."""
    doc = inspect.cleandoc(cls.__dict__.get("__doc__") or "")
    paragraphs = [" ".join(p.split()) for p in doc.split("\n\n") if p.strip()]
    fixes = [p for p in paragraphs if p.startswith("Typical fix:")]
    meaning = [p for p in paragraphs if not p.startswith("Typical fix:")]
    if not meaning or len(fixes) != 1:
        raise DocsError(f"vyre.errors.{cls.__name__} needs a docstring: what it means, then one paragraph "
                        f"'Typical fix: ...' (docs/hooks.py renders docs/errors.md from it)")
    return _rst_to_md(" ".join(meaning)), _rst_to_md(fixes[0].removeprefix("Typical fix:").strip())


def errors_markdown() -> str:
    """The generated part of docs/errors.md."""
    from vyre.ir.validate import RULES

    classes = error_classes()
    lines = ["| code | error | is a | meaning |", "|------|-------|------|---------|"]
    for cls in classes:
        parents = ", ".join(f"`{b.__name__}`" for b in cls.__bases__)
        meaning, _ = split_doc(cls)
        lines.append(f"| `{cls.code}` | [`{cls.__name__}`](#{cls.code.lower()}) | {parents} "
                     f"| {meaning.split('. ')[0].rstrip('.')}. |")
    for cls in classes:
        meaning, fix = split_doc(cls)
        lines += ["", f"## {cls.code} {cls.__name__} {{ #{cls.code.lower()} }}", "",
                  f"`vyre.errors.{cls.__name__}`, a subclass of "
                  + ", ".join(f"`{b.__name__}`" for b in cls.__bases__) + ".", "",
                  meaning, "", f"**Typical fix:** {fix}"]
    lines += ["", "## Validation rules", "",
              "Each `ValidationIssue` of a `ValidationError` names one of these rules (`issue.rule`; "
              "`err.rules` lists them), from `vyre.ir.validate.RULES`:", "",
              "| rule | what it requires |", "|------|------------------|"]
    bar = "\\|"
    lines += [f"| `{rule}` | {text.replace('|', bar)} |" for rule, text in RULES.items()]
    return "\n".join(lines) + "\n"


def on_page_markdown(markdown: str, page, config, files) -> str:  # noqa: ARG001 (mkdocs' signature)
    src = page.file.src_uri
    if src == "errors.md":
        if ERRORS_MARKER not in markdown:
            raise DocsError(f"docs/errors.md lost its {ERRORS_MARKER} marker")
        return markdown.replace(ERRORS_MARKER, errors_markdown())
    if src == "ops.md":
        from vyre.conform import catalogue_markdown

        return catalogue_markdown()
    return markdown


_ROLE = re.compile(r":(?:class|meth|func|data|attr|mod|exc|obj|const):(<code>)")


def on_page_content(html: str, page, config, files) -> str:  # noqa: ARG001 (mkdocs' signature)
    return _ROLE.sub(r"\1", html)
