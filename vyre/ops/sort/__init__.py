"""Sorting ops: LSD radix sort of u32 keys (and key-value pairs), top-k."""

from ..namespace import install as _install_namespace

_install_namespace(__name__)  # vyre.ops.sort.<op>: this package is also its op family namespace
