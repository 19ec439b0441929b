"""Kernel variants: selection from adapter facts, fallback, forcing, the convenience layer's record."""

from __future__ import annotations

import dataclasses
from types import SimpleNamespace

import numpy as np
import pytest

import vyre.ops as ops
from vyre.backends.reference import ReferenceBackend
from vyre.errors import DispatchError, UnsupportedFeatureError
from vyre.ops import api
from vyre.ops import variants as V
from vyre.ops.elementwise import _kernel as K
from vyre.ops.registry import compare, get, register

BIG = (300, 400)  # >= COARSE_MIN elements: cpu-x4 applies


def _facts(adapter_type="discrete-gpu", features=(), automatic=True, **limits):
    base = {"max_compute_invocations_per_workgroup": 256, "max_compute_workgroup_storage_size": 16384}
    return V.AdapterFacts("wgpu", adapter_type, frozenset(features), {**base, **limits}, automatic)


def _variant(name, **kw):
    return V.Variant(name=name, build=get("map.neg").build, summary=name, **kw)


def _spec(*variants):
    return dataclasses.replace(get("map.neg"), id="test.variants.neg", variants=tuple(variants))


PARAMS = {"shape": BIG, "dtype": "f32"}


def test_the_first_runnable_preferred_variant_wins():
    wide = _variant("wide", min_limits={"max_compute_invocations_per_workgroup": 1024})
    f16 = _variant("f16", features=frozenset({"shader-f16"}))
    cpu = _variant("cpu", prefer_on=frozenset({"cpu"}))
    spec = _spec(wide, f16, cpu)
    assert V.choose(spec, PARAMS, _facts(max_compute_invocations_per_workgroup=1024)) == "wide"
    assert V.choose(spec, PARAMS, _facts(features=["shader-f16"])) == "f16"
    assert V.choose(spec, PARAMS, _facts("cpu")) == "cpu"
    assert V.choose(spec, PARAMS, _facts("discrete-gpu")) == V.GENERIC  # fallback: nothing fits
    assert spec.variant_names() == ["wide", "f16", "cpu", V.GENERIC]


def test_applies_and_reference_fall_back_to_generic():
    spec = _spec(_variant("big", applies=lambda p: p["shape"][0] > 100))
    assert V.choose(spec, PARAMS, _facts()) == "big"
    assert V.choose(spec, {"shape": (5,), "dtype": "f32"}, _facts()) == V.GENERIC
    assert V.choose(spec, PARAMS, _facts(automatic=False)) == V.GENERIC  # the reference interpreter


def test_forcing_checks_requirements():
    spec = _spec(_variant("wide", min_limits={"max_compute_invocations_per_workgroup": 1024}),
                 _variant("f16", features=frozenset({"shader-f16"})), _variant("small", applies=lambda p: False))
    with pytest.raises(UnsupportedFeatureError, match="max_compute_invocations_per_workgroup >= 1024") as e:
        V.choose(spec, PARAMS, _facts(), force="wide")
    assert e.value.fix
    with pytest.raises(UnsupportedFeatureError, match="feature shader-f16"):
        V.choose(spec, PARAMS, _facts(), force="f16")
    with pytest.raises(DispatchError, match="no kernel variant 'nope'"):
        V.choose(spec, PARAMS, _facts(), force="nope")
    with pytest.raises(DispatchError, match="does not handle"):
        V.choose(spec, PARAMS, _facts(), force="small")
    assert V.choose(spec, PARAMS, _facts(features=["shader-f16"], automatic=False), force="f16") == "f16"
    assert V.choose(spec, PARAMS, _facts(), force=V.GENERIC) == V.GENERIC


def test_register_rejects_duplicate_or_generic_names():
    with pytest.raises(ValueError, match="unique"):
        register(_spec(_variant("a"), _variant("a")))
    with pytest.raises(ValueError, match="unique"):
        register(_spec(_variant(V.GENERIC)))


def test_facts_of_fake_backends():
    caps = SimpleNamespace(backend="fake", f16=True, subgroups=False, timestamps=False,
                           max_invocations_per_workgroup=1024, max_workgroups_per_dimension=65535,
                           max_storage_buffer_bytes=1 << 27, max_workgroup_size=(1024, 1024, 64))
    fake = SimpleNamespace(capabilities=lambda: caps, adapter_info={"adapter_type": "DiscreteGPU"},
                           device_limits={"max-compute-workgroup-storage-size": 65536})
    f = V.facts_of(fake)
    assert f.adapter_type == "discrete-gpu" and f.features == frozenset({"shader-f16"}) and f.automatic
    # capped by the IR validator's limits, which the lowering checks every program against
    assert f.limits["max_compute_invocations_per_workgroup"] == 256
    assert f.limits["max_compute_workgroup_storage_size"] == 16384
    r = V.facts_of(ReferenceBackend())
    assert r.adapter_type == "reference" and not r.automatic and "shader-f16" in r.features


def test_convenience_layer_records_and_forces(reference, gpu):
    x = np.random.default_rng(1).standard_normal(BIG).astype(np.float32)
    want = ops.map_exp(reference, x)
    assert api.last_variant("map.exp") == V.GENERIC  # the reference runs the generic kernel
    forced = ops.map.exp(reference, x, variant="cpu-x4")
    assert api.last_variant("map.exp") == "cpu-x4"
    np.testing.assert_array_equal(forced, want)  # same arithmetic per element
    expected = "cpu-x4" if api.facts(gpu).adapter_type == "cpu" else V.GENERIC
    assert api.variant_for("map.exp", gpu, x) == expected
    got = ops.map.exp(gpu, x)
    assert api.last_variant("map.exp") == expected
    ok, err, detail = compare(got, want, get("map.exp").tolerance_of({"dtype": "f32"}))
    assert ok, detail
    assert api.variant_for("map.exp", gpu, x[:2]) == V.GENERIC  # too small for cpu-x4
    with pytest.raises(DispatchError, match="does not handle"):
        ops.map.exp(gpu, x[:2], variant="cpu-x4")
    with pytest.raises(DispatchError, match="no kernel variant"):
        ops.reduce.sum(gpu, x, variant="cpu-x4")


def test_pipeline_cache_keys_on_the_variant():
    params = {"shape": BIG, "dtype": "f32"}
    generic = api.pipeline_for("map.exp", params)
    coarse = api.pipeline_for("map.exp", params, "cpu-x4")
    assert generic is api.pipeline_for("map.exp", params, V.GENERIC)
    assert coarse is api.pipeline_for("map.exp", params, "cpu-x4")
    assert generic.programs[0].fingerprint != coarse.programs[0].fingerprint
    assert coarse.steps[0].grid[0] * K.COARSE_ITEMS >= generic.steps[0].grid[0] > coarse.steps[0].grid[0]


@pytest.mark.parametrize("shapes", [[(2, 3, 1, 8), (3, 5, 1)], [(1,), (64, 100)], [(64, 100), (100,)],
                                    [(5, 1, 7), (5, 3, 1)], [(1001,), ()]], ids=str)
@pytest.mark.parametrize("op_id", ["zip.add", "zip.lt"])
def test_coarse_kernel_broadcasts(reference, op_id, shapes):
    """cpu-x4 on broadcasting layouts (the witnesses reach it only with same-shape arrays)."""
    spec, v = get(op_id), V.find(get(op_id), "cpu-x4")
    assert v is not None
    rng = np.random.default_rng(7)
    x, y = (rng.standard_normal(s).astype(np.float32) for s in shapes)
    params = spec.params_for(x, y)
    pipe = v.build(**params)
    got = api.execute(reference, pipe, [x, y])
    want = spec.reference(x, y, **params)
    assert compare(got[0], want[0], spec.tolerance_of(params))[0]
