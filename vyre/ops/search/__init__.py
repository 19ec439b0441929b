"""Similarity search: ``search.knn`` (brute-force k nearest neighbours, distances and top-k fused)
and :class:`vyre.ops.search.index.FlatIndex`, a FAISS-style flat index resident on the device."""
