"""Elementwise ops: map.* (unary), zip.* (binary, broadcasting), nn.gelu/nn.silu, bits.*."""
