"""``python -m vyre`` is the ``vyre`` command line (see :mod:`vyre.cli`); ``python -m vyre demo`` runs the
saxpy demo (also ``python -m vyre.demo``, what ``make demo`` runs)."""

import sys

from .cli import main

sys.exit(main(prog_name="python -m vyre"))
