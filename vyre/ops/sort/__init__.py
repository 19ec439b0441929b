"""Sorting ops: LSD radix sort of u32 keys (and key-value pairs), top-k."""
