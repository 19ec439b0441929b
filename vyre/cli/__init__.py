"""The ``vyre`` command line (also ``python -m vyre``): one module per subcommand group.

``vyre info | wgsl | run | export | conform | bench | cache | tune | demo``; ``vyre COMMAND --help`` says more.
Errors are one line on standard error (``vyre COMMAND: error: ...``), with exit status 2 for bad
arguments (a missing file, an unparsable wire document, an unknown input name) and 1 when the work
itself fails (no adapter, a dispatch error, a failing conformance run). ``import vyre`` does not import
this package.
"""

from __future__ import annotations

import os
import sys

import click

from .. import __version__
from ..errors import VyreError
from . import bench, cache, conform, demo, info, run, tune, wgsl
from ._common import _RUNNING, RUNTIME, USAGE, CliError, describe_exception, one_line, track

CONTEXT = {"help_option_names": ["-h", "--help"], "max_content_width": 100}


@click.group(context_settings=CONTEXT)
@click.version_option(version=__version__, prog_name="vyre", message="%(prog)s %(version)s")
@click.pass_context
def cli(ctx: click.Context) -> None:
    """vyre: a WebGPU compute runtime with a typed IR compiler.

    Adapters: vyre picks the best one (discrete GPU first); set VYRE_ADAPTER to an index or a name
    substring from `vyre info` to choose another.
    """
    track(ctx)


def _register() -> None:
    for module in (info, wgsl, run, conform, bench, cache, tune, demo):
        for command in module.COMMANDS:
            cli.add_command(command)


_register()


def _error(prog: str, message: str) -> None:
    click.echo(f"{prog}: error: {one_line(message)}", err=True)


def main(argv: list[str] | None = None, prog_name: str = "vyre") -> int:
    """The console script ``vyre`` (and ``python -m vyre``); returns the exit status."""
    args = sys.argv[1:] if argv is None else list(argv)
    _RUNNING["path"] = prog_name
    try:
        rv = cli.main(args=args, prog_name=prog_name, standalone_mode=False)
    except click.UsageError as exc:
        if type(exc).__name__ == "NoArgsIsHelpError":  # a bare `vyre` or `vyre cache`: the help, as click does
            click.echo(exc.format_message(), err=True)
            return USAGE
        path = exc.ctx.command_path if exc.ctx is not None else prog_name
        _error(path, f"{exc.format_message()} (see '{path} --help')")
        return USAGE
    except click.ClickException as exc:
        _error(prog_name, exc.format_message())
        return exc.exit_code
    except CliError as exc:
        _error(_RUNNING["path"], str(exc))
        return exc.status
    except VyreError as exc:  # no adapter, a dispatch the GPU rejected...
        _error(_RUNNING["path"], describe_exception(exc))
        return RUNTIME
    except (click.Abort, KeyboardInterrupt):
        click.echo("aborted", err=True)
        return 130
    except BrokenPipeError:  # `vyre wgsl x.json | head`: the reader left; say nothing more
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 141
    return rv if isinstance(rv, int) else 0


__all__ = ["main", "cli", "CliError", "track"]
