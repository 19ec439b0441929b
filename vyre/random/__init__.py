"""``vyre.random``: counter-based random numbers (Philox 4x32-10) as vyre arrays, the same bits on every
backend and adapter for the same key.

Quick start::

    import vyre.random as vr

    key = vr.key(0)                      # a uint32 array of shape (2,)
    k_init, k_drop = vr.split(key)       # split returns (2, 2); rows unpack as two keys
    w = vr.normal(k_init, (784, 128), stddev=0.05)
    mask = vr.bernoulli(k_drop, 0.9, (128,))
    order = vr.permutation(vr.fold_in(key, 7), 1797)   # a shuffle for epoch 7

**Generator.** Philox 4x32-10 (Salmon et al., SC 2011; cuRAND's and PyTorch's CUDA generator): a bijection
of a 128-bit counter under a 64-bit key, ten rounds of two 32x32 -> 64-bit multiplies. WGSL has no
multiply-high and no 64-bit integers without an extension, so the high word is assembled from 16-bit limbs
in u32 arithmetic (vyre/random/_philox.py): exact integers, so every backend (the reference interpreter,
lavapipe, any GPU) gives the same words. Generating is one vyre program, one invocation per Philox block (4
words), cached (the registry's ``random.philox`` family) and shared by every size, counter and key slice;
results are deferred arrays, computed in the submission of whatever consumes them and fused into it.

**Keys.** A key is an ordinary ``uint32`` vyre Array of shape ``(2,)`` (JAX's raw key style): Philox's key
words, low first. Being an array, it lives on a backend, can be passed to traced or compiled functions and
to ``@vyre.kernel`` launches, and can itself be lazy (a row of ``split``'s result costs no kernel of its
own). Keys are consumed, not advanced: a function given the same key returns the same values, so derive a
fresh key for every use with ``split`` or ``fold_in`` (all sampling functions read the same stream of a
key, so ``uniform(k, s)`` and ``bernoulli(k, p, s)`` are built from the same words).

Counter layout: the block ``j`` of key ``k``'s stream for domain ``d`` encrypts the counter
``(j, 0, 0, d)`` (four little-endian u32 words); domain 0 holds the samples, 1 ``split``, 2 ``fold_in``.

Functions (``key`` is a key; ``shape`` an int or a tuple of non-negative ints; ``device=`` moves the key to
that backend first, the result lives on the key's backend):

* ``key(seed, *, device=None)``: the key with words ``(s & 0xFFFFFFFF, s >> 32)`` for ``s = seed mod 2**64``
  (``seed`` an int in [-2**63, 2**64)), on ``device`` (default: the innermost ``vyre.use`` block, else the
  default backend);
* ``split(key, num=2)``: ``num`` new keys as a ``(num, 2)`` array: words ``2i, 2i + 1`` of the split domain;
* ``fold_in(key, data)``: a new key from a 64-bit integer (a step, a worker id): the first two words of the
  block at counter ``(data & 0xFFFFFFFF, data >> 32, 0, 2)``;
* ``bits(key, shape=())``: raw uint32 words, element ``i`` is word ``i`` of the stream;
* ``uniform(key, shape=(), dtype=float32, minval=0.0, maxval=1.0)``: floats in [minval, maxval). Word ``w``
  becomes ``(w >> 8) * 2**-24`` (float32: 24 random mantissa bits, every value exact; float16:
  ``(w >> 21) * 2**-11``), then ``minval + u * (maxval - minval)`` clamped below ``maxval`` against rounding;
* ``normal(key, shape=(), dtype=float32, *, mean=0.0, stddev=1.0)``: Box-Muller, both branches (as cuRAND's
  ``curand_normal4``): words ``2m, 2m + 1`` give elements ``2m`` (r cos) and ``2m + 1`` (r sin) with
  ``u1 = ((w >> 8) + 1) * 2**-24`` in (0, 1] (never log 0: |z| < 5.8), ``r = sqrt(-2 ln u1)`` (ln through
  log1p of the exact ``1 - u1``, accurate near r = 0), ``theta = 2 pi (w' >> 8) * 2**-24``;
* ``randint(key, shape, minval, maxval, dtype=int32)``: integers in [minval, maxval) (int32 or uint32; the
  span may be the whole 2**32). Words ``2i`` (high) and ``2i + 1`` (low) form a 64-bit fraction ``x``;
  the value is ``minval + floor(x * span / 2**64)`` (Lemire's multiply, without rejection): each value
  gets floor or ceil of ``2**64 / span`` of the inputs, a relative bias below ``span / 2**64 <= 2**-32``;
* ``bernoulli(key, p=0.5, shape=None)``: booleans, ``u < p`` with ``u`` from ``uniform``: a Python ``p`` must
  be in [0, 1] (0: never True, 1: always; otherwise the probability is p rounded up to a multiple of
  2**-24); an array ``p`` of floats broadcasts against ``shape`` (default: its shape), unchecked (values
  outside [0, 1] act as clipped);
* ``permutation(key, x, axis=0)``: a random permutation of ``range(x)`` (int32) or of an array's slices
  along ``axis``: the stable argsort of random words, repeated with ``fold_in(key, r)`` for round ``r`` as
  JAX does (``ceil(3 ln n / ln(2**32 - 1))`` rounds: one up to n = 1,625), so ties (about n**2 / 2**33 per
  sort) are resolved deterministically and then reshuffled;
* ``choice(key, a, shape=(), replace=True, p=None, axis=0)``: picks from ``range(a)`` or from an array's
  slices: uniform indices (``randint``), without replacement the head of a permutation; with
  probabilities ``p`` the inverse cumulative sum at uniform points, or without replacement the Gumbel top-k.

**Bit-exactness.** ``key``, ``split``, ``fold_in``, ``bits``, ``randint``, ``bernoulli``, ``permutation``,
``choice`` without ``p`` and ``uniform`` on [0, 1) are the same bits on every backend (integer arithmetic
and exact float conversions; tests/random checks them against a numpy Philox and the Random123 known
answers). ``uniform`` on another range is within one float32 rounding (an adapter may fuse the multiply
and add), ``normal`` within the adapter's float32 log/sqrt/cos/sin (4e-6 relative, 1e-6 absolute against
float64 here).

**Errors.** Before any GPU work: a non-key (not a uint32 Array, a float array, a numpy array) is an
ArgumentTypeError; a uint32 array of another shape, a negative dimension, ``minval >= maxval``, a
non-finite bound, ``p`` outside [0, 1], ``stddev < 0`` or a range outside the dtype an
InvalidArgumentError (:mod:`vyre.errors`: also a TypeError / ValueError).

**In kernels.** :mod:`vyre.random.kernel` has ``@vyre.func`` helpers (``philox4x32``, ``bits``, ``uniform``)
for ``@vyre.kernel`` bodies, giving these same bits (imported on its own: it loads the kernel front end).
"""

from __future__ import annotations

from ._distributions import bernoulli, normal, randint, uniform
from ._keys import bits, fold_in, key, split
from ._permutation import choice, permutation

__all__ = ["key", "split", "fold_in", "bits", "uniform", "normal", "randint", "bernoulli", "permutation", "choice"]
