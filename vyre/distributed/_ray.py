"""The one place that imports Ray: a clear error when it is missing, and Ray's exceptions as vyre's.

Nothing here runs at ``import vyre`` or ``import vyre.distributed``: Ray loads when a pool starts.
"""

from __future__ import annotations

import copy
from typing import Any

from ..errors import DistributedError, VyreError, WorkerTimeoutError

INSTALL_FIX = "pip install 'vyre[distributed]' (Ray 2.60)"


def ray() -> Any:
    """The ``ray`` module, or DistributedError saying how to install it."""
    try:
        import ray as _ray  # why: optional dependency (vyre[distributed]), loaded when a pool starts
    except ImportError as exc:
        raise DistributedError(f"vyre.distributed needs Ray, which is not installed ({exc})",
                               fix=INSTALL_FIX) from None
    return _ray


def is_actor_death(exc: BaseException) -> bool:
    """True for the Ray errors that mean "the worker is gone": run its share elsewhere."""
    ex = ray().exceptions
    return isinstance(exc, (ex.RayActorError, ex.ActorUnavailableError, ex.WorkerCrashedError,
                            ex.ObjectLostError, ex.TaskCancelledError))


def from_worker(err: VyreError, where: str) -> VyreError:
    """A copy of ``err`` (same class, fix and attributes) whose message ends with ``(on worker <where>)``:
    the error a worker raised, as the caller gets it. ``.worker`` holds ``where``."""
    if getattr(err, "worker", None) is not None:  # annotated already (by the worker itself)
        return err
    out = copy.copy(err)  # VyreError.__reduce__: the same class, rebuilt without __init__
    out.message = f"{err.message} (on worker {where})"
    out.args = (out.message if err.fix is None else f"{out.message}\nFix: {err.fix}",)
    out.worker = where  # type: ignore[attr-defined]  # an attribute of this copy only
    out.__traceback__ = None
    return out


def as_vyre_error(exc: BaseException, what: str) -> VyreError:
    """A Ray exception raised while waiting for ``what`` as the vyre error the caller sees. A vyre error
    that a worker raised comes back as itself (Ray's ``RayTaskError(DispatchError)``, a subclass of both
    that carries the remote traceback, is unwrapped), its message naming the worker's host."""
    ex = ray().exceptions
    if isinstance(exc, ex.RayTaskError):  # before the VyreError test: Ray's wrapper subclasses the cause's class
        cause = getattr(exc, "cause", None)
        if isinstance(cause, VyreError):  # the worker raised a vyre error: give back that one
            ip = getattr(exc, "ip", None)  # Ray's RayTaskError(Cause) wrapper may not keep them
            if ip is None:
                cause.__traceback__ = None
                return cause
            return from_worker(cause, f"host {ip}, pid {getattr(exc, 'pid', '?')}")
        return DistributedError(f"{what}: the worker raised {type(cause).__name__ if cause else 'an error'}: "
                                f"{cause if cause is not None else exc}",
                                fix="a bug in vyre: please report it with the message above")
    if isinstance(exc, VyreError):
        return exc
    if isinstance(exc, ex.GetTimeoutError):
        return WorkerTimeoutError(f"{what}: no answer within the pool's timeout",
                                  fix="raise timeout_s (Pool/local_pool or the call's timeout_s) or split the work")
    return DistributedError(f"{what}: {type(exc).__name__}: {exc}",
                            fix="check the Ray cluster (`ray status`) and pool.stats(); restart the pool")
