"""python -m vyre.conform: the matrix, the certificate, the exit code, the op catalogue."""

from __future__ import annotations

import dataclasses
import io
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from vyre import conform
from vyre.ops.registry import all_ops, get

from procs import child_env

ROOT = Path(__file__).resolve().parent.parent
HEX64 = set("0123456789abcdef")


def _is_hash(h) -> bool:
    return isinstance(h, str) and len(h) == 64 and set(h) <= HEX64


def test_command_on_elementwise_ops(gpu, tmp_path):
    out = tmp_path / "cert.json"
    env = child_env()
    run = subprocess.run([sys.executable, "-m", "vyre.conform", "--ops", "elementwise", "--quick", "--out", str(out)],
                         capture_output=True, text=True, env=env, cwd=ROOT, timeout=600)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    cert = json.loads(out.read_text())
    ids = sorted(s.id for s in all_ops() if s.category == "elementwise")
    assert [e["id"] for e in cert["ops"]] == ids
    assert cert["backends"] == ["reference", "wgpu"] and cert["oracle"] == "numpy" and cert["quick"] is True
    assert cert["vyre_version"] and cert["adapter"]["device"] == gpu.adapter_info["device"]
    assert cert["summary"]["passed"] is True and cert["summary"]["cells"]["pass"] == 2 * len(ids)
    for e in cert["ops"]:
        assert e["cells"] == {"reference": "pass", "wgpu": "pass"}, e["id"]
        assert e["programs"] and all(_is_hash(f) for f in e["programs"])
        assert len(e["witnesses"]) == 1  # --quick: the smallest witness
        w = e["witnesses"][0]
        assert _is_hash(w["hash"]) and set(w["outputs"]) == {"numpy", "reference", "wgpu"}
        assert all(_is_hash(h) for hs in w["outputs"].values() for h in hs)
        assert all(c["status"] == "pass" and isinstance(c["max_error"], float) for c in w["cells"].values())
        spec = get(e["id"])
        small = min(spec.witnesses(), key=lambda x: sum(a.nbytes for a in x.inputs))
        assert w["hash"] == conform.witness_hash(small.params, small.inputs)
    # one line per op when stdout is not a terminal, then the matrix
    assert f"[1/{len(ids)}] {ids[0]}: reference PASS  wgpu PASS" in run.stdout
    assert "oracle" in run.stdout and f"{len(ids)} ops x 2 backend(s): {2 * len(ids)} pass, 0 fail" in run.stdout


def _broken(spec, **changes):
    return dataclasses.replace(spec, id=f"test.broken.{spec.id}", **changes)


def test_a_wrong_result_fails_the_run(tmp_path):
    add = get("zip.add")
    off_by_one = _broken(add, reference=lambda x, y, **p: [r + np.ones_like(r) for r in add.reference(x, y, **p)])
    cert = conform.run(specs=[off_by_one], backends=("reference",))
    (entry,) = cert["ops"]
    assert entry["cells"] == {"reference": "fail"} and cert["summary"]["passed"] is False
    assert any(w["cells"]["reference"]["status"] == "fail" and "mismatch" in w["cells"]["reference"]["detail"]
               for w in entry["witnesses"])
    assert entry["max_error"]["reference"]["abs"] >= 1
    out = tmp_path / "cert.json"
    assert conform.main(["--backend", "reference", "--out", str(out)], specs=[off_by_one]) == 1
    assert json.loads(out.read_text())["summary"]["passed"] is False


def test_an_op_that_raises_is_an_error(tmp_path):
    def build(**params):
        raise RuntimeError("no kernel")

    cert = conform.run(specs=[_broken(get("bits.popcount"), build=build)], backends=("reference",))
    assert cert["ops"][0]["cells"] == {"reference": "error"} and cert["summary"]["cells"]["error"] == 1
    assert "no kernel" in cert["ops"][0]["witnesses"][0]["cells"]["reference"]["detail"]
    assert conform.main(["--backend", "reference", "--out", str(tmp_path / "c.json")],
                        specs=[_broken(get("bits.popcount"), build=build)]) == 1


def test_missing_adapter_features_skip(gpu):
    spec = _broken(get("bits.popcount"), needs=frozenset({"no-such-feature"}))
    cert = conform.run(specs=[spec], backends=("reference", "wgpu"), quick=True)
    assert cert["ops"][0]["cells"] == {"reference": "pass", "wgpu": "skip"}
    assert cert["summary"]["passed"] is True


def test_progress_bar_on_a_terminal():
    class Tty(io.StringIO):
        def isatty(self):
            return True

    stream = Tty()
    specs = [get("bits.popcount"), get("bits.reverse")]
    conform.run(specs=specs, backends=("reference",), quick=True, stream=stream)
    text = stream.getvalue()
    # a tqdm bar redrawn in place (\r) per op, cleared at the end; no per-op log lines on a terminal
    assert "bits.popcount:  50%|" in text and "bits.reverse: 100%|" in text and "2/2 [" in text
    assert "\n" not in text and text.endswith("\r")


def test_ops_prefixes_select_ids_and_categories():
    cert = conform.run(specs=all_ops(), backends=(), ops=["bits.pop", "hash"])
    ids = [e["id"] for e in cert["ops"]]
    assert "bits.popcount" in ids and "hash.crc32" in ids and "bits.reverse" not in ids


def test_witness_hash_covers_params_and_bytes():
    x = np.arange(5, dtype=np.uint32)
    h = conform.witness_hash({"shape": (5,)}, [x])
    assert h == conform.witness_hash({"shape": [5]}, [x.copy()])
    assert h != conform.witness_hash({"shape": (5,)}, [x + 1])
    assert h != conform.witness_hash({"shape": (5,)}, [x.astype(np.int32)])
    assert h != conform.witness_hash({"shape": (6,)}, [x])


def test_catalogue_is_current():
    doc = (ROOT / "docs" / "ops.md").read_text(encoding="utf-8")
    assert doc == conform.catalogue_markdown(), (
        "docs/ops.md is out of date: run `python -m vyre.conform --catalogue docs/ops.md`")


def test_catalogue_lists_every_op():
    text = conform.catalogue_markdown()
    for spec in all_ops():
        assert f"| `{spec.id}` |" in text
    assert "| `map.exp` | `map_exp` | elementwise |" in text
    assert "f32: rtol=6e-06 atol=1.17549e-38; f16: <= 1 ulp" in text
    assert "shader-f16 (some params)" in text


def test_catalogue_has_the_families_and_variants():
    text = conform.catalogue_markdown()
    assert "## Op families" in text and "| family | namespace | ops | flat names |" in text
    assert "| reduce | `vyre.ops.reduce` | `argmax`, `histogram`, `max`, `mean`, `min`, `prod`, `sum` " in text
    assert "`vyre.ops.linalg` | `matmul`, `matmul_batched`, `matmul_f16`, `matmul_f16_fast` |" in text
    assert "| map | `vyre.ops.map` |" in text and "`map_*`" in text
    assert "## Kernel variants" in text and "| `cpu-x4` |" in text
    assert "| generic |" in text and "| cpu-x4, generic |" in text  # the kernels column


def _variant_spec(**variant):
    from vyre.ops.variants import Variant

    base = get("map.neg")
    v = Variant(name="test-variant", summary="test", **{"build": base.build, **variant})
    return _broken(base, variants=(v,))


def test_variants_run_and_are_certified():
    cert = conform.run(specs=[_variant_spec()], backends=("reference",))
    (entry,) = cert["ops"]
    assert entry["cells"] == {"reference": "pass"}
    assert entry["variants"] == {"test-variant": {"reference": "pass"}, "generic": {"reference": "pass"}}
    for w in entry["witnesses"]:
        assert w["chosen"] == {"reference": "generic"}  # the reference runs the generic kernel
        cell = w["variants"]["test-variant"]["reference"]
        assert cell["status"] == "pass" and cell["outputs"] == w["outputs"]["reference"]
    assert "1 kernel variant(s) besides generic: 1 pass" in conform.matrix(cert)


def test_a_failing_variant_fails_its_op():
    wrong = _variant_spec(build=get("map.abs").build, applies=lambda p: p["dtype"] == "f32")
    cert = conform.run(specs=[wrong], backends=("reference",))
    (entry,) = cert["ops"]
    assert entry["cells"] == {"reference": "fail"} and cert["summary"]["passed"] is False
    assert entry["variants"] == {"test-variant": {"reference": "fail"}, "generic": {"reference": "pass"}}
    assert all(("test-variant" in w["variants"]) == (w["params"]["dtype"] == "f32") for w in entry["witnesses"])
    assert "FAIL test.broken.map.neg@test-variant[" in conform.matrix(cert)


def test_a_variant_the_backend_cannot_run_skips():
    spec = _variant_spec(features=frozenset({"no-such-feature"}))
    cert = conform.run(specs=[spec], backends=("reference",), quick=True)
    (entry,) = cert["ops"]
    assert entry["variants"]["test-variant"] == {"reference": "skip"} and entry["cells"] == {"reference": "pass"}
    (w,) = entry["witnesses"]
    assert "no-such-feature" in w["variants"]["test-variant"]["reference"]["detail"]


@pytest.mark.parametrize("argv", [["--backend", "metal"], ["--bogus"]])
def test_bad_arguments(argv):
    with pytest.raises(SystemExit):
        conform.main(argv)


def test_readme_ops_example_runs(gpu, capsys):
    import re

    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split("\n## Ops\n", 1)[1].split("\n## ", 1)[0]
    (code,) = re.findall(r"```python\n(.*?)```", section, flags=re.S)
    assert "vyre.ops." in code and "docs/ops.md" in section and "python -m vyre.conform" in section
    exec(compile(code, "README.md:ops", "exec"), {"__name__": "__readme__"})
    assert "0xcbf43926" in capsys.readouterr().out
