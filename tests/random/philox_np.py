"""A pure-numpy Philox 4x32-10 (uint64 products: independent of the IR's 16-bit limbs) and the
formulas of vyre.random's sampling functions on top of it, for bit-exact comparisons."""

from __future__ import annotations

import numpy as np

M0, M1, W0, W1 = 0xD2511F53, 0xCD9E8D57, 0x9E3779B9, 0xBB67AE85
MASK = np.uint64(0xFFFFFFFF)

# Random123's kat_vectors for philox4x32_10: (counter, key, expected)
KAT = [
    ((0, 0, 0, 0), (0, 0), (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)),
    ((0xFFFFFFFF,) * 4, (0xFFFFFFFF,) * 2, (0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD)),
    ((0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344), (0xA4093822, 0x299F31D0),
     (0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1)),
]


def _mulhilo(a: np.ndarray, m: int) -> tuple[np.ndarray, np.ndarray]:
    p = a.astype(np.uint64) * np.uint64(m)
    return (p >> np.uint64(32)).astype(np.uint32), (p & MASK).astype(np.uint32)


def philox4x32(ctr: np.ndarray, key: tuple[int, int], rounds: int = 10) -> np.ndarray:
    """Philox 4x32-R of counters ``ctr`` (shape (n, 4), uint32) under ``key``: shape (n, 4) uint32."""
    c = [np.asarray(ctr[:, w], dtype=np.uint32) for w in range(4)]
    k0, k1 = np.uint32(key[0]), np.uint32(key[1])
    with np.errstate(over="ignore"):
        for r in range(rounds):
            if r:
                k0, k1 = np.uint32(k0 + np.uint32(W0)), np.uint32(k1 + np.uint32(W1))
            hi0, lo0 = _mulhilo(c[0], M0)
            hi1, lo1 = _mulhilo(c[2], M1)
            c = [hi1 ^ c[1] ^ k0, lo1, hi0 ^ c[3] ^ k1, lo0]
    return np.stack(c, axis=1)


def stream(key: tuple[int, int], n: int, base: tuple[int, int, int, int] = (0, 0, 0, 0)) -> np.ndarray:
    """The first ``n`` words of the stream whose block j encrypts the 128-bit counter base + j."""
    nb = -(-n // 4)
    start = base[0] | base[1] << 32 | base[2] << 64 | base[3] << 96
    ctrs = [(start + j) % (1 << 128) for j in range(nb)]
    ctr = np.array([[(c >> (32 * w)) & 0xFFFFFFFF for w in range(4)] for c in ctrs], dtype=np.uint32)
    return philox4x32(ctr.reshape(nb, 4), key).reshape(-1)[:n]


def key_words(seed: int) -> tuple[int, int]:
    s = seed % (1 << 64)
    return s & 0xFFFFFFFF, s >> 32


def split(key: tuple[int, int], num: int) -> list[tuple[int, int]]:
    w = stream(key, 2 * num, (0, 0, 0, 1))
    return [(int(w[2 * i]), int(w[2 * i + 1])) for i in range(num)]


def fold_in(key: tuple[int, int], data: int) -> tuple[int, int]:
    d = data % (1 << 64)
    w = stream(key, 2, (d & 0xFFFFFFFF, d >> 32, 0, 2))
    return int(w[0]), int(w[1])


def uniform01(words: np.ndarray) -> np.ndarray:
    return ((words >> np.uint32(8)).astype(np.float32) * np.float32(2.0**-24)).astype(np.float32)


def randint(words: np.ndarray, lo: int, hi: int) -> np.ndarray:
    """floor((w[2i] * 2**32 + w[2i+1]) * (hi - lo) / 2**64) + lo, in Python integers."""
    w = words.reshape(-1, 2)
    span = hi - lo
    return np.array([((int(a) << 32 | int(b)) * span >> 64) + lo for a, b in w], dtype=np.int64)


def normal(words: np.ndarray) -> np.ndarray:
    """Box-Muller in float64 on the same words: pairs (2m, 2m+1) give (r cos, r sin)."""
    w = words.reshape(-1, 2)
    u1 = ((w[:, 0] >> np.uint32(8)).astype(np.float64) + 1.0) * 2.0**-24
    u2 = (w[:, 1] >> np.uint32(8)).astype(np.float64) * 2.0**-24
    r = np.sqrt(-2.0 * np.log(u1))
    return np.stack([r * np.cos(2 * np.pi * u2), r * np.sin(2 * np.pi * u2)], axis=1).reshape(-1)
