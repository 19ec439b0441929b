"""A traced function as one exportable unit: the programs a call of ``fn`` runs, with its weights.

:func:`from_function` calls ``fn`` once on the example arrays (a warm-up: closed-over arrays that are
still lazy, fresh weights, get their values), then once more while recording the resident work it
does (vyre/backends/recording.py, the record ``vyre.compile`` replays) and turns the record into a
:class:`~vyre.export.unit.Unit`:

* every recorded dispatch is a step, in order, with the logical grid and the element count of each
  binding the trace dispatched it with (``host.plan_resident``: a buffer a program reads as ``vec4``
  is sized in vec4 elements there, in f32 elements where another program reads it);
* the argument buffers are the unit's inputs (named after ``fn``'s parameters), the result arrays its
  outputs (named by ``outputs=``, a returned dict's keys, or ``out``/``out0``...);
* buffers allocated while tracing are intermediates (zero at the start like every buffer a WebGPU
  device creates; those of one size whose lives do not overlap share one, as vyre.compile's replay
  does, except zero-filled allocations); data uploaded while tracing, the arrays ``fn``
  closes over (model weights, random keys) and the shared parameter words of fused kernels
  (``backend.params_handle``) are constants: their storage bytes travel with the export
  (``vyre.export.export_function`` writes them to a safetensors file beside the module).

Constants are named after what ``fn`` closes over where that is an array, a dict/list/tuple of
arrays or a ``vyre.nn.Module`` (``model.0.weight``), or by ``constants={name: array}``; others are
``const<k>`` (an array reached another way) and ``<program buffer>@<step>`` (parameter words).

Refused with a typed error before anything is written: arguments that are not arrays, results that
are not an array, a tuple/list or a str-keyed dict of arrays, a result that is an argument or a
constant itself, a function that writes into an argument or into an array it closes over. What
``vyre.compile`` refuses while tracing (host reads, host-in/host-out dispatches) is refused here too
(:class:`~vyre.errors.TraceError`).
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from ..backends import recording
from ..backends.config import DispatchConfig
from ..backends.host import plan_resident, storage_nbytes, storage_to_host
from ..errors import ArgumentTypeError, InvalidArgumentError, UnsupportedFeatureError
from ..ir.program import BufferDecl
from ..ir.types import Access, DataType
from .unit import Unit, UnitBuffer, UnitStep


def from_function(fn: Callable[..., Any], *args: Any, inputs: Sequence[str] | None = None,
                  outputs: Sequence[str] | None = None, constants: Mapping[str, Any] | None = None,
                  name: str | None = None, device: Any = None) -> Unit:
    """The unit of calling ``fn(*args)`` (see the module docstring). ``args``: vyre or numpy arrays (numpy
    arrays go to ``device``, default the first vyre argument's backend, else the current one); the module
    runs on inputs of the same shapes and dtypes (numpy examples only: the backend of the arrays ``fn``
    closes over). ``inputs`` / ``outputs``: names (default ``fn``'s
    parameter names; a dict result's keys, else ``out`` or ``out0``, ``out1``...). ``constants``: names for
    arrays ``fn`` reads (beside those found in its closure)."""
    import vyre.array as va  # why: vyre.array is a front end above vyre.export (import on use)
    from vyre.array._array import Array
    from vyre.array._kernels.fused import evaluate

    if not callable(fn):
        raise ArgumentTypeError(f"from_function() takes a function, got {type(fn).__name__}",
                                fix="pass the function to export, then its example arrays")
    fname = str(name or getattr(fn, "__name__", "function"))
    fname = "function" if fname == "<lambda>" else fname
    if not args:
        raise InvalidArgumentError(f"{fname}: give example arrays (the export runs on inputs of their shapes)",
                                   fix="export_function(fn, x_example, out_dir=...)")
    lazy: list[Any] = []
    reached = _known_constants(fn, constants, lazy)
    backend = device if device is not None else next((a.device for a in args if isinstance(a, Array)), None)
    if backend is None:  # numpy examples only: the backend of the arrays fn closes over, else the current one
        backend = next((a.device for a in [*(v for _, v in reached.values()), *lazy]), None)
    backend = backend if backend is not None else va.current_backend()
    names = _input_names(fn, fname, len(args), inputs)
    arrays: list[Any] = []
    for n, a in zip(names, args):
        if isinstance(a, Array):
            if a.device is not backend:
                raise InvalidArgumentError(f"{fname}: input {n!r} lives on {a.device!r}, not {backend!r}",
                                           fix="move it with x.to_device(...) or pass a numpy array")
            a = np.asarray(a)
        if not isinstance(a, np.ndarray):
            raise ArgumentTypeError(f"{fname}: input {n!r} is a {type(a).__name__}, not an array",
                                    fix="pass vyre or numpy arrays; close over other values (functools.partial)")
        arrays.append(va.asarray(a, device=backend))  # a copy the traced call may own: the caller's stays as it is
    evaluate([*arrays, *lazy])  # closed-over lazy arrays (fresh weights) get their values: constants, not steps
    evaluate([a for _, a in _results(fn(*arrays), fname, outputs)])  # a warm-up: what runs once only, runs now
    known = _known_constants(fn, constants, [])
    start = {a._storage().id for a in arrays}
    with recording.recording(backend) as rec:
        got = _results(fn(*arrays), fname, outputs)
        evaluate([a for _, a in got])
        with recording.paused():  # while everything the trace read is alive
            held = _external_bytes(fname, rec, start)
    if any(a.is_lazy or a._storage().id not in start for a in arrays):
        raise UnsupportedFeatureError(f"{fname} assigns into an argument (x[...] = v): the export would not "
                                      "hand the new contents back", fix="return the new array instead")
    return _unit(fname, rec, arrays, names, got, known, held)


def _input_names(fn: Any, fname: str, n: int, given: Sequence[str] | None) -> list[str]:
    if given is not None:
        names = [str(x) for x in given]
        if len(names) != n:
            raise InvalidArgumentError(f"{fname}: {len(names)} input name(s) for {n} example array(s)",
                                       fix="give one name per example array")
    else:
        try:
            params = [p.name for p in inspect.signature(fn).parameters.values()
                      if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        except (TypeError, ValueError):
            params = []
        names = params[:n] + [f"arg{k}" for k in range(len(params), n)]
    if len(set(names)) != len(names):
        raise InvalidArgumentError(f"{fname}: input names {names} repeat", fix="give distinct names")
    return names


def _results(out: Any, fname: str, names: Sequence[str] | None) -> list[tuple[str, Any]]:
    from vyre.array._array import Array

    if isinstance(out, Array):
        pairs = [("out", out)]
    elif isinstance(out, (tuple, list)):
        pairs = [(f"out{k}", a) for k, a in enumerate(out)]
    elif isinstance(out, dict) and all(isinstance(k, str) for k in out):
        pairs = list(out.items())
    else:
        pairs = [("out", out)]
    if not pairs or not all(isinstance(a, Array) for _, a in pairs):
        raise ArgumentTypeError(f"{fname} must return a vyre array, a tuple/list of them or a dict of them by "
                                f"name, got {type(out).__name__}", fix="return the arrays the module should give")
    if names is not None:
        if len(names) != len(pairs):
            raise InvalidArgumentError(f"{fname}: {len(names)} output name(s) for {len(pairs)} result(s)",
                                       fix="give one name per result")
        pairs = [(str(n), a) for n, (_, a) in zip(names, pairs)]
    if len({n for n, _ in pairs}) != len(pairs):
        raise InvalidArgumentError(f"{fname}: output names {[n for n, _ in pairs]} repeat", fix="give distinct names")
    return pairs


def _external_bytes(fname: str, rec: recording.Recorder, inputs: set[int]) -> dict[int, np.ndarray]:
    """The bytes of every buffer the recorded steps read that the trace neither allocated nor got as
    an argument nor as parameter words: what ``fn`` closes over."""
    from ..errors import DispatchError

    made = {ev[1].id for ev in rec.events if ev[0] == "alloc"}
    out: dict[int, np.ndarray] = {}
    for ev in rec.events:
        if ev[0] != "step":
            continue
        for h in ev[1].handles:
            if h.id in made or h.id in inputs or h.id in rec.params or h.id in out:
                continue
            try:
                out[h.id] = np.asarray(rec.backend.download_resident(h)).view(np.uint8).copy()
            except DispatchError:
                raise UnsupportedFeatureError(f"{fname} reads a buffer that was freed while it ran (an array "
                                              "it made and dropped outside the trace's view)",
                                              fix="evaluate the arrays the function closes over first "
                                                  "(x.evaluate())") from None
    return out


def _known_constants(fn: Any, given: Mapping[str, Any] | None, lazy: list[Any]) -> dict[int, tuple[str, Any]]:
    """Arrays ``fn`` can reach by name (its closure, the globals it names, ``given``): buffer id ->
    (name, array); lazy ones are appended to ``lazy``. Looked into: arrays, dicts/lists/tuples of them,
    vyre.nn Modules, nested closures."""
    from vyre.array._array import Array

    found: dict[int, tuple[str, Any]] = {}

    def walk(name: str, v: Any, depth: int) -> None:
        if depth > 4:
            return
        if isinstance(v, Array):
            if v._buf is not None and v._expr is None and v._buf.pending is None:
                found.setdefault(v._buf.handle.id, (name, v))
            else:
                lazy.append(v)
        elif isinstance(v, dict):
            for k, x in v.items():
                walk(f"{name}.{k}", x, depth + 1)
        elif isinstance(v, (list, tuple)):
            for k, x in enumerate(v):
                walk(f"{name}.{k}", x, depth + 1)
        elif callable(getattr(v, "named_parameters", None)) and hasattr(v, "_parameters"):  # a vyre.nn Module
            for k, p in v.named_parameters():
                walk(f"{name}.{k}", p.value, depth + 1)
        elif inspect.isfunction(v) and depth < 2:
            for k, x in _reachable(v):
                walk(k, x, depth + 1)

    for k, v in (given or {}).items():
        walk(str(k), v, 0)
    for k, v in _reachable(fn):
        walk(k, v, 0)
    return found


def _reachable(fn: Any) -> list[tuple[str, Any]]:
    code = getattr(fn, "__code__", None)
    if code is None:
        return []
    out: list[tuple[str, Any]] = []
    for k, cell in zip(code.co_freevars, getattr(fn, "__closure__", None) or ()):
        try:
            out.append((k, cell.cell_contents))
        except ValueError:  # an empty cell
            continue
    glob = getattr(fn, "__globals__", {})
    out += [(k, glob[k]) for k in code.co_names if k in glob and not inspect.ismodule(glob[k])]
    return out


def _unit(fname: str, rec: recording.Recorder, arrays: list[Any], names: list[str], results: list[tuple[str, Any]],
          known: dict[int, tuple[str, Any]], held: dict[int, np.ndarray]) -> Unit:
    from vyre.array._kernels.dtypes import ir_type

    allocated: dict[int, bool] = {}  # handle id -> zero-filled
    uploaded: dict[int, np.ndarray] = {}
    steps = [ev[1] for ev in rec.events if ev[0] == "step"]
    for ev in rec.events:
        if ev[0] == "alloc":
            allocated[ev[1].id] = bool(ev[2])
        elif ev[0] == "upload":
            raw = uploaded.setdefault(ev[1].id, np.zeros(ev[1].nbytes, np.uint8))  # zero where nothing was written
            data = ev[2][:max(0, ev[1].nbytes - ev[3])]
            raw[ev[3]:ev[3] + data.size] = data
    inputs = {a._storage().id: n for a, n in zip(arrays, names)}
    by_handle: dict[int, str] = dict(inputs)
    buffers: dict[str, UnitBuffer] = {n: UnitBuffer(n, ir_type(a.dtype), max(1, a.size), "input")
                                      for a, n in zip(arrays, names)}
    outs: dict[int, tuple[str, Any]] = {}
    for n, a in results:
        h = a._storage()
        if h.id in inputs or h.id not in allocated or h.id in uploaded:
            raise UnsupportedFeatureError(f"{fname}: result {n!r} is an argument or a constant it closes over, "
                                          "not something the function computes", fix="return computed arrays "
                                          "(a copy: x + 0), or drop the result")
        if h.id in outs:
            raise UnsupportedFeatureError(f"{fname}: results {outs[h.id][0]!r} and {n!r} are one array",
                                          fix="return it once")
        outs[h.id] = (n, a)
    unit_steps: list[UnitStep] = []
    consts = 0
    temps: dict[str, tuple[int, bool]] = {}  # intermediate -> (bytes, zero-filled)
    for k, s in enumerate(steps):
        decls = s.program.sorted_buffers
        plan = plan_resident(s.program, [h.nbytes for h in s.handles], s.config)
        bind: list[str] = []
        for d, h in zip(decls, s.handles):
            bname = by_handle.get(h.id)
            if bname is None:
                if h.id in outs:
                    n, a = outs[h.id]
                    bname, buf = n, UnitBuffer(n, ir_type(a.dtype), max(1, a.size), "output")
                elif h.id in rec.params:
                    bname = f"{d.name}@{k}"
                    buf = _words(bname, d, rec.words[h.id])
                elif h.id in uploaded:
                    bname, consts = f"const{consts}", consts + 1
                    buf = _constant(bname, d, uploaded[h.id], None)
                elif h.id in allocated:
                    bname = f"t{sum(b.role == 'intermediate' for b in buffers.values())}"
                    buf = UnitBuffer(bname, d.dtype, max(1, h.nbytes // d.dtype.element_nbytes), "intermediate")
                    temps[bname] = (h.nbytes, allocated[h.id])
                else:  # an array fn closes over (or reaches another way): its values now
                    kn = known.get(h.id)
                    if kn is None:
                        bname, consts = f"const{consts}", consts + 1
                    else:
                        bname = kn[0]
                    buf = _constant(bname, d, held[h.id], None if kn is None else kn[1])
                if bname in buffers:
                    raise InvalidArgumentError(f"{fname}: two buffers named {bname!r} (an input, output or "
                                               "constant name used twice)", fix="rename an input or output")
                by_handle[h.id] = bname
                buffers[bname] = buf
            if d.access.writable:
                role = buffers[bname].role
                if role == "input" or (role == "constant" and h.id not in uploaded):
                    what = "an argument" if role == "input" else f"the array it closes over ({bname})"
                    raise UnsupportedFeatureError(f"{fname} writes into {what}: the export would not keep the "
                                                  "new contents", fix="return the new values instead")
            bind.append(bname)
        unit_steps.append(UnitStep(s.program, tuple(bind), tuple(int(g) for g in plan.grid),  # type: ignore[arg-type]
                                   counts=tuple(int(b.count) for b in plan.buffers)))
    missing = [n for n, _ in results if n not in buffers]
    if missing:
        raise UnsupportedFeatureError(f"{fname}: result(s) {missing} are not written by any step",
                                      fix="return arrays the function computes")
    unit_steps = _share(unit_steps, temps, buffers)
    # inputs first, then what stays inside in order of first use, then the outputs in the order returned
    order = [*names, *(n for n, b in buffers.items() if b.role not in ("input", "output")), *(n for n, _ in results)]
    buffers = {n: buffers[n] for n in order}
    return Unit(fname, "function", buffers, tuple(unit_steps), tuple(names), tuple(n for n, _ in results),
                output_shapes={n: tuple(a.shape) for n, a in results},
                about={"function": fname, "steps": len(unit_steps),
                       "inputs": {n: {"shape": list(a.shape), "dtype": str(a.dtype)} for a, n in zip(arrays, names)},
                       "outputs": {n: {"shape": list(a.shape), "dtype": str(a.dtype)} for n, a in results}})


def _share(steps: list[UnitStep], temps: dict[str, tuple[int, bool]], buffers: dict[str, UnitBuffer]
           ) -> list[UnitStep]:
    """Intermediates of one size whose lives do not overlap share one buffer (a greedy assignment in step
    order, as vyre.compile's replay does); a zero-filled one keeps its own (it must start at zero). The
    steps bind the shared names; each binding keeps its own element count (``UnitStep.counts``)."""
    first: dict[str, int] = {}
    last: dict[str, int] = {}
    for k, s in enumerate(steps):
        for n in s.bind:
            if n in temps:
                first.setdefault(n, k)
                last[n] = k
    free: dict[int, list[str]] = {}  # bytes -> shared buffers whose last use has passed
    busy: list[tuple[int, str, int]] = []  # (last step, shared buffer, bytes)
    into: dict[str, str] = {}
    for n in sorted(first, key=lambda n: first[n]):
        nbytes, zeroed = temps[n]
        for item in [b for b in busy if b[0] < first[n]]:
            busy.remove(item)
            free.setdefault(item[2], []).append(item[1])
        pool = free.get(nbytes, [])
        into[n] = pool.pop(0) if pool and not zeroed else n
        if not zeroed:
            busy.append((last[n], into[n], nbytes))
    for n, shared in into.items():
        if shared != n:
            del buffers[n]
    return [UnitStep(s.program, tuple(into.get(n, n) for n in s.bind), s.grid, s.grid_dims, s.counts) for s in steps]


def _words(name: str, d: BufferDecl, raw: bytes) -> UnitBuffer:
    """Shared parameter words (a fused kernel's scalars, a kernel's dims): each named after the program's
    buffer (``in_p[0]``...); the record keeps the words, not the Python scalars they were packed from."""
    words = np.frombuffer(raw, np.uint32).copy()
    docs = tuple({"word": k, "name": f"{d.name}[{k}]", "dtype": "u32", "value": int(w), "from": {"value": int(w)}}
                 for k, w in enumerate(words))
    return UnitBuffer(name, DataType.U32, len(words), "constant", value=words, words=docs)


def _constant(name: str, d: BufferDecl, raw: np.ndarray, array: Any) -> UnitBuffer:
    """A constant from its storage bytes: typed like ``array`` when known, else like the binding."""
    if array is not None:
        from vyre.array._kernels.dtypes import ir_type

        dtype, count = ir_type(array.dtype), max(1, array.size)
    else:
        dtype = d.dtype
        count = max(1, raw.size // dtype.element_nbytes)
    nbytes = storage_nbytes(dtype, count)
    raw = np.concatenate([raw, np.zeros(max(0, nbytes - raw.size), np.uint8)])[:nbytes]
    decl = BufferDecl(name=name, binding=0, dtype=dtype, access=Access.READ, count=count)
    host = storage_to_host(decl, raw, count)
    shape = tuple(array.shape) if array is not None and math.prod(array.shape) == count else ()
    return UnitBuffer(name, dtype, count, "constant", value=np.asarray(host).reshape(-1), trailing=(),
                      shape=shape)


def run_function_unit(unit: Unit, backend: Any, values: Mapping[str, Any]) -> dict[str, np.ndarray]:
    """Run a traced unit on ``backend`` over resident buffers, as the trace ran (each binding's element
    count as recorded): outputs by name, in their shapes."""
    from ..backends.host import host_to_storage

    handles: dict[str, Any] = {}
    try:
        for b in unit.buffers.values():
            handles[b.name] = backend.allocate_resident(storage_nbytes(b.dtype, b.count or 1))
            if b.role in ("input", "constant"):
                host = np.asarray(values[b.name]) if b.role == "input" else b.value
                decl = BufferDecl(name=b.name, binding=0, dtype=b.dtype, access=Access.READ, count=b.count)
                raw, _ = host_to_storage(decl, host)
                backend.upload_resident(handles[b.name], np.ascontiguousarray(raw).reshape(-1).view(np.uint8))
        work = []
        for s in unit.steps:
            decls = s.program.sorted_buffers
            counts = {d.name: c for d, c in zip(decls, s.counts or ()) if d.count is None}
            work.append((s.program, [handles[n] for n in s.bind], DispatchConfig(grid=s.grid, counts=counts)))
        backend.dispatch_resident_sequence(work)
        out = {}
        for n in unit.outputs:
            b = unit.buffers[n]
            decl = BufferDecl(name=n, binding=0, dtype=b.dtype, access=Access.WRITE, count=b.count)
            raw = np.asarray(backend.download_resident(handles[n]))
            host = np.asarray(storage_to_host(decl, raw, b.count or 1))
            out[n] = host.reshape(unit.output_shapes.get(n, host.shape))
        return out
    finally:
        for h in handles.values():
            backend.free_resident(h)


__all__ = ["from_function", "run_function_unit"]
