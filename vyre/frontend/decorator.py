"""The ``@vyre.kernel`` decorator and the :class:`Kernel` it returns: specialization cache, launch,
``program()`` and ``wgsl()``."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, overload

import numpy as np

from ..errors import ArgumentTypeError
from ..ir.adjoint import Adjoint
from ..ir.program import Program
from . import diff
from .build import Spec, build_program, param_annotations
from .launch import backend_for, bind, check_backend, check_dim, run
from .source import Source
from .types import ArrayType, DType

if TYPE_CHECKING:
    from ..backends.base import Backend



class Kernel:
    """A Python function translated to vyre Programs, one per specialization.

    Launch with ``k.launch(dim=..., inputs=[...], backend=...)`` or ``k[dim](*args, backend=...)``.
    """

    def __init__(self, fn: Callable[..., Any], workgroup_size: int | tuple[int, ...] | None = None,
                 differentiable: bool = False) -> None:
        if not isinstance(differentiable, bool):
            raise ArgumentTypeError(f"differentiable={differentiable!r:.40} is not a bool",
                                    fix="write @vyre.kernel(differentiable=True)")
        self.fn = fn
        self.differentiable = differentiable
        self.__name__ = fn.__name__
        self.__doc__ = fn.__doc__
        self.__wrapped__ = fn
        self.source = Source(fn, "kernel")
        self.params: list[tuple[str, ArrayType | DType]] = param_annotations(self.source)
        self.workgroup_size = None if workgroup_size is None else _ws(workgroup_size)
        self._lock = threading.Lock()
        self._cache: dict[tuple[str, Spec], Program] = {}
        self._origins: dict[tuple[str, Spec], diff.Origin] = {}
        self._adjoints: dict[tuple[str, Spec, frozenset[str]], Adjoint] = {}
        self._builds = 0
        self._hits = 0

    def __repr__(self) -> str:
        return f"<vyre.kernel {self.__name__}({', '.join(f'{n}: {a!r}' for n, a in self.params)})>"

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise ArgumentTypeError(f"kernel {self.__name__} is launched over the shape of the work, not called",
                                fix=f"write {self.__name__}[n](...) or {self.__name__}.launch(dim=n, inputs=[...])")

    # ---- specialization ----
    def _specialize(self, spec: Spec) -> Program:
        key = (self.source.hash, spec)
        with self._lock:  # one build per key, even when several threads launch at once
            program = self._cache.get(key)
            if program is not None:
                self._hits += 1
                return program
            origin: diff.Origin = {}
            program = build_program(self.source, spec, origin)
            if self.differentiable:  # refused constructs fail the first launch, not the backward pass
                self._origins[key] = origin
                self._adjoints[(*key, frozenset())] = diff.adjoint_of(self.__name__, self.source, program,
                                                                      origin, frozenset())
            self._cache[key] = program
            self._builds += 1
            return program

    def _adjoint(self, spec: Spec, program: Program, dims: tuple[int, ...]) -> Adjoint:
        """The adjoint of the specialization for a launch of ``dims``: plain adds where each thread's index
        is its own over these dims, compare-exchange adds for the other arrays."""
        if not self.differentiable:
            raise ArgumentTypeError(f"kernel {self.__name__} is not differentiable",
                                    fix="decorate it with @vyre.kernel(differentiable=True)")
        key = (self.source.hash, spec)
        with self._lock:
            adj = self._adjoints[(*key, frozenset())]
            bad = adj.one_to_one(dims)
            if not bad:
                return adj
            found = self._adjoints.get((*key, bad))
            if found is None:
                found = self._adjoints[(*key, bad)] = diff.adjoint_of(self.__name__, self.source, program,
                                                                      self._origins[key], bad)
            return found

    def adjoint(self, *args: Any, dim: Any, **named: Any) -> Program:
        """The adjoint Program of :meth:`program` for these arguments and ``dim`` (differentiable kernels)."""
        dims = check_dim(self.__name__, dim)
        bound = bind(self.__name__, self.params, named or args, dims, self.workgroup_size)
        program = self._specialize(bound.spec)
        return self._adjoint(bound.spec, program, dims).program

    def vjp(self, dim: Any, inputs: Any, grads: Any, backend: Backend | None = None) -> dict[str, np.ndarray]:
        """The vector-Jacobian product of one launch on numpy arrays: ``grads`` gives the gradient reaching
        each float Out parameter (a dict by name, or a list in order); the result maps each float In
        parameter's name to its gradient (the forward is not run: Out arguments are only shapes)."""
        check_backend(self.__name__, backend)
        dims = check_dim(self.__name__, dim)
        bound = bind(self.__name__, self.params, inputs, dims, self.workgroup_size)
        if bound.resident:
            raise ArgumentTypeError(f"kernel {self.__name__}: vjp takes numpy arrays",
                                    fix="launch on vyre Arrays inside a vyre.autograd.GradientTape instead")
        program = self._specialize(bound.spec)
        self._adjoint(bound.spec, program, dims)  # a non-differentiable kernel fails before any work
        return diff.vjp_numpy(self, program, bound, dims, backend_for(self.__name__, bound, backend), grads)

    def cache_info(self) -> dict[str, int]:
        """``builds`` (programs translated), ``hits`` (launches that reused one) and ``entries``."""
        with self._lock:
            return {"builds": self._builds, "hits": self._hits, "entries": len(self._cache)}

    def program(self, *args: Any, dim: Any, **named: Any) -> Program:
        """The Program this kernel runs for these arguments (types and shapes) and launch ``dim``."""
        dims = check_dim(self.__name__, dim)
        bound = bind(self.__name__, self.params, named or args, dims, self.workgroup_size)
        return self._specialize(bound.spec)

    def wgsl(self, *args: Any, dim: Any, backend: Backend | None = None, **named: Any) -> str:
        """The WGSL of :meth:`program` for these arguments, as ``backend.compile`` lowers it (default: the
        reference backend's lowering, which is the GPU's)."""
        check_backend(self.__name__, backend)
        program = self.program(*args, dim=dim, **named)
        if backend is None:
            from ..backends.reference import ReferenceBackend  # why: import time (the interpreter, ~14 modules)
            backend = ReferenceBackend()
        return str(backend.compile(program).wgsl)

    # ---- launch ----
    def launch(self, dim: Any, inputs: Any = (), backend: Backend | None = None) -> list[np.ndarray] | None:
        """Run one thread per point of ``dim`` (an int, or a tuple of 1-3 ints >= 1; else an
        ArgumentTypeError or InvalidArgumentError, both DispatchErrors).

        ``inputs``: one value per parameter in order, or a dict by name: numpy arrays of the annotated
        dtype for array parameters (``Out`` contents are not read), plain numbers for scalars. Returns,
        like ``backend.dispatch``, one array per ``Out``/``InOut`` parameter in parameter order, shaped
        like the argument; a writeable numpy argument is also filled in place (and is the array returned),
        a strided view such as ``big[::2]`` included: the results are written through it. With
        ResidentHandles (``handle`` or ``(handle, shape)``) for every array the kernel runs by
        ``dispatch_resident`` (no host copies) and returns None.
        ``backend`` defaults to :func:`vyre.default_backend`; anything but None or a backend object (a
        string such as ``"gpu"``) is an ArgumentTypeError. Bad arguments raise before any work, as the
        builtin errors Python code expects: ArgumentTypeError (a TypeError: wrong count, dtype or kind of
        argument) or InvalidArgumentError (a ValueError: a value out of range, a bad shape).
        """
        check_backend(self.__name__, backend)
        dims = check_dim(self.__name__, dim)
        bound = bind(self.__name__, self.params, inputs, dims, self.workgroup_size)
        program = self._specialize(bound.spec)
        backend = backend_for(self.__name__, bound, backend)
        # the backend's shared params uniform of these words: a repeated launch uploads none
        handle = backend.params_handle(_padded(bound.words)) if bound.resident else None
        result = run(self.__name__, program, bound, dims, backend, handle)
        if bound.device is not None:  # on a tape: a differentiable kernel's node, or one refusing a gradient
            diff.record(self, program, bound, dims, backend)
        return result

    def __getitem__(self, dim: Any) -> _Launcher:
        return _Launcher(self, dim)


class _Launcher:
    """``kernel[dim]``: call it with the arguments (and ``backend=``) to launch."""

    def __init__(self, kernel: Kernel, dim: Any) -> None:
        self.kernel, self.dim = kernel, dim

    def __call__(self, *args: Any, backend: Backend | None = None, **named: Any) -> list[np.ndarray] | None:
        if args and named:
            raise ArgumentTypeError(f"kernel {self.kernel.__name__}: pass the arguments by position or by name, "
                                    "not both", fix="e.g. k[n](x, y, 2.0)")
        return self.kernel.launch(self.dim, named or args, backend=backend)


def _ws(ws: int | tuple[int, ...]) -> tuple[int, int, int]:
    dims = (ws,) if isinstance(ws, int) else tuple(ws)
    if not 1 <= len(dims) <= 3 or not all(isinstance(d, int) and d >= 1 for d in dims):
        raise ArgumentTypeError(f"invalid workgroup_size {ws!r}", fix="an int or a tuple of 1-3 ints >= 1")
    x, y, z = dims + (1,) * (3 - len(dims))
    return (x, y, z)


@overload
def kernel(fn: Callable[..., Any], *, workgroup_size: int | tuple[int, ...] | None = None,
           differentiable: bool = False) -> Kernel: ...
@overload
def kernel(fn: None = None, *, workgroup_size: int | tuple[int, ...] | None = None,
           differentiable: bool = False) -> Callable[[Callable[..., Any]], Kernel]: ...
def kernel(fn: Callable[..., Any] | None = None, *, workgroup_size: int | tuple[int, ...] | None = None,
           differentiable: bool = False) -> Kernel | Callable[[Callable[..., Any]], Kernel]:
    """Translate ``fn`` (typed parameters, see :mod:`vyre.frontend`) into a launchable :class:`Kernel`.

    ``@vyre.kernel`` or ``@vyre.kernel(workgroup_size=(8, 8))`` (default per launch rank: 256,
    (16, 16), (8, 8, 4)). The source is read and checked now (parameters); the body is translated at
    the first launch for each set of argument types. ``differentiable=True``: the adjoint is generated
    too (docs/differentiable.md), launches on vyre Arrays are recorded by gradient tapes, and
    :meth:`Kernel.vjp` runs the adjoint on numpy arrays."""
    if fn is None:
        return lambda f: Kernel(f, workgroup_size, differentiable)
    return Kernel(fn, workgroup_size, differentiable)


def _padded(words: np.ndarray) -> bytes:
    """The params words zero-padded to whole 16-byte rows (a uniform's size)."""
    padded = np.zeros(max(4, -(-words.size // 4) * 4), np.uint32)
    padded[: words.size] = words
    return padded.tobytes()


__all__ = ["Kernel", "kernel"]

