"""Interop with other WebGPU code: ``arr.wgpu_buffer`` and arrays over buffers of a shared device.
"""

from __future__ import annotations

__all__: list[str] = []
