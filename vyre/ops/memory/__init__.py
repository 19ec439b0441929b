"""Memory ops: gather, scatter, scatter-add, 2-D transpose."""

from ..namespace import install as _install_namespace

_install_namespace(__name__)  # vyre.ops.memory.<op>: this package is also its op family namespace
