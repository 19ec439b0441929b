"""``vyre demo``: the saxpy job of ``make demo`` (:mod:`vyre.demo`)."""

from __future__ import annotations

import click


@click.command("demo")
@click.option("-n", type=click.IntRange(min=1), default=1_000_003, show_default=True, help="number of elements")
@click.option("--seed", type=int, default=0, show_default=True)
def demo(n: int, seed: int) -> int:
    """Run saxpy on the default adapter and on the reference interpreter and compare both with numpy
    (what `make demo` runs). Exit status 1 on a mismatch, 2 without a GPU adapter."""
    from ..demo import main  # why: import time (numpy, pydantic and the IR, for this command only)

    return main(["-n", str(n), "--seed", str(seed)])  # it prints why it failed


COMMANDS = [demo]
