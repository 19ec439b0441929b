"""vyre.random (draft)."""
from ._distributions import bernoulli, normal, randint, uniform
from ._keys import bits, fold_in, key, split
from ._permutation import choice, permutation

__all__ = ["key", "split", "fold_in", "bits", "uniform", "normal", "randint", "bernoulli", "permutation", "choice"]
