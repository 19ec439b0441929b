"""Linear algebra ops: tiled matrix products."""

from ..namespace import install as _install_namespace

_install_namespace(__name__)  # vyre.ops.linalg.<op>: this package is also its op family namespace
