"""Reductions (sum, prod, min, max, argmax, mean) over a whole buffer or along an axis, and histogram."""

from ..namespace import install as _install_namespace

_install_namespace(__name__)  # vyre.ops.reduce.<op>: this package is also its op family namespace
