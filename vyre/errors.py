"""Typed exceptions for vyre. Every failure the library reports is one of these.

Hierarchy::

    VyreError
    ├── ValidationError          (program rejected before lowering; carries .issues)
    ├── LoweringError            (program could not be turned into WGSL)
    └── BackendError
        ├── NoAdapterError
        ├── DispatchError        (bad inputs / config, or the GPU rejected the work)
        ├── DeviceLostError
        ├── OutOfMemoryError
        └── UnsupportedFeatureError

Each class has a stable ``code`` string (``VYRE-E...``) that tools can match on.
"""

from __future__ import annotations

from dataclasses import dataclass


class VyreError(Exception):
    """Base class of every vyre error."""

    code = "VYRE-E000"

    def __init__(self, message: str, *, fix: str | None = None):
        self.message = message
        self.fix = fix
        text = message if fix is None else f"{message}\nFix: {fix}"
        super().__init__(text)

    def __reduce__(self):
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
    code = "VYRE-E100"

    def __init__(self, program_name: str, issues: list[ValidationIssue]):
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
    A ValidationError with one issue; also a TypeError, which such misuse raised before."""

    code = "VYRE-E101"


class LoweringError(VyreError):
    code = "VYRE-E200"


class BackendError(VyreError):
    code = "VYRE-E300"


class NoAdapterError(BackendError):
    code = "VYRE-E301"


class DispatchError(BackendError):
    code = "VYRE-E302"


class DeviceLostError(BackendError):
    code = "VYRE-E303"


class OutOfMemoryError(BackendError):
    code = "VYRE-E304"


class UnsupportedFeatureError(BackendError):
    code = "VYRE-E305"


__all__ = [
    "VyreError",
    "ValidationIssue",
    "ValidationError",
    "BuilderError",
    "LoweringError",
    "BackendError",
    "NoAdapterError",
    "DispatchError",
    "DeviceLostError",
    "OutOfMemoryError",
    "UnsupportedFeatureError",
]
