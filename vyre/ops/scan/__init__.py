"""Prefix scans (inclusive and exclusive sums), multi-block, any length."""
