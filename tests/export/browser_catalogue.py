"""Building the browser check's catalogue (see tests/export/browser_cases.py for what and why)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np
from browser_cases import BROWSER_SKIPS, OP_MAX_ELEMENTS, TRIG, Case, load_manifest, stem, tolerance_for

import vyre.array as va
from vyre.array._export_view import program_of
from vyre.backends.config import DispatchConfig
from vyre.backends.reference import ReferenceBackend
from vyre.backends.schedule import host_inputs
from vyre.export import export_kernel, export_op, export_program, export_unit, from_pipeline
from vyre.ops import api as ops_api
from vyre.ops.pipeline import execute
from vyre.ops.registry import all_ops, get, rel

from programs import CASES


class Catalogue:
    def __init__(self, root: Path, gpu: Any) -> None:
        self.root, self.gpu, self.cases = root, gpu, []

    def add(self, family: str, label: str, path: Path, inputs: dict, want: dict, tolerance: dict,
            options: dict | None = None) -> Case:
        manifest = load_manifest(path)
        files = manifest["wgsl"] if isinstance(manifest["wgsl"], list) else [manifest["wgsl"]]
        trig = any(TRIG.search((self.root / f).read_text(encoding="utf-8")) for f in files)
        c = Case(path.stem, family, label, path.with_suffix(".js").name, manifest, inputs,
                 options or {}, want, tolerance, trig)
        self.cases.append(c)
        return c

    def next_id(self, label: str) -> str:
        return stem(len(self.cases), label)


def can(gpu: Any, needs: frozenset) -> bool:
    """The session's GPU backend can run work that needs these features."""
    return all(gpu.supports_f16() if n == "shader-f16" else gpu.supports_subgroup_ops() if n.startswith("subgroup")
               else n in gpu.features for n in needs)


def _size(w) -> int:
    return sum(np.asarray(a).size for a in w.inputs)


def op_cases(cat: Catalogue) -> None:
    """Every op: its smallest witness and its largest of at most OP_MAX_ELEMENTS input elements."""
    for spec in all_ops():
        if spec.id in BROWSER_SKIPS:
            continue
        ws = spec.witnesses()
        small = min(ws, key=_size)
        fitting = [w for w in ws if _size(w) <= OP_MAX_ELEMENTS]
        large = max(fitting, key=_size) if fitting else None
        for w in [small] + ([large] if large is not None and large is not small else []):
            pipe = spec.build(**w.params)
            cid = cat.next_id(f"op {spec.id} {w.name}")
            path = export_unit(from_pipeline(pipe, kind="op"), cat.root, name=cid)
            with np.errstate(all="ignore"):
                ref = [np.asarray(r) for r in spec.reference(*w.inputs, **w.params)]
            want = {"numpy": dict(zip(pipe.outputs, ref))}
            if can(cat.gpu, spec.needs_of(w.params)):
                want["vyre"] = dict(zip(pipe.outputs, execute(cat.gpu, pipe, list(w.inputs))))
            tol = spec.tolerance_of(w.params)
            cat.add("op", f"{spec.id} [{w.name}] ({len(pipe.steps)} step(s))", path,
                    dict(zip(pipe.inputs, host_inputs(pipe, list(w.inputs)))), want,
                    {n: tolerance_for(r.dtype, tol) for n, r in zip(pipe.outputs, ref)})


def corpus_cases(cat: Catalogue) -> None:
    """Every parity program as a single-program export, against the GPU and the reference interpreter."""
    reference = ReferenceBackend()
    for c in CASES:
        program, inputs, config = c.build()
        config = config or DispatchConfig()
        if isinstance(inputs, dict):
            inputs = [inputs[b.name] for b in program.input_buffers]
        inputs = [np.asarray(v) for v in inputs]
        cid = cat.next_id(f"corpus {c.name}")
        path = export_program(program, cat.root, name=cid)
        names = [d.name for d in program.output_buffers]
        want = {"reference": dict(zip(names, reference.dispatch(program, inputs, config)))}
        if can(cat.gpu, c.needs):
            want["vyre"] = dict(zip(names, cat.gpu.dispatch(program, inputs, config)))
        given = rel(c.rtol, c.atol) if (c.rtol or c.atol) else None
        options = {"grid": list(config.grid) if config.grid is not None else None, "counts": dict(config.counts)}
        cat.add("corpus", c.name, path, {d.name: v for d, v in zip(program.input_buffers, inputs)}, want,
                {n: tolerance_for(np.asarray(w).dtype, given) for n, w in want["reference"].items()}, options)


def kernel_cases(cat: Catalogue) -> None:
    """The docs/kernels.md kernels by export_kernel: parameters by their Python names."""
    from browser_kernels import launches

    for label, kernel, args, dim, ref, tol in launches():
        cid = cat.next_id(f"kernel {label}")
        path = export_kernel(kernel, *args, dim=dim, out_dir=cat.root, name=cid)
        manifest = load_manifest(path)
        names = [n for n, _ in kernel.params]
        got = kernel.launch(dim, [a.copy() if isinstance(a, np.ndarray) else a for a in args], backend=cat.gpu)
        outs = [n for n in names if n in manifest["outputs"]]
        inputs = {n: a for n, a in zip(names, args) if n in {x["name"] for x in manifest["inputs"]}}
        want = {"numpy": ref, "vyre": dict(zip(outs, got))}
        cat.add("kernel", f"{label} dim={dim}", path, inputs, want, {n: tolerance_for(r.dtype, tol) for n, r in
                                                                      ref.items()})
    resized_cases(cat)


def resized_cases(cat: Catalogue) -> None:
    """Kernel modules run at other sizes than they were exported with: ``run(device, inputs, {dim, counts})``
    with the dims given at run time (what ``kernel[dim]`` takes), against the launch at those sizes."""
    from browser_kernels import _blur_ref, blur, saxpy

    rng = np.random.default_rng(99)
    img = rng.random((40, 83), dtype=np.float32)  # other rows, the width it was exported with (baked in)
    x, y = rng.random(777, dtype=np.float32), rng.random(777, dtype=np.float32)
    for label, kernel, args, dim, inputs, counts, ref in [
            ("blur", blur, (img, np.zeros_like(img)), img.shape, {"img": img}, {"out": img.size},
             {"out": _blur_ref(img)}),
            ("saxpy", saxpy, (x, y, -1.25), 777, {"x": x, "y": y, "a": -1.25}, {},
             {"y": (np.float32(-1.25) * x + y).astype(np.float32)})]:
        exported = next(c for c in cat.cases if c.family == "kernel" and c.label.startswith(label + " "))
        got = kernel.launch(dim, [a.copy() if isinstance(a, np.ndarray) else a for a in args], backend=cat.gpu)
        outs = [n for n, _ in kernel.params if n in exported.manifest["outputs"]]
        dims = list(dim) if isinstance(dim, tuple) else [dim]
        at = exported.manifest["dims"]["default"]
        c = Case(f"resized_{exported.id}", "kernel-resized", f"{label} exported at dim={at}, run at dim={dims}",
                 exported.module, exported.manifest, inputs, {"dim": dims, "counts": counts},
                 {"numpy": ref, "vyre": dict(zip(outs, got))}, exported.tolerance, exported.trig)
        cat.cases.append(c)


def _expressions(gpu: Any) -> list[tuple[str, Any, dict, np.ndarray]]:
    rng = np.random.default_rng(7)
    x = rng.random(3000, dtype=np.float32)
    y = rng.random(3000, dtype=np.float32)
    w = rng.random(3000, dtype=np.float32)
    i = rng.integers(-100, 100, 2049).astype(np.int32)
    j = rng.integers(-100, 100, 2049).astype(np.int32)
    xa, ya, wa = (va.asarray(v, device=gpu) for v in (x, y, w))
    ia, ja = va.asarray(i, device=gpu), va.asarray(j, device=gpu)
    chain, want = xa, x.copy()
    for k in range(90):  # past the fused tree's node limit: cut into several kernels with intermediates
        chain = chain * 0.99 + 0.01 * (k % 3)
        want = want * np.float32(0.99) + np.float32(0.01 * (k % 3))
    x2 = va.reshape(xa, (60, 50))
    return [
        ("sin(x)*2 + y*y - 1.5", va.sin(xa) * 2.0 + ya * ya - 1.5, {"x": xa, "y": ya},
         (np.sin(x) * np.float32(2) + y * y - np.float32(1.5)).astype(np.float32)),
        ("90-step chain", chain, {"x": xa}, want.astype(np.float32)),
        ("transpose view + slice", va.reshape(x2.T, (3000,)) * 2.0 + ya,
         {"x": xa, "y": ya}, (x.reshape(60, 50).T.reshape(3000) * np.float32(2) + y).astype(np.float32)),
        ("where over i32", va.where(ia > 5, ia * 3, ia - ja), {"i": ia, "j": ja}, np.where(i > 5, i * 3, i - j)),
        ("bool mask", (xa > 0.5) & (ya < 0.25), {"x": xa, "y": ya}, (x > 0.5) & (y < 0.25)),
        ("x * w + 1 (w a constant)", xa * wa + 1.0, {"x": xa}, (x * w + np.float32(1)).astype(np.float32)),
    ]


def array_cases(cat: Catalogue) -> None:
    """Fused array expressions by vyre.array.program_of: the module runs what evaluating them runs."""
    for label, expr, named, ref in _expressions(cat.gpu):
        unit = program_of(expr, inputs=named)
        cid = cat.next_id(f"array {label}")
        path = export_unit(unit, cat.root, name=cid)
        inputs = {n: np.asarray(a) for n, a in named.items()}
        vy = np.asarray(expr).reshape(ref.shape)
        cat.add("array", f"{label} ({len(unit.steps)} kernel(s))", path, inputs,
                {"numpy": {"out": ref}, "vyre": {"out": vy}}, {"out": tolerance_for(ref.dtype, rel(1e-5, 1e-6))})


def op_call_cases(cat: Catalogue) -> None:
    """export_op of op calls at sizes of their own (multi-step pipelines: reductions, scans, sorts)."""
    rng = np.random.default_rng(11)
    calls = [("reduce.sum", (rng.random(300_000, dtype=np.float32),), {}),
             ("scan.inclusive", (rng.integers(0, 100, 70_000).astype(np.uint32),), {}),
             ("sort.radix", (rng.integers(0, 2**32, 5000, dtype=np.uint64).astype(np.uint32),), {}),
             ("reduce.argmax", (rng.random(100_000, dtype=np.float32),), {})]
    for op_id, arrays, kwargs in calls:
        spec = get(op_id)
        params = spec.params_for(*arrays, **kwargs)
        pipe = ops_api.pipeline_for(op_id, params)
        cid = cat.next_id(f"call {op_id}")
        path = export_op(op_id, *arrays, out_dir=cat.root, name=cid, **kwargs)
        with np.errstate(all="ignore"):
            ref = [np.asarray(r) for r in spec.reference(*arrays, **params)]
        got = execute(cat.gpu, pipe, list(arrays))
        tol = spec.tolerance_of(params)
        cat.add("op-call", f"{op_id} n={arrays[0].size} ({len(pipe.steps)} steps)", path,
                dict(zip(pipe.inputs, host_inputs(pipe, list(arrays)))),
                {"numpy": dict(zip(pipe.outputs, ref)), "vyre": dict(zip(pipe.outputs, got))},
                {n: tolerance_for(r.dtype, tol) for n, r in zip(pipe.outputs, ref)})


def tampered(cat: Catalogue, of: Case, find: str, replace: str) -> Case:
    """A copy of ``of`` whose embedded WGSL has ``find`` replaced by ``replace`` once (a flipped operator):
    the same inputs and expectations, so its comparison must fail."""
    js = (cat.root / of.module).read_text(encoding="utf-8")
    head, sep, wgsl = js.partition("export const WGSL = ")
    assert sep and find in wgsl, (of.id, find)
    out = cat.root / f"tampered_{of.module}"
    out.write_text(head + sep + wgsl.replace(find, replace, 1), encoding="utf-8")
    c = Case(f"tampered_{of.id}", "tampered", f"{of.label}: {find!r} -> {replace!r}", out.name, of.manifest,
             of.inputs, of.options, of.want, of.tolerance, of.trig)
    cat.cases.append(c)
    return c


def build(root: Path, gpu: Any) -> list[Case]:
    cat = Catalogue(root, gpu)
    op_cases(cat)
    corpus_cases(cat)
    kernel_cases(cat)
    array_cases(cat)
    op_call_cases(cat)
    from browser_functions import digits_cases, function_cases

    function_cases(cat)
    digits_cases(cat)
    saxpy_kernel = next(c for c in cat.cases if c.family == "kernel" and c.label.startswith("saxpy"))
    saxpy_program = next(c for c in cat.cases if c.family == "corpus" and c.label == "saxpy")
    for c in (saxpy_kernel, saxpy_program):
        wgsl = (cat.root / c.module).read_text(encoding="utf-8").partition("export const WGSL = ")[2]
        op = re.search(r"\) \* ", wgsl) or re.search(r" \* ", wgsl)
        assert op is not None, c.id
        tampered(cat, c, op.group(0), op.group(0).replace("*", "-"))
    return cat.cases


__all__ = ["build", "Catalogue"]
