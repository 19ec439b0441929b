"""Export units (issue 28): an op call, a kernel launch and a fused array expression as one module each.

What the manifest says (every step in order with its grid and bindings, buffers shared between steps,
every uniform word by name, inputs and outputs by name) and that the unit, run by vyre
(``Unit.run``: the same steps through ``backend.run_pipeline``), gives what the op call, the launch and
the expression give. The modules themselves run in the browser check (test_browser.py).
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from browser_kernels import blur, clip_shift, saxpy

import vyre.array as va
from vyre import ops
from vyre.array._export_view import program_of
from vyre.cli import main
from vyre.errors import ArgumentTypeError, InvalidArgumentError, UnsupportedFeatureError
from vyre.export import export_array, export_kernel, export_op, export_unit, from_kernel, from_op


def test_an_op_call_exports_every_program_in_order(gpu, tmp_path):
    x = np.random.default_rng(0).random(300_000, dtype=np.float32)
    unit = from_op("reduce.sum", x)
    assert len(unit.steps) >= 2 and all(s.grid is not None for s in unit.steps)
    roles = {n: b.role for n, b in unit.buffers.items()}
    assert list(roles.values()).count("intermediate") >= 1 and unit.outputs == ("out",)
    m = json.loads(export_unit(unit, tmp_path, name="sum").read_text())
    assert m["kind"] == "op" and m["about"]["op"] == "reduce.sum" and m["about"]["tolerance"]["text"]
    assert [s["index"] for s in m["steps"]] == list(range(len(unit.steps)))
    inter = next(n for n, r in roles.items() if r == "intermediate")
    written = [k for k, s in enumerate(m["steps"]) if any(b["buffer"] == inter and b["access"] != "read"
                                                          for b in s["bindings"])]
    read = [k for k, s in enumerate(m["steps"]) if any(b["buffer"] == inter and b["access"] == "read"
                                                       for b in s["bindings"])]
    assert written and read and min(written) < max(read)  # shared between steps, written before it is read
    for s in m["steps"]:
        assert [w["value"] for w in s["params"]["layout"]][:4] == [
            "grid.x", "grid.y", "grid.z", "min(grid.x * grid.y * grid.z, 4294967295)"]
        assert {w["buffer"] for w in s["params"]["layout"][4:]} <= set(unit.buffers)
        assert (tmp_path / s["wgsl"]).is_file()
    got = unit.run(gpu, {unit.inputs[0]: x})["out"]
    want = ops.reduce_sum(gpu, x)
    assert np.array_equal(got, want)


def test_a_kernel_launch_exports_its_parameters_by_name(gpu, tmp_path):
    xi = np.arange(-50, 50, dtype=np.int32)
    m = json.loads(export_kernel(clip_shift, xi, np.zeros_like(xi), -10, 20, 2, True, dim=len(xi),
                                 out_dir=tmp_path).read_text())
    assert m["kind"] == "kernel" and m["name"] == "clip_shift"
    assert m["inputs"] == [{"name": "x", "kind": "buffer", "dtype": "i32"},
                           {"name": "lo", "kind": "scalar", "dtype": "i32"},
                           {"name": "hi", "kind": "scalar", "dtype": "i32"},
                           {"name": "shift", "kind": "scalar", "dtype": "u32"},
                           {"name": "negate", "kind": "scalar", "dtype": "bool"}]
    assert m["outputs"] == ["out"] and m["dims"] == {"rank": 1, "workgroup_size": [256, 1, 1], "default": [100]}
    kparams = next(d for d in m["uniforms"] if d["buffer"] == "kparams")
    assert [(w["word"], w["name"]) for w in kparams["words"]] == [
        (0, "dim[0]"), (1, "lo"), (2, "hi"), (3, "shift"), (4, "negate")]
    assert m["steps"][0]["grid"]["from"] == "dims"


def test_a_kernel_unit_runs_at_the_dims_given_at_run_time(gpu):
    img = np.random.default_rng(1).random((30, 41), dtype=np.float32)
    unit = from_kernel(blur, img, np.zeros_like(img), dim=img.shape)
    assert unit.inputs == ("img",) and unit.outputs == ("out",)
    small = np.random.default_rng(2).random((9, 41), dtype=np.float32)  # other rows, the same width
    got = unit.run(gpu, {"img": small}, dims=small.shape, counts={"out": small.size})["out"]
    (want,) = blur[small.shape](small, np.zeros_like(small), backend=gpu)
    assert np.array_equal(got.reshape(small.shape), want)
    with pytest.raises(InvalidArgumentError, match="not the sizes it was exported with"):
        unit.run(gpu, {"img": small})  # the export's dims would cover the wrong work: refused
    narrow = np.ones((9, 13), np.float32)  # the program bakes the width in (kernel[dim] specializes on it)
    with pytest.raises(InvalidArgumentError, match="whole rows"):
        unit.run(gpu, {"img": narrow.reshape(-1)[:100]}, dims=(9, 13), counts={"out": 100})
    x, y = np.arange(64, dtype=np.float32), np.ones(64, np.float32)
    s = from_kernel(saxpy, x, y, 2.0, dim=64)
    assert np.array_equal(s.run(gpu, {"x": x, "y": y, "a": 3.0})["y"], 3 * x + 1)


def test_program_of_a_fused_expression(gpu, tmp_path):
    rng = np.random.default_rng(3)
    x, w = rng.random(1000, dtype=np.float32), rng.random(1000, dtype=np.float32)
    xa, wa = va.asarray(x, device=gpu), va.asarray(w, device=gpu)
    expr = xa * wa + 2.5
    unit = program_of(expr, inputs={"x": xa})
    roles = {n: b.role for n, b in unit.buffers.items()}
    assert unit.inputs == ("x",) and roles["x"] == "input" and "constant" in roles.values()
    m = json.loads(export_array(expr, tmp_path, inputs={"x": xa}).read_text())
    scalars = [d for d in m["uniforms"] if d["role"] == "constant"]
    assert scalars and scalars[0]["words"][0]["value"] == 2.5 and scalars[0]["words"][0]["name"] == "scalar[0]"
    got = unit.run(gpu, {"x": x})["out"]
    assert np.array_equal(got, np.asarray(expr))  # program_of ran nothing: the expression evaluates as before
    chain = xa
    for _ in range(80):
        chain = chain * 0.5 + 1.0
    long = program_of(chain, inputs={"x": xa})
    assert len(long.steps) > 1 and any(b.role == "intermediate" for b in long.buffers.values())
    assert np.allclose(long.run(gpu, {"x": x})["out"], np.asarray(chain), rtol=1e-6)


def test_program_of_refuses_what_is_not_one_expression(gpu):
    xa = va.asarray(np.ones(10, np.float32), device=gpu)
    with pytest.raises(InvalidArgumentError, match="materialised"):
        program_of(xa)
    with pytest.raises(ArgumentTypeError):
        program_of(np.ones(3))  # type: ignore[arg-type]
    with pytest.raises(UnsupportedFeatureError, match="deferred"):
        program_of(va.sum(xa) + 1.0)
    with pytest.raises(InvalidArgumentError, match="does not read"):
        program_of(xa + 1.0, inputs={"x": xa, "other": va.asarray(np.ones(3, np.float32), device=gpu)})


def test_export_errors_are_vyre_errors(tmp_path):
    with pytest.raises(ArgumentTypeError):
        export_unit("not a unit", tmp_path)  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError):
        export_op("reduce.sum", np.ones(10, np.float32), out_dir=tmp_path, name="../x")


def test_the_cli_exports_op_calls_and_kernel_launches(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    np.save("x.npy", np.arange(5000, dtype=np.float32))
    assert main(["export", "--op", "reduce.sum", "--array", "x.npy", "--out", "o1"]) == 0
    assert json.loads((tmp_path / "o1" / "reduce.sum.json").read_text())["kind"] == "op"
    script = tmp_path / "k.py"
    script.write_text("import vyre\nfrom vyre import In, Out, f32, tid\n\n\n@vyre.kernel\n"
                      "def scale(x: In[f32], y: Out[f32], k: f32):\n    y[tid()] = k * x[tid()]\n")
    assert main(["export", "k.py:scale", "--kernel", "--dim", "5000", "-i", "x=x.npy", "-i", "y=x.npy",
                 "-i", "k=2.0", "--out", "o2"]) == 0
    m = json.loads((tmp_path / "o2" / "scale.json").read_text())
    assert [i["name"] for i in m["inputs"]] == ["x", "k"] and m["outputs"] == ["y"]
    capsys.readouterr()
    assert main(["export", "--op", "reduce.sum", "--out", "o3", "k.py"]) == 2
    assert "leave PROGRAM" in capsys.readouterr().err


def test_the_export_page_runs_as_written(gpu, tmp_path, capsys):
    import doc_pages

    ran, _ = doc_pages.run_page(doc_pages.DOCS / "export.md", tmp_path, capsys)
    assert ran >= 1


def test_a_missing_browser_fails_under_ci_and_skips_otherwise(monkeypatch):
    import browser

    monkeypatch.setattr(browser, "chromium", lambda: None)
    monkeypatch.setattr(browser, "IN_CI", True)
    with pytest.raises(pytest.fail.Exception, match="CI=true: the browser check cannot be skipped"):
        browser.require()
    monkeypatch.setattr(browser, "IN_CI", False)
    with pytest.raises(pytest.skip.Exception, match="apt-get install chromium"):
        browser.require()
