"""Names for wgpu-py's objects in annotations.

wgpu-py ships no type information (no ``py.typed``, no stubs) and its objects wrap cffi
handles, so every one of them is ``Any`` to mypy. These aliases say which object a value is
(in one place, instead of a bare ``Any`` at each use); they check nothing. Importing this module
does not import wgpu.
"""

from __future__ import annotations

from typing import Any, TypeAlias

GPUAdapter: TypeAlias = Any
GPUDevice: TypeAlias = Any
GPUQueue: TypeAlias = Any
GPUBuffer: TypeAlias = Any
GPUBindGroup: TypeAlias = Any
GPUBindGroupLayout: TypeAlias = Any
GPUPipelineLayout: TypeAlias = Any
GPUComputePipeline: TypeAlias = Any
GPUShaderModule: TypeAlias = Any
GPUQuerySet: TypeAlias = Any
GPUCommandEncoder: TypeAlias = Any
GPUCommandBuffer: TypeAlias = Any
#: a ``wgpu.BufferUsage`` flag combination (an int-like enum flag)
BufferUsage: TypeAlias = Any
#: a C handle or struct of wgpu-native (a cffi ``CData``), only in :mod:`.native`
CData: TypeAlias = Any

__all__ = ["GPUAdapter", "GPUDevice", "GPUQueue", "GPUBuffer", "GPUBindGroup", "GPUBindGroupLayout",
           "GPUPipelineLayout", "GPUComputePipeline", "GPUShaderModule", "GPUQuerySet", "GPUCommandEncoder",
           "GPUCommandBuffer", "BufferUsage", "CData"]
