"""Hashes over byte buffers: hash.fnv1a32, hash.crc32 and their batched .rows variants."""

from ..namespace import install as _install_namespace

_install_namespace(__name__)  # vyre.ops.hash.<op>: this package is also its op family namespace
