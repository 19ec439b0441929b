"""Reductions (sum, prod, min, max, argmax, mean) over a whole buffer or along an axis, and histogram."""
