"""Typed exceptions for vyre. Every failure the library reports is one of these.

Hierarchy::

    VyreError
    ├── ValidationError          (program rejected before lowering; carries .issues)
    │   ├── BuilderError
    │   └── KernelError          (a @vyre.kernel function could not be translated)
    ├── LoweringError            (program could not be turned into WGSL)
    └── BackendError
        ├── NoAdapterError
        ├── DispatchError        (bad inputs / config, or the GPU rejected the work)
        ├── DeviceLostError
        ├── OutOfMemoryError
        ├── UnsupportedFeatureError
        └── DistributedError     (vyre.distributed: a worker could not run its share)
            └── WorkerTimeoutError
    (and TraceError, beside them: vyre.compile refused to trace what a replay could not repeat)

Each class has a stable ``code`` string (``VYRE-E...``) that tools can match on.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


class VyreError(Exception):
    """Base class of every vyre error: ``except VyreError`` catches everything vyre reports.

    Every error has a stable ``code`` (``VYRE-E...``), the ``message`` and a ``fix`` hint (``None`` where
    there is none to give); ``str(err)`` is the message followed by a ``Fix:`` line.

    Typical fix: read the ``Fix:`` line of the message; catch a subclass to handle one kind of failure.
    """

    code = "VYRE-E000"

    def __init__(self, message: str, *, fix: str | None = None) -> None:
        self.message = message
        self.fix = fix
        text = message if fix is None else f"{message}\nFix: {fix}"
        super().__init__(text)

    def __reduce__(self) -> tuple[Callable[..., VyreError], tuple[type[VyreError], tuple, dict]]:
        # Exception's default pickling calls ``cls(*args)``, which subclasses with other
        # constructor signatures (ValidationError) cannot take: rebuild without __init__.
        return (_restore, (type(self), self.args, dict(self.__dict__)))


def _restore(cls: type[VyreError], args: tuple, state: dict) -> VyreError:
    err = cls.__new__(cls)
    Exception.__init__(err, *args)
    err.__dict__.update(state)
    return err


@dataclass(frozen=True)
class ValidationIssue:
    """One problem found by the validator.

    ``path`` locates the node (e.g. ``body[3].then[0].value``), ``node`` is its
    text form, ``message`` says what is wrong and ``fix`` how to repair it.
    """

    rule: str
    path: str
    node: str
    message: str
    fix: str

    def __str__(self) -> str:
        return f"[{self.rule}] at {self.path}: {self.message}\n    node: {self.node}\n    Fix: {self.fix}"


class ValidationError(VyreError):
    """The program was rejected before lowering: the validator (``b.build()``, ``vyre.validate``, every
    dispatch) found one or more problems, or wire data (``Program.from_wire``) was malformed.

    ``.issues`` lists every problem as a :class:`ValidationIssue` (its ``rule``, the node's ``path`` and text
    form, the message and a fix); ``.rules`` is the list of their rule ids (``vyre.ir.validate.RULES``).

    Typical fix: follow each issue's ``Fix:`` line; the path (``body[3].then[0].value``) says which
    statement of the program it is about.
    """

    code = "VYRE-E100"

    def __init__(self, program_name: str, issues: list[ValidationIssue]) -> None:
        self.program_name = program_name
        self.issues = list(issues)
        head = f"program {program_name!r} failed validation with {len(self.issues)} error(s):"
        body = "\n".join(f"  {i + 1}. {issue}" for i, issue in enumerate(self.issues))
        super().__init__(f"{head}\n{body}")

    @property
    def rules(self) -> list[str]:
        return [i.rule for i in self.issues]


class BuilderError(ValidationError, TypeError):
    """The builder (:class:`vyre.ProgramBuilder` and its values) was given a bad argument (a wrong type,
    a float where an int is needed, an unknown name) or used out of order (``else_`` without ``if_``).
    A ValidationError with one issue; also a TypeError, which such misuse raised before.

    Typical fix: pass what the message asks for (a dtype name such as ``"f32"``, an int index, a
    ``ProgramBuilder`` value); use ``b.if_``/``b.select`` and ``&``/``|``/``~`` instead of Python's
    ``if``/``and``/``or``/``not`` on builder values; put ``else_`` directly after its ``if_`` block.
    """

    code = "VYRE-E101"


class KernelError(ValidationError):
    """A ``@vyre.kernel`` (or ``@vyre.func``) function could not be turned into a program: it uses Python
    that vyre does not translate (a closure, an arbitrary call, ``try``, a comprehension...), mixes types
    without a cast, or the program built from it failed validation. The message names the kernel, the file
    and line of the offending code and quotes it: ``kernel blur, blur.py:12: `a / b`: ...``.

    ``.kernel``, ``.filename``, ``.line`` and ``.segment`` hold those parts; ``.issues`` has one issue
    (rule ``"kernel"``, path ``file:line``), or the validator's issues for a program that failed validation.

    Typical fix: change the quoted source as the ``Fix:`` line says (e.g. ``f32(i)`` to mix an int with a
    float, ``a // b`` for integer division); the accepted Python is listed in :mod:`vyre.frontend`.
    """

    code = "VYRE-E102"

    def __init__(self, program_name: str, issues: list[ValidationIssue], *, filename: str = "", line: int = 0,
                 segment: str = "", message: str | None = None, fix: str | None = None) -> None:
        """``KernelError(kernel, issues)`` like any ValidationError; with ``message`` (and ``filename``,
        ``line``, ``segment``, ``fix``) the message points at the source: see :meth:`at`."""
        if message is None:
            super().__init__(program_name, issues)
        else:
            self.program_name, self.issues = program_name, list(issues)
            where = f"kernel {program_name}, {filename}:{line}"
            VyreError.__init__(self, f"{where}: `{segment}`: {message}" if segment else f"{where}: {message}",
                               fix=fix)
        self.kernel, self.filename, self.line, self.segment = program_name, filename, line, segment

    @classmethod
    def at(cls, kernel: str, filename: str, line: int, segment: str, message: str, fix: str,
           issues: list[ValidationIssue] | None = None) -> KernelError:
        """The error of kernel ``kernel`` at ``filename:line``, quoting ``segment`` of its source; its one
        issue (rule ``"kernel"``) says the same, unless ``issues`` (a validator's) are given."""
        found = list(issues) if issues else [ValidationIssue("kernel", f"{filename}:{line}", segment, message, fix)]
        return cls(kernel, found, filename=filename, line=line, segment=segment, message=message, fix=fix)


class LoweringError(VyreError):
    """The program could not be turned into WGSL, or the GPU's shader compiler rejected the WGSL vyre
    generated (a vyre bug, or a driver that rejects valid WGSL).

    Typical fix: follow the ``Fix:`` line; a rejection of generated WGSL quotes the offending WGSL line:
    please report it with ``program.to_text()``, the WGSL (``vyre.lower.lower(program).wgsl``) and the adapter.
    """
    code = "VYRE-E200"


class BackendError(VyreError):
    """A backend could not run the work: the base of the GPU-side errors below.

    Typical fix: see the subclass; ``except BackendError`` handles every runtime failure at once.
    """
    code = "VYRE-E300"


class NoAdapterError(BackendError):
    """No usable WebGPU adapter: no Vulkan/Metal/D3D12 driver, or ``VYRE_ADAPTER`` names none of them.

    Typical fix: install a driver (on Debian, ``apt-get install mesa-vulkan-drivers`` gives lavapipe, a
    Vulkan driver that runs on the CPU; ``make demo`` and ``make test`` install it), or set
    ``VYRE_ADAPTER`` to an index or a name substring of an adapter that exists.
    """
    code = "VYRE-E301"


class DispatchError(BackendError):
    """Bad inputs or configuration for a dispatch (wrong number, dtype or shape of arrays, a bad grid or
    count, a freed or misused resident handle, a default grid that could cover only part of the work), or
    the GPU rejected the work. Raised before any GPU work where the inputs are at fault.

    Typical fix: pass what the ``Fix:`` line says: one array per input buffer in binding order (or a
    dict by name) with the buffer's exact dtype, ``DispatchConfig(grid=...)`` for 2-D/3-D programs,
    ``counts={name: n}`` for runtime-sized ``write`` buffers.
    """
    code = "VYRE-E302"


class DeviceLostError(BackendError):
    """The GPU device was lost (a driver reset, a shader running past the driver's watchdog, the device
    removed); the work in flight and the device's resident buffers are gone.

    Typical fix: ``backend.try_recover()`` or a new backend (``WgpuBackend.acquire()``), then upload the
    resident data again; if it recurs, split long-running work into several dispatches.
    """
    code = "VYRE-E303"


class OutOfMemoryError(BackendError):
    """The GPU ran out of memory for buffers or pipelines.

    Typical fix: use smaller buffers or split the work into several dispatches; ``backend.clear_cache()``
    frees pooled buffers, ``free_resident`` releases resident ones.
    """
    code = "VYRE-E304"


class UnsupportedFeatureError(BackendError):
    """The program or call needs something the adapter does not offer (f16 without ``shader-f16``,
    subgroups, timestamps), or an escape hatch was given something it does not handle.

    Typical fix: check ``backend.supports_f16()`` and friends first and fall back (f32 instead of f16),
    or run on an adapter that has the feature (``VYRE_ADAPTER``).
    """
    code = "VYRE-E305"


class UnsupportedDTypeError(UnsupportedFeatureError):
    """A :mod:`vyre.array_api` data type vyre cannot hold: int8/int16/uint8/uint16 (WGSL has no such
    storage), float16 on a backend without ``shader-f16``, float64 and complex128 without ``shader-f64``,
    int64/uint64 without ``shader-int64``, or a numpy array of such a dtype given to ``asarray`` (never
    narrowed silently). Raised before any GPU work.

    Typical fix: convert on the host first (``np_array.astype(np.float32)``), or pass ``dtype=float32``;
    check ``backend.capabilities()`` (``f16``, ``f64``, ``int64``) or ``__array_namespace_info__().dtypes()``.
    """
    code = "VYRE-E306"


class InvalidArgumentError(DispatchError, ValueError):
    """An argument of the right type with a value vyre cannot take (a negative size, a shape that does not
    broadcast, an out-of-range scalar, a path that leaves the output folder): the call changed nothing.
    It is also a ``ValueError``, so Python code and the array API standard's tests catch it as they expect.

    Typical fix: pass a value inside the range the message names; the ``Fix:`` line says which.
    """
    code = "VYRE-E310"


class ArgumentTypeError(InvalidArgumentError, TypeError):
    """An argument of a type vyre does not accept there (a float where a shape is expected, a string where a
    backend is expected, an object a kernel cannot read). Also a ``TypeError`` (and a ``ValueError``).

    Typical fix: pass the type the message names (an int shape, a backend object from
    ``vyre.WgpuBackend.acquire()``, a numpy array or a Python scalar).
    """
    code = "VYRE-E311"


class IndexOutOfRangeError(InvalidArgumentError, IndexError):
    """An index past the end of an axis (``x[10]`` on 3 elements, ``take`` with an index past the axis).
    Also an ``IndexError`` (so iterating over an array stops at its end) and a ``ValueError``.

    Typical fix: index inside ``[-n, n)`` for an axis of n elements.
    """
    code = "VYRE-E312"


class AxisError(InvalidArgumentError, IndexError):
    """An ``axis`` argument outside ``[-ndim, ndim)``, or named twice. Both a ``ValueError`` and an
    ``IndexError``, as numpy's ``AxisError`` is.

    Typical fix: pass an axis inside ``[-ndim, ndim)``, each at most once.
    """
    code = "VYRE-E313"


class DeviceMismatchError(DispatchError):
    """An array operation mixed arrays of two backends (``vyre.array_api`` arrays never move silently).

    Typical fix: move one with ``x.to_device(y.device)``, or create both inside one ``with vyre.use(backend):``.
    """
    code = "VYRE-E307"


class DistributedError(BackendError):
    """:mod:`vyre.distributed` could not get a share of the work done: a worker actor died and could not be
    restarted, Ray is not installed or not running, no worker could be placed (no node offers the
    ``vyre_adapter`` resource), or a program arrived whose wire bytes do not match its fingerprint.
    Errors of the work itself (a ``DispatchError``, a ``ValidationError``) come back as themselves.

    Typical fix: ``pip install 'vyre[distributed]'``; start nodes with ``ray start --resources
    '{"vyre_adapter": N}'`` (N = the node's adapters); ``pool.stats()`` shows which workers are alive.
    """
    code = "VYRE-E308"


class WorkerTimeoutError(DistributedError):
    """A :mod:`vyre.distributed` worker did not answer within the pool's ``timeout_s`` (a hung device, an
    overloaded node, a network partition): vyre never waits for ever on a worker.

    Typical fix: raise ``timeout_s`` for long work (``local_pool(timeout_s=...)``/``Pool(timeout_s=...)``), or
    split the batch; check the node with ``pool.stats()``.
    """
    code = "VYRE-E309"


class StaleCaptureError(DispatchError):
    """A captured resident sequence binds a handle that was freed after the capture (for vyre.compile: an
    array the traced function closed over was collected or given a new buffer), so it cannot run again.
    vyre.compile traces again when it meets this; a direct user of ``capture_resident_sequence`` captures
    again.

    Typical fix: keep the arrays a compiled function reads alive, or pass them as arguments.
    """
    code = "VYRE-E314"


class TraceError(VyreError, TypeError):
    """A function given to :func:`vyre.compile` did something a replay could not repeat: it read array values
    on the host while being traced (``float(x)``, ``bool(x)``, ``if x.sum() > 0:``, ``np.asarray(x)``, a result
    whose shape depends on the data such as ``nonzero`` or boolean indexing), ran host-in/host-out work
    (``backend.dispatch``, ``vyre.ops`` on numpy arrays), or took an argument that cannot be part of a
    signature. It is raised while tracing, before anything is cached: nothing is ever replayed wrongly. Also a
    ``TypeError``, as JAX's concretization errors are.

    Typical fix: keep data-dependent Python outside the compiled function (or select with
    ``vyre.array.where``), return the arrays and read them after the call.
    """
    code = "VYRE-E400"


__all__ = [
    "VyreError",
    "ValidationIssue",
    "ValidationError",
    "BuilderError",
    "KernelError",
    "LoweringError",
    "BackendError",
    "NoAdapterError",
    "DispatchError",
    "DeviceLostError",
    "OutOfMemoryError",
    "UnsupportedFeatureError",
    "UnsupportedDTypeError",
    "InvalidArgumentError",
    "ArgumentTypeError",
    "IndexOutOfRangeError",
    "AxisError",
    "DeviceMismatchError",
    "DistributedError",
    "WorkerTimeoutError",
    "StaleCaptureError",
    "TraceError",
]
