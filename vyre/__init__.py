"""vyre: a WebGPU compute runtime with a typed IR compiler.

Importing vyre does no work: the GPU backend (and wgpu) load on first use.
"""

from __future__ import annotations

from importlib import import_module

__version__ = "0.1.0"

_LAZY = {
    "ProgramBuilder": ("vyre.ir.builder", "ProgramBuilder"),
    "Program": ("vyre.ir.program", "Program"),
    "BufferDecl": ("vyre.ir.program", "BufferDecl"),
    "WorkgroupDecl": ("vyre.ir.program", "WorkgroupDecl"),
    "DataType": ("vyre.ir.types", "DataType"),
    "Access": ("vyre.ir.types", "Access"),
    "validate": ("vyre.ir.validate", "validate"),
    "lower": ("vyre.lower", "lower"),
    "DispatchConfig": ("vyre.backends.config", "DispatchConfig"),
    "ReferenceBackend": ("vyre.backends.reference", "ReferenceBackend"),
    "WgpuBackend": ("vyre.backends.wgpu", "WgpuBackend"),
    "errors": ("vyre.errors", None),
}

__all__ = ["__version__", *_LAZY]


def __getattr__(name: str):
    try:
        module, attr = _LAZY[name]
    except KeyError:
        raise AttributeError(f"module 'vyre' has no attribute {name!r}") from None
    mod = import_module(module)
    value = mod if attr is None else getattr(mod, attr)
    globals()[name] = value
    return value


def __dir__():
    return sorted(__all__)
