"""``vyre bench``: the benchmarks of the top-level ``benches`` package (``python -m benches``), installed with
vyre, so the command works from any directory. Its options are those of ``python -m benches``."""

from __future__ import annotations

import click

from ._common import RUNTIME, CliError


@click.command("bench", add_help_option=False,
               context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False})
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
def bench(args: tuple[str, ...]) -> int:
    """Run the benchmarks (python -m benches); `vyre bench --help` lists the options."""
    try:
        from benches.__main__ import main  # why: optional (benches may be missing from an install)
    except ImportError as exc:
        raise CliError(f"the benches package is not installed ({exc}); reinstall vyre", RUNTIME) from None
    try:
        return main(list(args), prog="vyre bench")
    except SystemExit as exc:  # argparse: --help (0) or a bad option (2, its message already printed)
        code = exc.code
        if isinstance(code, str):
            raise CliError(code, 2) from None
        return int(code or 0)


COMMANDS = [bench]
