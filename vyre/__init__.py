"""vyre: a WebGPU compute runtime with a typed IR compiler.

Importing vyre does no work: the GPU backend (and wgpu) load on first use.
"""

from __future__ import annotations

from importlib import import_module

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (~5 ms, more than the rest of vyre)
if TYPE_CHECKING:
    from typing import Any

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
    "default_backend": ("vyre.backends.default", "default_backend"),
    # trace once, replay as one submission (vyre/trace)
    "compile": ("vyre.trace.api", "compile"),
    # training: gradients (vyre/autograd), counter-based random numbers (vyre/random)
    "autograd": ("vyre.autograd", None),
    "amp": ("vyre.amp", None),
    "grad": ("vyre.autograd", "grad"),
    "value_and_grad": ("vyre.autograd", "value_and_grad"),
    "random": ("vyre.random", None),
    # device arrays (vyre/array; vyre.array_api is an alias of vyre.array)
    "Array": ("vyre.array._array", "Array"),
    "array_api": ("vyre.array", None),
    "use": ("vyre.array._device", "use"),
    "asarray": ("vyre.array", "asarray"),  # the namespace's (recorded by a GradientTape)
    # @vyre.kernel front end (vyre/frontend): the decorator, annotations and the intrinsics of kernel bodies
    "kernel": ("vyre.frontend.decorator", "kernel"),
    "Kernel": ("vyre.frontend.decorator", "Kernel"),
    "func": ("vyre.frontend.funcs", "func"),
    **{n: ("vyre.frontend.types", n) for n in ("In", "Out", "InOut", "f32", "f16", "i32", "u32", "bool_")},
    **{n: ("vyre.frontend.intrinsics", n) for n in (
        "tid", "tid2", "tid3", "local_id", "group_id", "shared", "barrier", "select", "fma", "pow", "bitcast",
        "sqrt", "rsqrt", "exp", "exp2", "log", "log2", "sin", "cos", "tan", "tanh", "floor", "ceil", "round",
        "trunc", "fract", "sign", "popcount", "reverse_bits", "clz", "ctz", "atomic_add", "atomic_sub",
        "atomic_min", "atomic_max", "atomic_and", "atomic_or", "atomic_xor", "atomic_exchange", "atomic_load",
        "atomic_cas")},
}

__all__ = ["__version__", *_LAZY]


def __getattr__(name: str) -> Any:
    try:
        module, attr = _LAZY[name]
    except KeyError:
        raise AttributeError(f"module 'vyre' has no attribute {name!r}") from None
    mod = import_module(module)
    value = mod if attr is None else getattr(mod, attr)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
