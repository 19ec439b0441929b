"""Escape hatches: run raw WGSL (:meth:`dispatch_wgsl`) and probe one f32 unary op (:meth:`probe_op`).

``dispatch_wgsl(wgsl, inputs, output_sizes, workgroups)`` binds, in ``@group(0)``:
``inputs`` (numpy arrays or bytes-like, any dtype; zero-padded to a multiple of 4 bytes) at
bindings ``0..k-1`` as ``var<storage, read>``, then one zero-initialised output of
``output_sizes[j]`` bytes at binding ``k+j`` as ``var<storage, read_write>``. Each binding is
bound with exactly its size (rounded up to 4 bytes), so ``arrayLength`` is right. It returns
one uint8 array of ``output_sizes[j]`` bytes per output, or arrays of ``output_dtypes[j]``
(numpy dtypes or vyre scalar names such as ``"u32"``) when given. The pipeline (keyed by the sha256 of
the WGSL and the layout) and the buffers
are cached like a program's. WGSL the device rejects raises LoweringError; bad arguments
raise DispatchError.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, Any

import numpy as np

from ...errors import DispatchError, LoweringError, UnsupportedFeatureError
from ...ir.nodes import FLOAT_UNOPS, Unary, UnOp
from ...ir.program import Program
from ...ir.types import DataType
from .device import Device
from .jobs import Bind, Job, JobRunner
from .pipelines import Slot
from .transfer import align

if TYPE_CHECKING:  # why: annotations only (the backend imports this module)
    from .backend import WgpuBackend
    from .pipeline_store import PipelineStore

#: Ops probe_op accepts: every unary op defined on f32.
F32_UNARY_OPS = frozenset(FLOAT_UNOPS | {UnOp.NEG, UnOp.ABS, UnOp.SIGN})
RAW_CONTRACT = "raw-wgsl"

#: The shader prepare() runs once (input at binding 0, output at binding 1, like dispatch_wgsl binds them).
WARM_WGSL = """
@group(0) @binding(0) var<storage, read> src: array<u32>;
@group(0) @binding(1) var<storage, read_write> dst: array<u32>;
@compute @workgroup_size(1) fn main() { dst[0] = src[0] + 1u; }
"""



@dataclass(frozen=True)
class RawShader:
    """A raw WGSL module in the shape compile_pipeline expects of a lowering."""

    wgsl: str
    entry_point: str
    features: frozenset[str] = frozenset()
    lowering_version: str = RAW_CONTRACT


def _as_bytes(k: int, value: Any) -> np.ndarray:
    try:
        arr = value if isinstance(value, np.ndarray) else np.frombuffer(memoryview(value), dtype=np.uint8)
    except TypeError:
        raise DispatchError(f"dispatch_wgsl input {k} is not an array or bytes-like ({type(value).__name__})",
                            fix="pass numpy arrays (or bytes)") from None
    raw = np.ascontiguousarray(arr).reshape(-1).view(np.uint8)
    if raw.nbytes % 4:
        padded = np.zeros(align(raw.nbytes, 4), np.uint8)
        padded[: raw.nbytes] = raw
        raw = padded
    return raw


def _dtype(d: Any) -> np.dtype:
    """A numpy dtype from a numpy dtype-like or a vyre scalar type name ("u32", "f32", "i32", "f16")."""
    try:
        if isinstance(d, (str, DataType)) and str(getattr(d, "value", d)) in {t.value for t in DataType}:
            dt = DataType(getattr(d, "value", d))
            if dt.lanes == 1 and dt is not DataType.BOOL:
                return np.dtype(dt.numpy_dtype)
        out: np.dtype = np.dtype(d)
        return out
    except TypeError:
        raise DispatchError(f"output dtype {d!r} is not a numpy dtype or a vyre scalar type",
                            fix="use e.g. np.uint32, 'float32' or 'u32'") from None


def _workgroups(workgroups: Any, limit: int) -> tuple[int, int, int]:
    w = (workgroups,) if isinstance(workgroups, (int, np.integer)) else tuple(workgroups)
    if not 1 <= len(w) <= 3 or any(isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 0 for v in w):
        raise DispatchError(f"workgroups must be an int or 1 to 3 ints >= 0, got {workgroups!r}",
                            fix="pass e.g. workgroups=(n_groups, 1, 1)")
    w = tuple(int(v) for v in w) + (1,) * (3 - len(w))
    if max(w) > limit:
        raise DispatchError(f"workgroups {w} exceed this adapter's per-dimension limit of {limit}",
                            fix="spread the workgroups over y and z, or use a loop in the shader")
    return w  # type: ignore[return-value]


@cache
def probe_program(op: UnOp) -> Program:
    """``y[i] = op(x[i])`` over f32 buffers (one program per op)."""
    from ...ir.builder import ProgramBuilder, Val  # why: the builder (and its validator) loads on first use

    b = ProgramBuilder(f"probe_{op.value}", 64)
    x = b.buffer("x", "f32")
    y = b.buffer("y", "f32", access="write")
    i = b.global_index()
    with b.if_(i < y.len()):
        y[i] = Val(b, Unary(op=op, arg=x[i].node))
    return b.build()


class RawWgsl:
    """``dispatch_wgsl``: raw WGSL jobs on pooled buffers (see the module docstring)."""

    def __init__(self, dev: Device, store: PipelineStore, runner: JobRunner) -> None:
        self._dev = dev
        self._store = store
        self._runner = runner

    def dispatch(self, wgsl: str, inputs: Iterable[Any] | None, output_sizes: Iterable[int], workgroups: Any, *,
                 entry_point: str = "main", output_dtypes: Sequence[Any] | None = None) -> list[np.ndarray]:
        """Run raw WGSL (see the module docstring for the binding layout). Returns one array per output."""
        self._dev.check_alive()
        if not isinstance(wgsl, str) or not wgsl.strip():
            raise DispatchError("dispatch_wgsl needs WGSL source text", fix="pass the shader as a str")
        inputs = list(inputs or [])
        try:
            sizes = [int(n) for n in output_sizes]
        except TypeError:
            raise DispatchError(f"output_sizes must be a list of byte counts, got {output_sizes!r}",
                                fix="pass e.g. output_sizes=[4 * n]") from None
        if any(n < 0 for n in sizes):
            raise DispatchError(f"output sizes must be >= 0 bytes, got {sizes}")
        dtypes = None
        if output_dtypes is not None:
            dtypes = [_dtype(d) for d in output_dtypes]
            if len(dtypes) != len(sizes) or any(n % d.itemsize for n, d in zip(sizes, dtypes)):
                raise DispatchError(f"output_dtypes {output_dtypes!r} do not match output_sizes {sizes}",
                                    fix="give one dtype per output whose itemsize divides its size")
        groups = _workgroups(workgroups, self._dev.limit("max-compute-workgroups-per-dimension"))
        datas = [_as_bytes(k, v) for k, v in enumerate(inputs)]
        cap = self._dev.limit("max-storage-buffer-binding-size")
        for k, n in enumerate([d.nbytes for d in datas] + sizes):
            if n > cap:
                raise DispatchError(f"dispatch_wgsl binding {k} needs {n} bytes, over this adapter's storage "
                                    f"binding limit of {cap} bytes", fix="split the work")
        binds = [Bind(index=k, nbytes=max(4, d.nbytes), data=d if d.nbytes else None, clear=not d.nbytes)
                 for k, d in enumerate(datas)]
        n_in = len(binds)
        binds += [Bind(index=n_in + j, nbytes=max(4, align(n, 4)), clear=True, output=True)
                  for j, n in enumerate(sizes)]
        slots = [Slot(0, b.index, f"b{b.index}", "storage" if b.output else "read-only-storage", b.index)
                 for b in binds]

        def to_host(j: int, raw: np.ndarray | bytes) -> np.ndarray:
            out = np.frombuffer(raw, dtype=np.uint8)[: sizes[j]].copy()
            return out.view(dtypes[j]) if dtypes is not None else out

        if groups[0] * groups[1] * groups[2] == 0:
            return [to_host(j, bytes(max(4, n))) for j, n in enumerate(sizes)]
        layout = ",".join(s.kind for s in slots)
        digest = hashlib.sha256(f"{entry_point}\n{layout}\n{wgsl}".encode()).hexdigest()
        key = (f"wgsl:{digest}", (), RAW_CONTRACT, self._dev.identity)
        shader = RawShader(wgsl=wgsl, entry_point=entry_point)
        with self._dev.lock:
            self._dev.check_alive()
            compiled = self._store.cache.lookup(key)
            if compiled is None:
                try:
                    compiled = self._store.build(key, None, shader, frozenset(), groups=[slots] if slots else [])
                except LoweringError as exc:
                    raise LoweringError(
                        exc.message.replace("program 'wgsl': the GPU rejected the generated WGSL",
                                            "dispatch_wgsl: the device rejected this WGSL"),
                        fix=f"fix the shader: entry point {entry_point!r}; group 0 holds the inputs at bindings "
                            f"0..{n_in - 1} as var<storage, read> and the outputs at bindings {n_in}.."
                            f"{len(binds) - 1} as var<storage, read_write>") from None
            job = Job(compiled=compiled, binds=binds, workgroups=groups, to_host=to_host, exact=True,
                      label="vyre:wgsl")
            return self._runner.run([job])[0]


def probe_op(backend: WgpuBackend, op: UnOp | str, values: Any) -> np.ndarray:
    """Run the f32 unary ``op`` (a vyre.ir.nodes.UnOp or its name, e.g. "sqrt") over ``values`` in one
    dispatch and return the GPU's results (float32), to measure GPU error against the reference."""
    try:
        op = UnOp(op.value if isinstance(op, UnOp) else str(op))
    except ValueError:
        raise UnsupportedFeatureError(f"probe_op: {op!r} is not a vyre unary op",
                                      fix=f"use one of {sorted(o.value for o in F32_UNARY_OPS)}") from None
    if op not in F32_UNARY_OPS:
        raise UnsupportedFeatureError(f"probe_op: {op.value!r} is not an f32 unary op",
                                      fix=f"use one of {sorted(o.value for o in F32_UNARY_OPS)}")
    try:
        xs = np.ascontiguousarray(np.asarray(values, dtype=np.float32).reshape(-1))
    except (TypeError, ValueError) as exc:
        raise DispatchError(f"probe_op values must convert to float32: {exc}",
                            fix="pass a sequence or array of numbers") from None
    if xs.size == 0:
        return np.zeros(0, np.float32)
    (out,) = backend.dispatch(probe_program(op), [xs])
    return out


__all__ = ["RawWgsl", "probe_op", "F32_UNARY_OPS", "probe_program", "RawShader", "WARM_WGSL"]
