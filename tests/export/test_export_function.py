"""A traced function as one export (``vyre.export.export_function``): what the manifest and the weights file
say, and that the unit, run by vyre (``Unit.run``: the recorded steps over resident buffers), gives what
calling the function gives, on both backends. The modules themselves run in the browser check
(test_browser.py: an MLP, a softmax, the trained digits CNN, the example page)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from safetensors.numpy import load_file

import vyre.array as xp
from vyre.errors import ArgumentTypeError, InvalidArgumentError, TraceError, UnsupportedFeatureError
from vyre.export import export_function, export_unit, from_function


def _mlp(backend):
    rng = np.random.default_rng(5)
    w = {"w1": rng.standard_normal((12, 8)).astype(np.float32), "b1": rng.standard_normal(8).astype(np.float32),
         "w2": rng.standard_normal((8, 3)).astype(np.float32)}
    params = {k: xp.asarray(v, device=backend) for k, v in w.items()}

    def mlp(x):
        h = xp.maximum(x @ params["w1"] + params["b1"], 0.0)
        out = h @ params["w2"]
        return {"scores": out, "best": xp.argmax(out, axis=1)}

    return mlp, w, rng.standard_normal((20, 12)).astype(np.float32)


def test_a_function_exports_its_steps_and_weights(xb, tmp_path):
    mlp, w, x = _mlp(xb)
    unit = from_function(mlp, x)
    assert unit.kind == "function" and unit.inputs == ("x",) and unit.outputs == ("scores", "best")
    roles = {n: b.role for n, b in unit.buffers.items()}
    assert {"params.w1", "params.b1", "params.w2"} <= {n for n, r in roles.items() if r == "constant"}
    assert "intermediate" in roles.values() and len(unit.steps) >= 3
    got = unit.run(xb, {"x": x})
    want = {k: np.asarray(a) for k, a in mlp(xp.asarray(x, device=xb)).items()}
    for k in want:  # the same programs on the same backend: the same bits
        assert got[k].shape == want[k].shape and np.array_equal(got[k], want[k]), k
    h = np.maximum(x.astype(np.float64) @ w["w1"] + w["b1"], 0) @ w["w2"]
    np.testing.assert_allclose(got["scores"], h, rtol=1e-5, atol=1e-5)

    path = export_function(mlp, x, out_dir=tmp_path, name="mlp")
    m = json.loads(path.read_text())
    assert m["kind"] == "function" and m["weights"]["file"] == "mlp.safetensors"
    assert [i["name"] for i in m["inputs"]] == ["x"] and m["outputs"] == ["scores", "best"]
    assert m["about"]["inputs"]["x"] == {"shape": [20, 12], "dtype": "float32"}
    assert m["output_shapes"] == {"scores": [20, 3], "best": [20]}
    blob = (tmp_path / "mlp.safetensors").read_bytes()
    assert len(blob) == m["weights"]["bytes"]
    tensors = load_file(tmp_path / "mlp.safetensors")
    for k, v in w.items():
        assert np.array_equal(tensors[f"params.{k}"], v), k  # the closed-over arrays, by their names
    for b in m["buffers"]:
        if b["role"] == "constant":  # every constant in the file, at the offsets the manifest gives
            v = b["value"]
            assert v["file"] == "mlp.safetensors" and "base64" not in v
            raw = np.frombuffer(blob[v["offset"]:v["offset"] + v["bytes"]], tensors[v["key"]].dtype)
            assert np.array_equal(raw, tensors[v["key"]].reshape(-1))
    for s in m["steps"]:
        assert s["grid"]["fixed"] and all("elements" in x for x in s["bindings"])
        assert [w["elements"] for w in s["params"]["layout"][4:]] == [x["elements"] for x in s["bindings"]]
    again = export_function(mlp, x, out_dir=tmp_path / "again", name="mlp")
    assert (tmp_path / "again" / "mlp.safetensors").read_bytes() == blob  # the same bytes, export to export
    assert json.loads(again.read_text())["weights"] == m["weights"]
    inline = json.loads(export_unit(unit, tmp_path, name="mlp_inline", weights="inline").read_text())
    assert inline["weights"] is None and all("base64" in b["value"] for b in inline["buffers"]
                                              if b["role"] == "constant")


def test_a_vec4_view_keeps_its_own_element_count(gpu):
    """An elementwise kernel may read a buffer as vec4 that another step wrote as f32: each binding carries
    the count it was dispatched with (a quarter there), not the buffer's."""
    x = np.random.default_rng(1).random((64, 32), dtype=np.float32)

    def f(x):
        return xp.max(x, axis=1) * 2.0 + 1.0

    unit = from_function(f, x)
    first, second = unit.steps  # the row maxima, then the elementwise rest four lanes at a time
    assert [d.dtype.value for d in second.program.sorted_buffers][0] == "vec4<f32>"
    t = second.bind[0]
    assert first.bind[1] == t and unit.buffers[t].dtype.value == "f32" and unit.buffers[t].count == 64
    assert first.counts == (2048, 64) and second.counts is not None and second.counts[0] == 16
    got = unit.run(gpu, {"x": x})["out"]
    np.testing.assert_array_equal(got, np.asarray(f(xp.asarray(x, device=gpu))))
    np.testing.assert_allclose(got, x.max(axis=1) * 2 + 1, rtol=1e-6)


def test_lazy_weights_become_constants_not_steps(ref_backend):
    """Closed-over arrays still pending (fresh weights) are evaluated first: constants, not the kernels
    computing them."""
    x = np.ones((4, 6), np.float32)
    w = xp.asarray(np.full((6, 2), 0.5, np.float32), device=ref_backend) * 2.0  # lazy
    unit = from_function(lambda a: a @ w, x)
    assert not w.is_lazy and "w" in unit.buffers and unit.buffers["w"].role == "constant"
    assert unit.buffers["w"].shape == (6, 2)
    np.testing.assert_array_equal(unit.run(ref_backend, {"a": x})["out"], np.full((4, 2), 6.0, np.float32))


def test_bad_functions_are_refused_before_anything_is_written(ref_backend, tmp_path):
    x = np.ones(8, np.float32)
    xs = xp.asarray(x, device=ref_backend)
    with pytest.raises(ArgumentTypeError, match="not an array"):
        from_function(lambda a, k: a * k, x, 2.0)
    with pytest.raises(InvalidArgumentError, match="give example arrays"):
        from_function(lambda: xs * 2)
    with pytest.raises(ArgumentTypeError, match="must return a vyre array"):
        from_function(lambda a: 3, x, device=ref_backend)
    with pytest.raises(UnsupportedFeatureError, match="an argument or a constant"):
        from_function(lambda a: a, x, device=ref_backend)
    with pytest.raises(InvalidArgumentError, match="2 output name"):
        from_function(lambda a: a * 2, x, outputs=("y", "z"), device=ref_backend)
    with pytest.raises(TraceError, match="reading array values on the host"):
        from_function(lambda a: a * float(xp.sum(a)), x, device=ref_backend)
    with pytest.raises(InvalidArgumentError, match="weights="):
        export_function(lambda a: a * 2, x, out_dir=tmp_path, weights="zip")
    assert not list(tmp_path.iterdir())


def test_temporaries_share_buffers_where_their_lives_do_not_overlap(xb):
    """Four chained matmuls: the third result reuses the first's buffer (dead by then), as vyre.compile's
    replay shares them; the numbers stay those of the call."""
    rng = np.random.default_rng(3)
    wh = (rng.random((32, 32), dtype=np.float32) / 8).astype(np.float32)
    w = xp.asarray(wh, device=xb)

    def chain(x):
        for _ in range(4):
            x = x @ w
        return x

    x = rng.random((64, 32), dtype=np.float32)
    unit = from_function(chain, x)
    binds = [s.bind for s in unit.steps]
    assert [n for n, b in unit.buffers.items() if b.role == "intermediate"] == ["t0", "t1"], binds
    assert binds[0][2] == binds[2][2] == "t0" and binds[3][2] == "out"
    got = unit.run(xb, {"x": x})["out"]
    assert np.array_equal(got, np.asarray(chain(xp.asarray(x, device=xb))))
    want = x.astype(np.float64)
    for _ in range(4):
        want = want @ wh
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
