"""``python -m vyre`` runs the demo (see :mod:`vyre.demo`)."""

import sys

from .demo import main

sys.exit(main())
