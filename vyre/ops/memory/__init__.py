"""Memory ops: gather, scatter, scatter-add, 2-D transpose."""
