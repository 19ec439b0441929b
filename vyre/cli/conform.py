"""``vyre conform``: the op conformance run (:mod:`vyre.conform`, also ``python -m vyre.conform``)."""

from __future__ import annotations

from pathlib import Path

import click

BACKENDS = ("reference", "wgpu")


@click.command("conform")
@click.option("--backend", type=click.Choice([*BACKENDS, "all"]), default="all", show_default=True,
              help="backend column(s) to run")
@click.option("--ops", default="", metavar="PREFIX[,PREFIX]",
              help="only ops whose id or category starts with a prefix (default: every op)")
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="where to write the JSON certificate [default: conformance.json in the user cache directory, "
                   "e.g. ~/.cache/vyre/conformance.json]")
@click.option("--quick", is_flag=True, help="only each op's smallest witness")
def conform(backend: str, ops: str, out: Path | None, quick: bool) -> int:
    """Run every op's witnesses on the reference interpreter and on wgpu against the ops' numpy references,
    print the op x backend matrix and write a JSON certificate (its path is printed last).

    A progress bar is shown on a terminal, one line per op otherwise. Exit status 1 when any cell fails.
    """
    from .. import conform as c  # why: import time (numpy and the certificate code, for this command only)

    backends = c.BACKENDS if backend == "all" else (backend,)
    return c.execute(backends, [p for p in ops.split(",") if p], out, quick)


COMMANDS = [conform]
