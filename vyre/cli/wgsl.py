"""``vyre wgsl PROGRAM`` (WGSL, IR text or wire JSON of a program) and ``vyre export PROGRAM --out DIR``."""

from __future__ import annotations

from pathlib import Path

import click

from ..errors import InvalidArgumentError, VyreError
from ._common import PROGRAM_HELP, RUNTIME, USAGE, CliError, describe_exception, load_program


@click.command("wgsl", epilog=PROGRAM_HELP)
@click.argument("program", metavar="PROGRAM")
@click.option("--text", "form", flag_value="text", help="print the IR text form instead")
@click.option("--wire", "form", flag_value="wire", help="print the canonical wire JSON instead (for `vyre run`)")
def wgsl(program: str, form: str | None) -> None:
    """Print the WGSL that vyre generates for PROGRAM."""
    from ..lower import lower  # why: import time (pydantic, the IR and the lowering)

    prog = load_program(program)
    if form == "text":
        click.echo(prog.to_text())
    elif form == "wire":
        click.echo(prog.to_wire().decode("ascii"))
    else:
        try:
            click.echo(lower(prog).wgsl, nl=False)
        except VyreError as exc:
            raise CliError(f"cannot lower {prog.name!r}: {describe_exception(exc)}", RUNTIME) from None


@click.command("export", epilog=PROGRAM_HELP)
@click.argument("program", metavar="PROGRAM")
@click.option("--out", "out", required=True, type=click.Path(file_okay=False, path_type=Path),
              help="directory to write into (created when missing)")
@click.option("--name", default=None, help="the exported kernel's name (default: the program's)")
def export(program: str, out: Path, name: str | None) -> None:
    """Export PROGRAM for use without vyre: NAME.wgsl, NAME.json (the manifest: bindings, layouts, grid rule) and
    NAME.js (an ES module running it with WebGPU), written by vyre.export.export_program; prints the manifest's
    path."""
    from ..export import export_program  # why: import time (the lowering and jinja2)

    prog = load_program(program)
    try:
        manifest = export_program(prog, out, name=name)
    except InvalidArgumentError as exc:  # --name is not a plain file name: a bad argument
        raise CliError(f"--name {name!r}: {exc.message}" + (f" ({exc.fix})" if exc.fix else ""), USAGE) from None
    except VyreError as exc:
        raise CliError(f"cannot export {prog.name!r}: {describe_exception(exc)}", RUNTIME) from None
    except OSError as exc:
        raise CliError(f"cannot write to {out}: {exc.strerror or exc}", USAGE) from None
    click.echo(str(manifest))


COMMANDS = [wgsl, export]
