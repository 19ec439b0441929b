"""Similarity search: ``search.knn`` (brute-force k nearest neighbours, distances and top-k fused)
and :class:`vyre.ops.search.index.FlatIndex`, a FAISS-style flat index resident on the device."""

from ..namespace import install as _install_namespace

_install_namespace(__name__)  # vyre.ops.search.<op>: this package is also its op family namespace
