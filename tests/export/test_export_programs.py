"""Every op's programs, the parity corpus and a sample of fuzzed programs, exported with vyre.export (issue 12).

* the manifest describes the program (bindings, dtypes, access, counts, WGSL types, features,
  fingerprint, params words, grid rule) and the files hold the lowering's WGSL;
* every exported WGSL compiles under Dawn's Tint (tests/tint_check.py);
* every exported JavaScript module runs in Node.js on Dawn's null backend (npm package webgpu,
  tests/tint/run_exported.mjs): buffers, bind group layouts, pipeline, bind groups, params uniform,
  dispatch and readback pass WebGPU's validation (error scopes and uncaptured errors), and its plan
  (element counts, logical grid, folded workgroups, params words) equals vyre's host planning
  (``host.plan_dispatch``, ``fold_grid``, ``params_words``). The null backend runs no shader: output
  values are not checked, only their types and lengths.

One export, one Tint process and one Node.js process per test session worker (module fixture).
Without Node.js or the package the Node tests skip; under CI=true they fail.
"""

from __future__ import annotations

import re
from pathlib import Path

import export_cases
import pytest
import tint_check

from vyre.backends import host
from vyre.ir.types import Access, DataType
from vyre.lower import lower


@pytest.fixture(scope="module")
def exported(tmp_path_factory) -> tuple[list[export_cases.Exported], Path]:
    out = tmp_path_factory.mktemp("export")
    cases = export_cases.collect()
    export_cases.export_all(cases, out)
    return cases, out


@pytest.fixture(scope="module")
def node_results(exported) -> dict:
    tint_check.require()
    cases, out = exported
    data = out / "data"
    data.mkdir(exist_ok=True)
    return export_cases.run_node([export_cases.run_spec(c, data) for c in cases], [])


def test_every_program_is_exported(exported):
    cases, out = exported
    assert len(cases) >= 500, len(cases)
    assert sum(c.label.startswith("corpus") for c in cases) >= 40
    for c in cases:
        for ext in ("wgsl", "json", "js"):
            assert (out / f"{c.name}.{ext}").is_file(), (c.name, ext)


def test_manifest_describes_the_program(exported):
    cases, _ = exported
    for c in cases:
        m, p = c.manifest, c.program
        lowered = lower(p)
        wgsl = c.manifest_path.with_suffix(".wgsl").read_text(encoding="utf-8")
        assert wgsl == lowered.wgsl, c.label
        assert c.manifest_path.with_suffix(".js").read_text(encoding="utf-8").count("export const WGSL = ") == 1
        assert (m["format"], m["version"], m["name"], m["program"]) == ("vyre-export", 1, c.name, p.name)
        assert m["fingerprint"] == p.fingerprint and m["lowering_version"] == lowered.lowering_version
        assert m["entry_point"] == "main" and tuple(m["workgroup_size"]) == p.workgroup_size
        assert set(m["features"]) == set(lowered.features)
        assert ("shader-f16" in m["features"]) == ("enable f16;" in wgsl)
        decls = p.sorted_buffers
        assert [b["name"] for b in m["buffers"]] == [d.name for d in decls], c.label
        for k, (b, d) in enumerate(zip(m["buffers"], decls)):
            assert (b["index"], b["group"], b["binding"], b["dtype"], b["access"], b["count"]) == \
                (k, 0, d.binding, d.dtype.value, d.access.value, d.count), c.label
            assert (b["input"], b["output"]) == (d.access.readable, d.access.writable)
            assert b["storage"]["element_bytes"] == d.dtype.element_nbytes
            assert b["storage"]["lanes"] == d.dtype.storage_lanes and b["host"]["lanes"] == d.dtype.lanes
            assert b["storage"]["scalar"] == d.dtype.storage_scalar.value
            # the WGSL declares exactly the manifest's type at that binding
            decl_line = re.search(rf"@group\(0\) @binding\({d.binding}\) var<([a-z_, ]+)> \w+: (.+);", wgsl)
            assert decl_line is not None, (c.label, d.name)
            assert decl_line.group(2) == b["wgsl_type"], (c.label, d.name)
            space = {"uniform": "uniform", "read-only-storage": "storage, read", "storage": "storage, read_write"}
            assert decl_line.group(1) == space[b["binding_type"]]
            assert ("atomic<" in b["wgsl_type"]) == b["atomic"]
            if d.access is Access.UNIFORM:
                assert b["binding_bytes"] % 16 == 0 and b["binding_bytes"] >= host.storage_nbytes(d.dtype, d.count)
        rows = max(1, -(-len(decls) // 4))
        assert m["params"]["words"] == 4 + 4 * rows and m["params"]["bytes"] == 16 + 16 * rows
        assert f"lens: array<vec4<u32>, {rows}>," in wgsl
        assert (m["params"]["group"], m["params"]["binding"]) == (1, 0)
        g = m["grid"]
        assert g["grid_from"] == p.grid_from and g["invocations_per_workgroup"] == p.workgroup_invocations
        n_storage = sum(d.access is not Access.UNIFORM for d in decls)
        assert m["limits"].get("maxStorageBuffersPerShaderStage", 8) >= n_storage


def test_exported_wgsl_compiles_under_tint(exported):
    tint_check.require()
    cases, _ = exported
    sources = {c.name: c.manifest_path.with_suffix(".wgsl").read_text(encoding="utf-8") for c in cases}
    report = tint_check.check(sources.items())
    assert not report.failures, report.describe()
    assert not report.known, report.describe_known()
    # only programs with more storage buffers than the null adapter's 8 meet a limit
    for name in report.limits:
        assert next(c for c in cases if c.name == name).manifest["limits"], name
    print(f"Tint: {report.checked} exported WGSL sources compile ({len(report.limits)} over the null adapter's limits)")


def _expected_plan(c: export_cases.Exported) -> dict:
    plan = host.plan_dispatch(c.program, c.inputs, c.config)
    return {"grid": list(plan.grid), "workgroups": list(host.fold_grid(plan.grid)),
            "params": [int(w) for w in host.params_words(plan)], "counts": [b.count for b in plan.buffers]}


def test_exported_modules_run_on_the_null_device(exported, node_results):
    cases, _ = exported
    failures, skipped, ran = [], [], 0
    for c in cases:
        r = node_results[c.name]
        if "skipped" in r:
            # only a limit the null adapter lacks (more than 8 storage buffers) may keep a module from a device
            assert c.manifest["limits"] and "needs" in r["skipped"], (c.label, r["skipped"])
            skipped.append(c.name)
            continue
        ran += 1
        if not r["ok"]:
            failures.append(f"{c.label} ({c.name}): {r['error']} {r['scoped']} {r['uncaptured']}")
            continue
        outs = c.program.output_buffers
        assert list(r["outputs"]) == [d.name for d in outs], c.label
        plan = host.plan_dispatch(c.program, c.inputs, c.config)
        for d in outs:
            count = next(b.count for b in plan.buffers if b.decl.name == d.name)
            want = {DataType.BOOL: "Uint8Array", DataType.F16: "Float32Array", DataType.I32: "Int32Array",
                    DataType.U32: "Uint32Array", DataType.F32: "Float32Array"}[d.dtype.scalar]
            assert r["outputs"][d.name] == {"type": want, "length": count * d.dtype.lanes}, (c.label, d.name)
    assert not failures, f"{len(failures)} of {ran} exported modules failed on the null device:\n" + \
        "\n".join(failures[:20])
    assert len(skipped) <= 10, skipped
    print(f"null device: {ran} exported modules ran without a WebGPU error, {len(skipped)} need more "
          f"storage buffers than the null adapter has (webgpu {node_results['summary']['webgpu']})")


def test_exported_plan_equals_host_planning(exported, node_results):
    cases, _ = exported
    checked = 0
    for c in cases:
        r = node_results[c.name]
        if r.get("plan") is None:
            continue
        want = _expected_plan(c)
        got = {k: r["plan"][k] for k in want}
        assert got == want, c.label
        checked += 1
    assert checked >= len(cases) - 10
    # the corpus folds a grid past 65535 workgroups: the JS folds it like fold_grid
    assert any(r.get("plan") and r["plan"]["workgroups"][1] > 1 for r in node_results.values() if isinstance(r, dict))
