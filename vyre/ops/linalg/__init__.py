"""Linear algebra ops: tiled matrix products."""
