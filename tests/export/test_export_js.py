"""The exported JavaScript module's pure parts against vyre's host code, and its failure paths.

In one Node.js process (tests/tint/run_exported.mjs, Dawn's null backend for the runs):
* ``defaultGrid`` against ``host.default_grid`` (grid_from, first writable buffer, refusals for a
  y/z built-in and for a larger input, uniform buffers ignored, no buffers) over many counts;
* ``foldGrid`` against ``host.fold_grid`` (past 65535, 65535^2 and the 65535^3 refusal);
* ``paramsWords`` against ``host.params_words``;
* ``toStorage`` / ``fromStorage`` against ``host.host_to_storage`` / ``storage_to_host`` (bool words,
  vec3 padding, f16 rounding to nearest even with subnormals and overflow);
* negative controls: a module whose bind group layout disagrees with its WGSL, and one whose params
  uniform is too small, fail with a WebGPU error on the null device (so the runs of
  test_export_programs.py would see such a bug); bad inputs and grids fail before any GPU work.
"""

from __future__ import annotations

import json
from pathlib import Path

import export_cases
import numpy as np
import pytest
import tint_check

from vyre.backends import host
from vyre.errors import ArgumentTypeError, InvalidArgumentError, LoweringError, ValidationError
from vyre.export import export_program
from vyre.ir.builder import ProgramBuilder
from vyre.ir.decls import BufferDecl
from vyre.ir.program import Program

COUNTS = [0, 1, 63, 64, 65, 1000, 64 * 65535, 64 * 65535 + 1, 10**9]


def _grid_from():
    b = ProgramBuilder("gf", 64, grid_from="x")
    x = b.buffer("x", "f32")
    y = b.buffer("y", "f32", access="write", count=4)
    with b.if_(b.global_index() < x.len()):
        y[0] = x[b.global_index()]
    return b.build()


def _basis():
    b = ProgramBuilder("basis", (8, 8, 1))
    u = b.buffer("u", "u32", access="uniform", count=8)
    x = b.buffer("x", "f32")
    w = b.buffer("w", "i32", access="read")
    y = b.buffer("y", "f32", access="read_write")
    i = b.global_index()
    with b.if_(i < y.len()):
        y[i] = x[i] + b.cast(w[i], "f32") + b.cast(u[0], "f32")
    return b.build()


def _read_only():
    b = ProgramBuilder("ro", 32)
    x = b.buffer("x", "u32")
    b.buffer("z", "u32")
    with b.if_(b.global_index() < x.len()):
        pass  # nothing to write: the first buffer drives the grid
    return b.build()


def _two_d():
    b = ProgramBuilder("twod", (8, 8, 1))
    x = b.buffer("x", "f32")
    y = b.buffer("y", "f32", access="write")
    i = b.global_id(1) * 64 + b.global_id(0)
    with b.if_(i < y.len()):
        y[i] = x[i]
    return b.build()


def _empty():
    return ProgramBuilder("empty", 1).build()


def _layout():
    b = ProgramBuilder("layout", 64)
    for k, dtype in enumerate(["bool", "vec3<f32>", "f16", "vec3<f16>", "vec2<i32>", "u32", "vec2<f16>"]):
        buf = b.buffer(f"b{k}", dtype, access="read_write")
        with b.if_(b.global_index() < buf.len()):
            buf[b.global_index()] = buf[b.global_index()]
    return b.build()


GRID_PROGRAMS = [_grid_from, _basis, _read_only, _two_d, _empty]

F16_VALUES = [0.0, -0.0, 1.0, 1 + 2**-11, 1 + 3 * 2**-11, -(1 + 2**-11), 65504.0, 65519.0, 65520.0, 1e9, -1e9,
              2**-24, 3 * 2**-25, 2**-25, 2**-26, 1e-8, 0.1, -2.5, 6.1e-5, 1234.5678]


def _plans(program: Program, counts: list[int]) -> list[host.BufferPlan]:
    return [host.BufferPlan(d, k, c, 4, None) for k, (d, c) in enumerate(zip(program.sorted_buffers, counts))]


def _host(fn, *args):
    try:
        return list(fn(*args))
    except Exception as exc:  # DispatchError: both sides must refuse
        return f"error {type(exc).__name__}"


def _count_vectors(program: Program) -> list[list[int]]:
    n = len(program.sorted_buffers)
    if n == 0:
        return [[]]
    out = []
    for c in COUNTS:
        for d in (c, c // 2, c * 3 + 1, 0):
            vec = [(c if k % 2 == 0 else d) for k in range(n)]
            out.append([(8 if x.count == 8 else v) for x, v in zip(program.sorted_buffers, vec)])
    return out


@pytest.fixture(scope="module")
def node(tmp_path_factory):
    tint_check.require()
    out = tmp_path_factory.mktemp("export-js")
    calls, expected, runs = [], {}, []
    # --- default grid, fold, params words
    for make in GRID_PROGRAMS:
        p = make()
        js = str(export_program(p, out).with_suffix(".js"))
        for k, counts in enumerate(_count_vectors(p)):
            cid = f"grid {p.name} {k}"
            calls.append({"id": cid, "module": js, "fn": "defaultGrid", "args": [counts]})
            expected[cid] = _host(host.default_grid, p, _plans(p, counts))
            grid = [3, 5, 7] if not counts else [max(1, counts[0] % 70000), 2, 1]
            pid = f"params {p.name} {k}"
            calls.append({"id": pid, "module": js, "fn": "paramsWords", "args": [grid, counts]})
            plan = host.DispatchPlan(p, _plans(p, counts), tuple(grid))
            expected[pid] = [int(w) for w in host.params_words(plan)]
    js = str(export_program(_basis(), out).with_suffix(".js"))
    totals = [1, 2, 65535, 65536, 65535 * 2 + 1, 65535**2, 65535**2 + 1, 12345678, 65535**3, 65535**3 + 1]
    for k, t in enumerate(totals):
        for j, (grid, most) in enumerate([((t, 1, 1), 65535), ((1, t, 1), 65535), ((t, 1, 1), 7)]):
            cid = f"fold {k} {j}"
            calls.append({"id": cid, "module": js, "fn": "foldGrid", "args": [list(grid), most]})
            expected[cid] = _host(host.fold_grid, grid, most)
    calls.append({"id": "fold zero", "module": js, "fn": "foldGrid", "args": [[0, 1, 1]]})
    expected["fold zero"] = [0, 0, 0]
    # --- host layout
    lp = _layout()
    ljs = str(export_program(lp, out).with_suffix(".js"))
    rng = np.random.default_rng(3)
    layout_cases = []
    for d in lp.sorted_buffers:
        n = 7
        if d.dtype.value == "bool":
            values = [bool(v) for v in rng.integers(0, 2, n)]
        elif d.dtype.is_float and d.dtype.uses_f16:
            values = (F16_VALUES * 2)[: n * d.dtype.lanes] if d.dtype.lanes > 1 else F16_VALUES
        elif d.dtype.is_float:
            values = [float(v) for v in rng.standard_normal(n * d.dtype.lanes).astype(np.float32)]
        else:
            values = [int(v) for v in rng.integers(-1000, 1000, n * d.dtype.lanes)]
            if d.dtype.scalar.value == "u32":
                values = [abs(v) for v in values]
        count = len(values) // d.dtype.lanes
        with np.errstate(over="ignore"):  # 65520 and 1e9 overflow f16 to inf, on both sides
            arr = np.array(values, dtype=np.float32 if d.dtype.is_float else None).astype(d.dtype.numpy_dtype)
        storage, _ = host.host_to_storage(d, arr.reshape(count, d.dtype.lanes) if d.dtype.lanes > 1 else arr)
        raw = storage.tobytes()
        layout_cases.append((d, count, raw))
        calls.append({"id": f"to {d.name}", "module": ljs, "fn": "toStorage", "args": [d.name, values]})
        calls.append({"id": f"from {d.name}", "module": ljs, "fn": "fromStorage",
                      "args": [d.name, list(raw), count, {"f16Bits": True}]})
    # --- negative controls and refusals
    saxpy = _basis()
    good = export_program(saxpy, out, name="control").with_suffix(".js")
    text = good.read_text()
    bad_layout = out / "bad_layout.js"
    bad_layout.write_text(text.replace('"binding_type": "storage"', '"binding_type": "read-only-storage"'))
    small_params = out / "small_params.js"
    assert "size: p.params.byteLength" in text
    small = text.replace("size: p.params.byteLength", "size: 16")
    small = small.replace("writeBuffer(params, 0, p.params)", "writeBuffer(params, 0, p.params.subarray(0, 4))")
    small_params.write_text(small)
    f32 = {"array": "Float32Array", "length": 100}
    ins = {"u": {"array": "Uint32Array", "length": 8}, "x": f32, "w": {"array": "Int32Array", "length": 100}, "y": f32}
    for rid, module, inputs, grid in [
        ("control", good, ins, None), ("bad layout", bad_layout, ins, None), ("small params", small_params, ins, None),
        ("wrong type", good, {**ins, "x": {"array": "Int32Array", "length": 100}}, None),
        ("missing input", good, {k: v for k, v in ins.items() if k != "w"}, None),
        ("zero grid", good, ins, [0, 1, 1]),
        ("bigger input", good, {**ins, "x": {"array": "Float32Array", "length": 101}}, None),
        ("explicit grid", good, {**ins, "x": {"array": "Float32Array", "length": 101}}, [2, 1, 1]),
        ("two-d refused", export_program(_two_d(), out).with_suffix(".js"), {"x": f32}, None),
        ("two-d grid", export_program(_two_d(), out).with_suffix(".js"), {"x": f32}, [2, 2]),
        ("f16 device", ljs, {d.name: {"array": "Uint8Array" if d.dtype.value == "bool" else
                                      "Uint16Array" if d.dtype.uses_f16 else
                                      {"vec3<f32>": "Float32Array", "vec2<i32>": "Int32Array", "u32": "Uint32Array"}[
                                          d.dtype.value], "length": 3 * d.dtype.lanes}
                             for d in lp.sorted_buffers}, None),
    ]:
        runs.append({"id": rid, "module": str(module), "inputs": inputs, "grid": grid, "counts": {}})
    results = export_cases.run_node(runs, calls)
    return results, expected, layout_cases


def test_default_grid_fold_and_params_match_host(node):
    results, expected, _ = node
    mismatches = []
    for cid, want in expected.items():
        r = results[cid]
        got = f"error {'DispatchError'}" if "error" in r and r.get("kind") == "dispatch" else r.get("value", r)
        if got != want:
            mismatches.append(f"{cid}: js {got} host {want}")
    assert not mismatches, "\n".join(mismatches[:20])
    refusals = [c for c, w in expected.items() if isinstance(w, str)]
    assert any(c.startswith("grid twod") for c in refusals) and any(c.startswith("grid basis") for c in refusals)
    assert any(c.startswith("fold") for c in refusals)
    assert len(expected) > 300


def test_host_layout_matches_host(node):
    results, _, layout_cases = node
    for d, count, raw in layout_cases:
        to = results[f"to {d.name}"]["value"]
        assert to["count"] == count, d.name
        got = bytes(to["bytes"])
        assert got[: len(raw)] == raw and not any(got[len(raw):]), (d.dtype.value, got.hex(), raw.hex())
        back = results[f"from {d.name}"]["value"]
        want = host.storage_to_host(d, np.frombuffer(raw, np.uint8), count)
        if d.dtype.uses_f16:
            want = want.view(np.uint16)
        assert back == [int(v) if d.dtype.value == "bool" else v for v in want.reshape(-1).tolist()], d.dtype.value


def test_failures_are_reported(node):
    results, _, _ = node
    assert results["control"]["ok"], results["control"]
    assert results["explicit grid"]["ok"] and results["explicit grid"]["plan"]["grid"] == [2, 1, 1]
    assert results["two-d grid"]["ok"] and results["two-d grid"]["plan"]["grid"] == [2, 2, 1]
    assert results["f16 device"]["ok"], results["f16 device"]
    for rid, kind, words in [
        ("bad layout", "webgpu", "not compatible"), ("small params", "webgpu", "DispatchWorkgroups"),
        ("wrong type", "dispatch", "is a Int32Array"), ("missing input", "dispatch", "missing [w]"),
        ("zero grid", "dispatch", "integer >= 1"), ("bigger input", "dispatch", "larger input"),
        ("two-d refused", "dispatch", "global_id(1)"),
    ]:
        r = results[rid]
        assert not r["ok"] and r["error"].startswith(kind + ":") and words in r["error"], (rid, r)
        assert not r["scoped"] and not r["uncaptured"], (rid, r)  # the module caught its own WebGPU errors


def test_export_program_api(tmp_path):
    p = _grid_from()
    path = export_program(p, tmp_path / "a" / "b")
    assert path == tmp_path / "a" / "b" / "gf.json" and path.with_suffix(".js").is_file()
    assert json.loads(path.read_text())["name"] == "gf"
    assert export_program(p, str(tmp_path), name="other.v1").name == "other.v1.json"
    odd = ProgramBuilder("op/with space", 1).build()
    assert export_program(odd, tmp_path).name == "op_with_space.json"
    for bad in ("", "../x", "a/b", ".hidden", "-x", "x" * 121):
        # issue 27's rule: a bad argument is also the builtin ValueError
        with pytest.raises(InvalidArgumentError, match="not a plain file name") as info:
            export_program(p, tmp_path, name=bad)
        assert isinstance(info.value, ValueError) and info.value.fix
    with pytest.raises(ArgumentTypeError) as type_info:
        export_program(p, tmp_path, name=3)  # type: ignore[arg-type]
    assert isinstance(type_info.value, TypeError)
    with pytest.raises(ArgumentTypeError):
        export_program("not a program", tmp_path)  # type: ignore[arg-type]
    assert not list(Path(tmp_path).glob("x*")) and not list(Path(tmp_path).glob("*.hidden*"))
    invalid = Program(name="u", buffers=[BufferDecl(name="u", binding=0, dtype="f32", access="uniform")])
    with pytest.raises(ValidationError):
        export_program(invalid, tmp_path)
    (tmp_path / "file").write_text("")
    with pytest.raises(LoweringError):
        export_program(p, tmp_path / "file")
    assert not list(Path(tmp_path).glob("u.*"))
