"""Hashes over byte buffers: hash.fnv1a32, hash.crc32 and their batched .rows variants."""
