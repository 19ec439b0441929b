"""The WebGPU backend (wgpu-py). Importing this package imports neither wgpu nor touches an adapter:
that happens in :meth:`WgpuBackend.acquire`."""

from __future__ import annotations

from .backend import WgpuBackend

__all__ = ["WgpuBackend"]
