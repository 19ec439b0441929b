"""The universal op harness: every registered op x every one of its witnesses.

For each (op, witness) -- test ids like ``reduce.sum[size1]``:
    * every program of the pipeline validates, and the pipeline binds consistently;
    * the wire format round-trips byte for byte;
    * the fingerprints are stable: two builds give the same programs, and a fresh
      interpreter (another process, another hash seed) computes the same fingerprints;
    * the optimizer is idempotent: the WGSL pass pipeline (and each pass) applied twice
      gives the wire bytes of applying it once;
    * the numpy reference matches the reference interpreter within the op's tolerance;
    * wgpu matches the reference interpreter within the op's tolerance, dispatching the
      programs step by step, and again through the convenience layer's path (the backend's
      own run_pipeline, resident buffers); ops whose params need features the adapter
      lacks skip, or fail under CI=true.
Every kernel variant of an op (OpSpec.variants) on every witness it applies to -- ids like
``map.exp@cpu-x4[f32-vec4]``: its programs validate and round-trip, and the reference
interpreter and wgpu (where each can run it) match the numpy reference within the op's tolerance.
Plus: the registry holds every op family the op library issue lists.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from vyre.backends.reference import ReferenceBackend
from vyre.backends.schedule import run_pipeline
from vyre.ir.limits import Limits
from vyre.ir.passes import WGSL_PASSES, wgsl_pipeline
from vyre.ir.program import Program
from vyre.ir.validate import validate
from vyre.ops.api import execute, facts
from vyre.ops.registry import all_ops, compare, get
from vyre.ops.variants import find as find_variant

from gpu_policy import skip_or_fail

ROOT = Path(__file__).resolve().parents[2]
OPS = all_ops()
# (op id, witness name, params): witness inputs are regenerated per test (see _witness)
CASES = [(spec.id, w.name, w.params) for spec in OPS for w in spec.witnesses()]
IDS = [f"{op}[{name}]" for op, name, _ in CASES]
# (op id, variant, witness name, params): each variant on the witnesses it applies to
VARIANT_CASES = [(spec.id, v.name, w.name, w.params) for spec in OPS for v in spec.variants
                 for w in spec.witnesses() if v.applies_to(w.params)]
VARIANT_IDS = [f"{op}@{v}[{name}]" for op, v, name, _ in VARIANT_CASES]
REFERENCE = ReferenceBackend()


def _key(params: dict) -> str:
    return repr(sorted(params.items()))


@functools.lru_cache(maxsize=4)
def _witnesses(op_id: str) -> dict:
    return {w.name: w for w in get(op_id).witnesses()}


def _witness(op_id: str, name: str):
    return _witnesses(op_id)[name]


@functools.lru_cache(maxsize=64)
def _pipeline(op_id: str, key: str):
    params = dict(ast.literal_eval(key))
    return get(op_id).build(**params)


def pipeline_of(op_id: str, params: dict):
    return _pipeline(op_id, _key(params))


@functools.lru_cache(maxsize=8)
def _interpreted(op_id: str, name: str) -> tuple:
    w = _witness(op_id, name)
    return tuple(run_pipeline(REFERENCE, pipeline_of(op_id, w.params), list(w.inputs)))


def _check(label: str, got, want, tol) -> None:
    assert len(got) == len(want), f"{label}: {len(got)} outputs, expected {len(want)}"
    for k, (g, w) in enumerate(zip(got, want)):
        ok, err, detail = compare(g, w, tol)
        assert ok, f"{label}, output {k}: {detail} (largest error {err:g}; tolerance {tol.describe()})"


# ----------------------------------------------------------------------------- structure
_CHECKED: dict[str, set] = {"validate": set(), "wire": set(), "passes": set()}


def _unchecked(check: str, programs) -> list:
    """Programs not yet checked by ``check`` (witnesses often share programs: check each once)."""
    return [p for p in programs if p.fingerprint not in _CHECKED[check]]


def _done(check: str, program) -> None:
    _CHECKED[check].add(program.fingerprint)


@pytest.mark.parametrize("op_id,name,params", CASES, ids=IDS)
def test_programs_validate(op_id, name, params):
    pipe = pipeline_of(op_id, params)
    assert pipe.steps, f"{op_id}: the pipeline has no steps"
    pipe.check()
    for p in _unchecked("validate", pipe.programs):
        validate(p)
        _done("validate", p)
    for n in pipe.inputs + pipe.outputs:
        assert n in pipe.buffers, f"{op_id}: pipeline input/output {n!r} is not a pipeline buffer"


@pytest.mark.parametrize("op_id,name,params", CASES, ids=IDS)
def test_wire_round_trip(op_id, name, params):
    for p in _unchecked("wire", pipeline_of(op_id, params).programs):
        wire = p.to_wire()
        back = Program.from_wire(wire)
        assert back.to_wire() == wire
        assert back.fingerprint == p.fingerprint
        _done("wire", p)


@pytest.mark.parametrize("op_id,name,params", CASES, ids=IDS)
def test_fingerprints_stable(op_id, name, params):
    first = [p.fingerprint for p in get(op_id).build(**params).programs]
    second = [p.fingerprint for p in get(op_id).build(**params).programs]
    assert first == second, f"{op_id}: building twice gave different programs"


@pytest.mark.parametrize("op_id,name,params", CASES, ids=IDS)
def test_optimizer_idempotent(op_id, name, params):
    for p in _unchecked("passes", pipeline_of(op_id, params).programs):
        once = wgsl_pipeline(p)
        assert wgsl_pipeline(once).to_wire() == once.to_wire(), f"{p.name}: the WGSL passes are not idempotent"
        for pass_ in WGSL_PASSES:
            one = pass_(p)
            assert pass_(one).to_wire() == one.to_wire(), f"{p.name}: pass {pass_.__name__} is not idempotent"
        _done("passes", p)


def test_fingerprints_across_processes():
    """A fresh process (another hash seed) builds every op's first witness to the same programs."""
    firsts = {}
    for spec in OPS:
        w = spec.witnesses()[0]
        firsts[spec.id] = (_key(w.params), [p.fingerprint for p in pipeline_of(spec.id, w.params).programs])
    script = (
        "import ast, json, sys\n"
        "from vyre.ops.registry import get\n"
        "todo = json.loads(sys.stdin.read())\n"
        "print(json.dumps({op: [p.fingerprint for p in get(op).build(**dict(ast.literal_eval(key))).programs]"
        " for op, key in todo.items()}))\n"
    )
    path = os.pathsep.join(dict.fromkeys([str(ROOT), *filter(None, sys.path)]))  # this process's packages
    env = {**os.environ, "PYTHONHASHSEED": "12345", "PYTHONPATH": path}
    run = subprocess.run([sys.executable, "-c", script], input=json.dumps({k: v[0] for k, v in firsts.items()}),
                         capture_output=True, text=True, env=env, cwd=ROOT, timeout=300)
    assert run.returncode == 0, run.stderr
    theirs = json.loads(run.stdout)
    differ = [op for op, (_, ours) in firsts.items() if theirs[op] != ours]
    assert not differ, f"fingerprints differ in another process for: {differ}"


# ----------------------------------------------------------------------------- outputs
@pytest.mark.parametrize("op_id,name,params", CASES, ids=IDS)
def test_numpy_reference_matches_interpreter(op_id, name, params):
    spec, w = get(op_id), _witness(op_id, name)
    pipe = pipeline_of(op_id, params)
    want = spec.reference(*w.inputs, **w.params)
    assert len(want) == len(pipe.outputs), f"{op_id}: reference gives {len(want)} outputs, pipeline {len(pipe.outputs)}"
    _check(f"{op_id}[{name}] interpreter vs numpy", _interpreted(op_id, name), want, spec.tolerance_of(w.params))


def _gpu_witness(gpu, op_id: str, name: str):
    spec, w = get(op_id), _witness(op_id, name)
    missing = sorted(set(spec.needs_of(w.params)) - set(gpu.features))
    if missing:
        skip_or_fail(f"{op_id}[{name}] needs adapter features {missing}")
    return spec, w


def _run_unmodified(label: str, run, w) -> list:
    before = [np.array(a, copy=True) for a in w.inputs]
    got = run(list(w.inputs))
    for a, b in zip(w.inputs, before):
        np.testing.assert_array_equal(a, b, err_msg=f"{label}: running the op modified its inputs")
    return got


@pytest.mark.parametrize("op_id,name,params", CASES, ids=IDS)
def test_wgpu_matches_interpreter(gpu, op_id, name, params):
    """Step by step: each program dispatched on its own (vyre.backends.schedule.run_pipeline)."""
    spec, w = _gpu_witness(gpu, op_id, name)
    pipe = pipeline_of(op_id, params)
    label = f"{op_id}[{name}] wgpu vs interpreter"
    got = _run_unmodified(label, lambda ins: run_pipeline(gpu, pipe, ins), w)
    _check(label, got, _interpreted(op_id, name), spec.tolerance_of(w.params))


@pytest.mark.parametrize("op_id,name,params", CASES, ids=IDS)
def test_wgpu_convenience_path_matches_interpreter(gpu, op_id, name, params):
    """The convenience layer's path (vyre.ops.api.execute): the backend's own run_pipeline
    (resident buffers, one submit) when it has one."""
    if getattr(gpu, "run_pipeline", None) is None:
        skip_or_fail("this backend has no run_pipeline: the convenience path is not exercised")
    spec, w = _gpu_witness(gpu, op_id, name)
    pipe = pipeline_of(op_id, params)
    label = f"{op_id}[{name}] wgpu run_pipeline vs interpreter"
    got = _run_unmodified(label, lambda ins: execute(gpu, pipe, ins), w)
    _check(label, got, _interpreted(op_id, name), spec.tolerance_of(w.params))


# ----------------------------------------------------------------------------- variants
@pytest.mark.parametrize("op_id,variant,name,params", VARIANT_CASES, ids=VARIANT_IDS)
def test_variant_matches_reference(gpu, op_id, variant, name, params):
    """A kernel variant: valid programs (under the limits it asks for), wire round trip, and the
    reference interpreter and wgpu (each where it can run the variant) within tolerance of numpy."""
    spec, w = get(op_id), _witness(op_id, name)
    v = find_variant(spec, variant)
    assert v is not None and v.applies_to(params)
    pipe = v.build(**params)
    pipe.check()
    limits = Limits.of(dict(v.min_limits)) if v.min_limits else None
    for p in pipe.programs:
        validate(p, limits)
        assert Program.from_wire(p.to_wire()).fingerprint == p.fingerprint
    want = spec.reference(*w.inputs, **w.params)
    tol = spec.tolerance_of(params)
    ran = []
    for backend in (REFERENCE, gpu):
        if v.missing(facts(backend)) or set(spec.needs_of(params)) - facts(backend).features:
            continue
        label = f"{op_id}@{variant}[{name}] on {backend.name} vs numpy"
        _check(label, _run_unmodified(label, lambda ins, b=backend: execute(b, pipe, ins), w), want, tol)
        ran.append(backend.name)
    if "wgpu" not in ran:
        skip_or_fail(f"{op_id}@{variant}[{name}]: the adapter cannot run it (ran on {ran or 'nothing'})")


# ----------------------------------------------------------------------------- registry
# Every family op library issue 4 lists, as id token sequences ("sort.topk" matches "topk").
FAMILIES = {
    "elementwise unary": ["map"], "elementwise binary": ["zip"],
    "reduce sum": ["reduce.sum"], "reduce prod": ["reduce.prod"], "reduce min": ["reduce.min"],
    "reduce max": ["reduce.max"], "reduce argmax": ["reduce.argmax"], "reduce mean": ["reduce.mean"],
    "inclusive scan": ["scan.inclusive"], "exclusive scan": ["scan.exclusive"], "histogram": ["histogram"],
    "radix sort (u32 keys)": ["sort.radix"], "radix sort (key-value pairs)": ["sort.radix_pairs"],
    "top-k": ["topk"], "gather": ["gather"], "scatter": ["scatter"], "transpose": ["transpose"],
    "matmul": ["matmul"], "matmul f16": ["matmul.f16"], "batched matmul": ["matmul.batched"],
    "softmax": ["softmax"], "layernorm": ["layernorm"], "rmsnorm": ["rmsnorm"], "gelu": ["gelu"], "silu": ["silu"],
    "attention": ["attention"], "conv2d": ["conv2d"],
    "fnv1a32": ["hash.fnv1a32"], "crc32": ["hash.crc32"],
    "popcount": ["bits.popcount"], "bit reverse": ["bits.reverse"],
}


def _has(family: str, ids: list[str]) -> bool:
    want = family.split(".")
    for op in ids:
        toks = op.split(".")
        if any(toks[k:k + len(want)] == want for k in range(len(toks) - len(want) + 1)):
            return True
    return False


def test_registry_has_every_family():
    ids = [s.id for s in OPS]
    missing = [f"{name} ({' or '.join(alts)})" for name, alts in FAMILIES.items()
               if not any(_has(a, ids) for a in alts)]
    assert not missing, f"the registry lacks op families: {missing}; registered: {ids}"


def test_registry_entries_are_complete():
    for spec in OPS:
        assert spec.id and spec.category and spec.summary, spec.id
        ws = spec.witnesses()
        assert ws, f"{spec.id} has no witnesses"
        names = [w.name for w in ws]
        assert len(set(names)) == len(names), f"{spec.id}: duplicate witness names {names}"
        again = spec.witnesses()
        assert [_digest(w) for w in again] == [_digest(w) for w in ws], f"{spec.id}: witnesses are not deterministic"
        for w in ws:
            json.dumps(w.params, default=list)  # params are plain JSON-able values


def _digest(w) -> str:
    h = hashlib.sha256(f"{w.name}|{_key(w.params)}".encode())
    for a in w.inputs:
        a = np.ascontiguousarray(a)
        h.update(f"{a.dtype.str}{a.shape}".encode())
        h.update(a.tobytes())
    return h.hexdigest()
