"""Prefix scans (inclusive and exclusive sums), multi-block, any length."""

from ..namespace import install as _install_namespace

_install_namespace(__name__)  # vyre.ops.scan.<op>: this package is also its op family namespace
