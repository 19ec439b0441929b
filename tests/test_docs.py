"""The documentation site: its pages, the generated errors page, and the builder tour's code.

``make test`` builds the site with ``mkdocs build --strict`` (broken links and unreadable docstrings
fail there); these tests check what a build does not: that every page is in the navigation, that
every error class and validation rule is documented, and that the builder page's snippets run.
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

import vyre.errors as errors
from vyre.ir.validate import RULES

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"


def _hooks():
    spec = importlib.util.spec_from_file_location("vyre_docs_hooks", DOCS / "hooks.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _nav_pages() -> set[str]:
    text = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    nav = text.split("\nnav:\n", 1)[1]
    return set(re.findall(r"([\w/.-]+\.md)\s*$", nav, flags=re.M))


def test_every_page_is_in_the_nav():
    pages = {p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*.md")}
    missing = sorted(pages - _nav_pages())
    assert not missing, f"add {missing} to the nav of mkdocs.yml (the site's menu)"
    assert not sorted(_nav_pages() - pages), "mkdocs.yml's nav names pages that do not exist"


def test_errors_page_covers_every_class_and_rule():
    hooks = _hooks()
    text = hooks.errors_markdown()
    classes = hooks.error_classes()
    assert {c.__name__ for c in classes} == {
        n for n in errors.__all__ if isinstance(getattr(errors, n), type) and issubclass(getattr(errors, n),
                                                                                        errors.VyreError)}
    for cls in classes:
        assert f"## {cls.code} {cls.__name__}" in text
        meaning, fix = hooks.split_doc(cls)
        assert meaning and fix, cls.__name__
    for rule in RULES:
        assert f"| `{rule}` |" in text
    assert hooks.ERRORS_MARKER in (DOCS / "errors.md").read_text(encoding="utf-8")


def test_an_undocumented_error_class_fails_the_build():
    hooks = _hooks()

    class NewError(errors.BackendError):
        code = "VYRE-E399"

    with pytest.raises(hooks.DocsError, match="NewError needs a docstring"):
        hooks.split_doc(NewError)


def test_readme_links_the_site():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Documentation", 1)[1].split("\n## ", 1)[0]
    assert "make docs" in section
    for page in ("docs/index.md", "docs/builder.md", "docs/errors.md", "docs/cli.md"):
        assert f"]({page})" in section, page
    for link in re.findall(r"\]\((docs/[^)#]+)", readme):
        assert (ROOT / link).exists(), link


def test_builder_page_snippets_run(gpu, capsys):
    # the snippets of docs/builder.md run in order in one namespace, like a script
    text = (DOCS / "builder.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    assert len(blocks) >= 6
    namespace: dict = {"__name__": "__builder_md__"}
    for k, block in enumerate(blocks):
        exec(compile(block, f"{DOCS / 'builder.md'}:block{k}", "exec"), namespace)


def test_getting_started_snippet_runs(gpu, capsys):
    text = (DOCS / "index.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    assert len(blocks) == 1
    exec(compile(blocks[0], f"{DOCS / 'index.md'}", "exec"), {"__name__": "__index_md__"})
    assert capsys.readouterr().out.strip()


def test_rest_roles_become_plain_code():
    # mkdocstrings shows the docstrings' :class:`X` as ":class:" followed by X as code: the hook keeps the code
    html = '<p>Create with :meth:<code>acquire</code> or a :class:<code>BufRef</code>; a:b:<code>c</code></p>'
    out = _hooks().on_page_content(html, None, None, None)
    assert out == "<p>Create with <code>acquire</code> or a <code>BufRef</code>; a:b:<code>c</code></p>"


def test_cli_page_covers_every_command_and_option():
    # docs/cli.md describes the `vyre` command as it is: every subcommand and each of its long options
    import click

    from vyre.cli import cli

    text = (DOCS / "cli.md").read_text(encoding="utf-8")
    missing: list[str] = []

    def visit(group: click.Group, prefix: str) -> None:
        for name, command in group.commands.items():
            path = f"{prefix} {name}"
            if f"`{path}" not in text:
                missing.append(path)
            for param in command.params:
                missing.extend(f"{path} {opt}" for opt in param.opts
                               if opt.startswith("--") and opt != "--help" and opt not in text)
            if isinstance(command, click.Group):
                visit(command, path)

    visit(cli, "vyre")
    assert not missing, f"docs/cli.md does not mention {missing}: describe them there"
