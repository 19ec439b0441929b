"""vyre.random (draft)."""
from ._keys import bits, fold_in, key, split

__all__ = ["key", "split", "fold_in", "bits"]
