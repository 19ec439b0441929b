"""``python -m vyre.tune [OPTIONS]`` is ``vyre tune [OPTIONS]`` (see :mod:`vyre.cli.tune`; the tuner itself is
:mod:`vyre.ops.tuning`)."""

import sys

if __name__ == "__main__":
    from .cli import main  # why: only when run as `python -m vyre.tune` (importing vyre.tune loads no CLI)

    sys.exit(main(["tune", *sys.argv[1:]], prog_name="python -m vyre.tune"))
