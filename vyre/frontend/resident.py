"""What a kernel launch needs of an array argument that lives on a backend (a ``vyre.Array``): the seam
between the front end and :mod:`vyre.array`, checked structurally so that the front end never imports
vyre.array (a program that launches kernels on numpy arrays never loads it).

A launch asks three things of such an argument:

* is it a resident array? :func:`is_resident_array`: its class has every member of
  :class:`ResidentArray` (``dtype``, ``shape``, ``ndim``, ``size``, ``device``, ``handle``, ``evaluate``);
* its buffer for reading: ``a.handle`` (a pending expression is evaluated first);
* its buffer for writing in place: :func:`write_handle`, which calls ``a.__vyre_write_handle__()`` when the
  class has it (see :class:`WritableResidentArray`; vyre.Array does), else an ArgumentTypeError.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, TypeGuard

import numpy as np

from ..backends.handles import ResidentHandle
from ..errors import ArgumentTypeError

if TYPE_CHECKING:
    from ..backends.base import Backend


class ResidentArray(Protocol):
    """An n-d array held in one resident buffer of one backend (``vyre.Array`` is one), in the storage
    layout of :mod:`vyre.backends.host`, row-major. Not runtime-checkable on purpose: ``isinstance`` with
    a protocol reads ``handle`` on Python 3.11, evaluating the array; :func:`is_resident_array` checks."""

    @property
    def dtype(self) -> np.dtype: ...
    @property
    def shape(self) -> tuple[int, ...]: ...
    @property
    def ndim(self) -> int: ...
    @property
    def size(self) -> int: ...
    @property
    def device(self) -> Backend:
        """The backend holding the buffer (the launch runs there)."""
        ...
    @property
    def handle(self) -> ResidentHandle:
        """The buffer holding the values, to read (pending work is evaluated first)."""
        ...
    def evaluate(self) -> object:
        """Materialise pending work (returns without waiting for the device)."""
        ...


class WritableResidentArray(ResidentArray, Protocol):
    """A resident array a kernel may write in place through ``__vyre_write_handle__``."""

    def __vyre_write_handle__(self) -> ResidentHandle:
        """The buffer a kernel writes this array's new values into: evaluated, and owned by this array
        alone, so expressions recorded before the launch (which read its old buffer) keep the old values.
        The array's buffer afterwards holds whatever the kernel leaves in it."""
        ...


#: The members :func:`is_resident_array` looks for on the argument's class.
_MEMBERS = ("dtype", "shape", "ndim", "size", "device", "handle", "evaluate")
_KNOWN: dict[type, bool] = {}  # class -> has every member (classes are few; checked once each)


def is_resident_array(v: object) -> TypeGuard[ResidentArray]:
    """Whether ``v``'s class has every member of :class:`ResidentArray` (looked up on the class, so no
    property runs: an unevaluated array stays unevaluated). numpy arrays (no ``handle``) and
    ResidentHandles (no ``dtype``) are not."""
    cls = type(v)
    known = _KNOWN.get(cls)
    if known is None:
        known = _KNOWN[cls] = all(hasattr(cls, m) for m in _MEMBERS)
    return known


def write_handle(a: ResidentArray, what: str) -> ResidentHandle:
    """The handle to bind for a resident array that a kernel writes (an Out/InOut parameter); a resident
    array whose class has no ``__vyre_write_handle__`` cannot be written in place (ArgumentTypeError)."""
    method = getattr(type(a), "__vyre_write_handle__", None)  # on the class: a WritableResidentArray
    if method is None:
        raise ArgumentTypeError(f"{what}: a {type(a).__name__} cannot be written in place (its class has no "
                                "__vyre_write_handle__)", fix="pass it to an In parameter, or write into a vyre Array")
    handle: ResidentHandle = method(a)
    return handle


__all__ = ["ResidentArray", "WritableResidentArray", "is_resident_array", "write_handle"]
