"""The backend protocol every vyre backend implements (:class:`Backend`), and what a backend can do
(:class:`Capabilities`). A new backend implements every method; the conformance run picks it up."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import numpy as np

from ..errors import UnsupportedFeatureError, VyreError
from ..ir.program import Program
from .artifact import CompiledProgram
from .captured import CapturedSequence
from .config import DispatchConfig
from .handles import ResidentHandle
from .schedule import Pipeline


@dataclass(frozen=True)
class Capabilities:
    """What a backend can do, asked with ``backend.capabilities()`` instead of probing for methods.

    ``resident``: resident buffers (allocate/upload/download/dispatch_resident and sequences);
    ``native_pipelines``: ``run_pipeline`` keeps intermediates on the device in one submission
    (else it runs step by step through ``dispatch``); ``timestamps``: timed dispatches report
    GPU time; ``f16`` / ``subgroups`` / ``f64`` / ``int64``: programs may use them; ``async_dispatch``:
    ``dispatch_async`` overlaps with host work. Limits are the ones programs are validated against.
    """

    backend: str
    device: str
    resident: bool
    native_pipelines: bool
    timestamps: bool
    f16: bool
    subgroups: bool
    async_dispatch: bool
    max_storage_buffer_bytes: int
    max_workgroups_per_dimension: int
    max_workgroup_size: tuple[int, int, int]
    max_invocations_per_workgroup: int
    #: the 64-bit types (f64; i64 and u64), wgpu-native's shader-f64 / shader-int64 extensions
    f64: bool = False
    int64: bool = False
    #: storage buffers one kernel may bind (WebGPU's default is 8; the device may have more)
    max_storage_buffers_per_stage: int = 8


#: A byte range of a resident buffer: a whole handle, or ``(handle, byte offset, nbytes)``.
ResidentRange = ResidentHandle | tuple[ResidentHandle, int, int]
#: One upload: ``(handle, data)`` or ``(handle, data, byte offset)``; data is bytes, numpy or any buffer.
ResidentUpload = tuple[ResidentHandle, Any] | tuple[ResidentHandle, Any, int]
#: One step of a resident sequence: ``(program, handles)`` or ``(program, handles, grid)``, where
#: ``grid`` is an int, a tuple of up to three ints or a DispatchConfig (for ``counts``).
ResidentStep = tuple[Program, Sequence[ResidentHandle]] | tuple[Program, Sequence[ResidentHandle], Any]
#: One job of ``dispatch_batch``: ``(program, inputs)`` or ``(program, inputs, config)``.
BatchJob = tuple[Program, Any] | tuple[Program, Any, DispatchConfig | None]


@runtime_checkable
class Backend(Protocol):
    """What every vyre backend implements (WgpuBackend on a GPU, ReferenceBackend on the host).

    Data model: a program's buffers in binding order; ``inputs`` are numpy arrays (one per
    ``read``/``read_write``/``uniform`` buffer, in binding order, or a dict by name); outputs are
    numpy arrays (one per ``read_write``/``write`` buffer, in binding order). Resident buffers are
    raw bytes on the backend named by :class:`ResidentHandle`; their contents are in the storage
    layout of :mod:`vyre.backends.host` (bool as u32 words, vec3 padded to 4 components).

    Errors: every contract violation raises a typed :class:`vyre.errors.VyreError` (mostly
    :class:`~vyre.errors.DispatchError`) with a ``fix`` hint, raised by checks made before any work
    starts (a call that raises has changed nothing, unless stated otherwise). Invalid programs
    raise :class:`~vyre.errors.ValidationError`; programs needing a feature the backend lacks raise
    :class:`~vyre.errors.UnsupportedFeatureError`. A GPU backend raises
    :class:`~vyre.errors.DeviceLostError` when its device is gone (then also for handles made on it).

    A backend class may subclass this protocol: the methods after ``run_pipeline`` (what the front ends
    need beyond running programs) then have loud defaults that raise
    :class:`~vyre.errors.UnsupportedFeatureError`, as Rust vyre's backend trait does, never a silent
    stand-in.
    """

    #: Short backend name ("wgpu", "reference").
    name: str

    def capabilities(self) -> Capabilities:
        """What this backend can do, and the limits programs are validated against (see
        :class:`Capabilities`). Ask this instead of probing for methods: every backend has them all."""
        ...

    # ---- one-shot dispatch ----------------------------------------------------------------
    def dispatch(self, program: Program, inputs: Any = None,
                 config: DispatchConfig | None = None) -> list[np.ndarray]:
        """Run ``program`` once over fresh buffers: ``inputs`` as above (dtype and element count
        checked against the declarations), ``write`` buffers start at zero (their element count from
        ``config.counts``, the declaration, or the first input). ``config.grid`` is the logical grid
        (default: :func:`vyre.backends.host.default_grid`: one invocation per element of the program's
        ``grid_from`` buffer, else of the first writable buffer where that cannot cover only part of
        the work, else DispatchError). Returns the outputs."""
        ...

    def dispatch_batch(self, jobs: Iterable[BatchJob]) -> list[list[np.ndarray] | VyreError]:
        """Run independent jobs (each ``(program, inputs[, config])``); one result per job, in order:
        its list of outputs, or the VyreError that job raised (a malformed job gets a DispatchError).
        A bad job does not fail the others; raises only when the backend itself cannot run."""
        ...

    # ---- compiled programs ----------------------------------------------------------------
    def compile(self, program: Program, config: DispatchConfig | None = None) -> CompiledProgram:
        """Validate and lower ``program`` now; the artifact carries its WGSL and binding layout."""
        ...

    def dispatch_compiled(self, compiled: CompiledProgram, inputs: Any = None,
                          config: DispatchConfig | None = None) -> list[np.ndarray]:
        """``dispatch`` of a :class:`CompiledProgram` from :meth:`compile` (never lowers again).
        Anything else raises DispatchError."""
        ...

    # ---- resident buffers -----------------------------------------------------------------
    def allocate_resident(self, nbytes: int, label: str | None = None, *, zeroed: bool = True) -> ResidentHandle:
        """A new zero-filled resident buffer of ``nbytes`` bytes: an int, a positive multiple of 4,
        within the backend's buffer size limit (else DispatchError). ``zeroed=False`` promises that
        the caller writes every byte before reading any: the contents are unspecified until then
        (a backend may hand back a freed buffer without clearing it)."""
        ...

    def free_resident(self, handle: ResidentHandle) -> None:
        """Release a resident buffer. A handle freed twice, made by another backend, or not a
        handle raises DispatchError."""
        ...

    def upload_resident(self, handle: ResidentHandle, data: Any, offset: int = 0) -> None:
        """Write ``data`` (bytes, numpy, any buffer; its raw bytes) at byte ``offset`` of ``handle``.
        Offset and size are multiples of 4 bytes and fit inside the handle (else DispatchError)."""
        ...

    def upload_resident_many(self, uploads: Iterable[ResidentUpload]) -> None:
        """Several uploads as one operation; every upload is checked before anything is written."""
        ...

    def download_resident(self, handle: ResidentHandle, out: np.ndarray | None = None) -> np.ndarray:
        """The whole buffer as a new uint8 array of ``handle.nbytes`` bytes (use ``.view(dtype)``), or
        copied into ``out`` (any dtype, C-contiguous, writeable, exactly ``handle.nbytes`` bytes), which
        is returned."""
        ...

    def download_resident_ranges(self, ranges: Sequence[ResidentRange],
                                 outs: Sequence[np.ndarray | None] | None = None) -> list[np.ndarray]:
        """Each range (a handle, or ``(handle, offset, nbytes)`` inside it; any byte offset) as a uint8
        array, in one readback; ``outs``: one caller-owned array (or None) per range, as in
        :meth:`download_resident`. Every range and output is checked before anything is read."""
        ...

    def dispatch_resident(self, program: Program, handles: Sequence[ResidentHandle],
                          config: DispatchConfig | None = None) -> None:
        """Run ``program`` over resident buffers: one handle per program buffer (binding order, write
        buffers included), no host transfer. Element counts: ``config.counts``, else the declared
        count, else as many whole elements as the handle holds. Writable buffers keep what the program
        leaves in them (``write`` buffers are not cleared first). A handle bound to several buffers,
        one of them writable, raises DispatchError. May return before the work finishes (a later
        download waits)."""
        ...

    def dispatch_resident_sequence(self, steps: Sequence[ResidentStep],
                                   read: Sequence[ResidentRange] | None = None) -> list[np.ndarray]:
        """Run ``steps`` in order, each seeing the writes of the ones before; every step and range is
        checked before the first runs. Then read ``read`` (handles or ranges) back as uint8 arrays;
        with ``read=None`` returns ``[]`` (and may not wait)."""
        ...

    # ---- schedules ------------------------------------------------------------------------
    def run_pipeline(self, pipeline: Pipeline, inputs: Any) -> list[np.ndarray]:
        """Run an op :class:`~vyre.backends.schedule.Pipeline` with the host semantics of
        :mod:`vyre.backends.schedule` (non-input buffers start at zero, a step's ``write`` buffers are
        zeroed before it). ``inputs``: one array per pipeline input (a list, or a dict by name; byte
        data packed as in :func:`~vyre.backends.schedule.host_inputs`). Returns the outputs, reshaped
        per ``output_shapes``. ``capabilities().native_pipelines`` tells whether the intermediates stay
        on the device."""
        ...

    # ---- what the front ends need (loud defaults) ------------------------------------------
    def params_handle(self, words: bytes | np.ndarray) -> ResidentHandle:
        """A resident handle holding ``words`` (32-bit parameter words: an array evaluation's scalars, a
        kernel's dims), shared by every caller with the same words and never written again: a repeated
        evaluation uploads nothing. The backend owns it (do not free or write it; bind it to a read or
        uniform buffer). Words must be a non-empty multiple of 4 bytes (else DispatchError)."""
        raise UnsupportedFeatureError(f"backend {type(self).__name__} has no params_handle",
                                      fix="implement params_handle (resident buffers shared by their contents)")

    def flush(self) -> None:
        """Wait until every submitted piece of work has finished (a resident dispatch may return
        before its work ends)."""
        raise UnsupportedFeatureError(f"backend {type(self).__name__} has no flush",
                                      fix="implement flush (wait for the device to be idle)")

    def capture_resident_sequence(self, steps: Sequence[ResidentStep],
                                  clears: Sequence[ResidentHandle] = ()) -> CapturedSequence:
        """``steps`` checked once, to replay many times (:class:`vyre.backends.captured.CapturedSequence`;
        ``clears``: handles zeroed before the steps of every replay). vyre.compile replays through it."""
        raise UnsupportedFeatureError(f"backend {type(self).__name__} cannot capture resident sequences",
                                      fix="implement capture_resident_sequence (see vyre/backends/captured.py)")


__all__ = ["Backend", "Capabilities", "ResidentRange", "ResidentUpload", "ResidentStep", "BatchJob"]
