"""Namespaced op access: vyre.ops.<family>.<name> is the op of the flat vyre.ops.<function>."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
import types
from pathlib import Path

import numpy as np
import pytest

import vyre.ops as ops
from vyre.ops import namespace
from vyre.ops.registry import all_ops

from procs import child_env

ROOT = Path(__file__).resolve().parents[2]


def _resolve(family: str, name: str):
    return getattr(getattr(ops, family), name)


@pytest.mark.parametrize("family,name,op_id", [
    ("reduce", "sum", "reduce.sum"), ("map", "exp", "map.exp"), ("zip", "add", "zip.add"),
    ("nn", "gelu", "nn.gelu"), ("sort", "topk", "sort.topk"), ("hash", "crc32", "hash.crc32"),
    ("hash", "crc32_rows", "hash.crc32.rows"), ("bits", "popcount", "bits.popcount"),
    ("nn", "softmax", "softmax"), ("nn", "attention", "attention"), ("nn", "conv2d", "conv2d"),
    ("nn", "layernorm", "layernorm"), ("nn", "rmsnorm", "rmsnorm"), ("reduce", "histogram", "histogram"),
    ("linalg", "matmul", "matmul"), ("linalg", "matmul_batched", "matmul.batched"),
    ("linalg", "matmul_f16", "matmul.f16"), ("scan", "inclusive", "scan.inclusive"),
    ("memory", "gather", "memory.gather"),
])
def test_documented_names_resolve_to_the_op(family, name, op_id):
    assert namespace.op_id_of(_resolve(family, name)) == op_id
    assert callable(_resolve(family, name))


def test_every_op_has_exactly_one_namespaced_name():
    table = namespace.table()
    placed = sorted(op for names in table.values() for op in names.values())
    assert placed == sorted(s.id for s in all_ops())
    for family, names in table.items():
        for name, op_id in names.items():
            assert namespace.op_id_of(_resolve(family, name)) == op_id, f"vyre.ops.{family}.{name}"
            flat = getattr(ops, op_id.replace(".", "_"))
            assert namespace.op_id_of(flat) == op_id
    assert not set(table) & {s.id.replace(".", "_") for s in all_ops()}, "a family shadows a flat op name"


def test_namespaced_and_flat_calls_agree(reference):
    x = np.array([3.0, -1.0, 7.5, 2.0], np.float32)
    assert ops.reduce.sum is ops.reduce_sum  # plain names are the flat functions themselves
    np.testing.assert_array_equal(ops.reduce.sum(reference, x), ops.reduce_sum(reference, x))
    np.testing.assert_array_equal(ops.map.exp(reference, x), ops.map_exp(reference, x))
    np.testing.assert_array_equal(ops.zip.add(reference, x, x), x + x)
    # sort.topk is also the module vyre/ops/sort/topk.py: calling it runs the op
    got = ops.sort.topk(reference, x, k=2)
    want = ops.sort_topk(reference, x, k=2)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)
    np.testing.assert_array_equal(ops.nn.softmax(reference, x[None]), ops.softmax(reference, x[None]))


def test_submodules_stay_modules():
    from vyre.ops.hash import crc32
    from vyre.ops.nn import attention as attention_mod

    assert isinstance(crc32, types.ModuleType) and crc32.__name__ == "vyre.ops.hash.crc32"
    assert isinstance(attention_mod, types.ModuleType)
    assert ops.sort.topk is sys.modules["vyre.ops.sort.topk"]
    assert isinstance(importlib.import_module("vyre.ops.reduce"), namespace.FamilyPackage)


def test_dir_lists_the_names():
    assert {"sum", "argmax", "histogram", "mean"} <= set(dir(ops.reduce))
    assert {"exp", "tanh", "not"} <= set(dir(ops.map)) and "add" in dir(ops.zip)
    assert {"softmax", "gelu", "attention"} <= set(dir(ops.nn))
    assert {"matmul", "matmul_batched", "matmul_f16"} <= set(dir(ops.linalg))
    top = set(dir(ops))
    assert {"reduce", "map", "zip", "bits", "nn", "linalg", "reduce_sum", "softmax"} <= top


def test_unknown_names_raise_attribute_error(reference):
    with pytest.raises(AttributeError, match="no attribute or op 'nope'.*sum"):
        ops.reduce.nope  # noqa: B018
    with pytest.raises(AttributeError, match="exp"):
        ops.map.nope  # noqa: B018
    with pytest.raises(AttributeError):
        ops.no_such_family  # noqa: B018
    with pytest.raises(TypeError, match="not callable"):
        ops.scan.prefix(reference, np.ones(4, np.float32))  # a module that is no op


def test_place_rule():
    ids = {"matmul", "matmul.batched", "reduce.sum", "hash.crc32", "hash.crc32.rows"}
    assert namespace.place("reduce.sum", "reduce", ids) == ("reduce", "sum")
    assert namespace.place("hash.crc32.rows", "hash", ids) == ("hash", "crc32_rows")
    assert namespace.place("matmul.batched", "linalg", ids) == ("linalg", "matmul_batched")
    assert namespace.place("softmax", "nn", ids) == ("nn", "softmax")


def test_flat_index_when_present():
    if importlib.util.find_spec("vyre.ops.search") is None or importlib.util.find_spec("vyre.ops.search.index") is None:
        assert "FlatIndex" not in dir(ops)
        with pytest.raises(AttributeError):
            ops.FlatIndex  # noqa: B018
        return
    from vyre.ops.search.index import FlatIndex

    assert ops.FlatIndex is FlatIndex and "FlatIndex" in dir(ops)


def test_import_is_lazy():
    """import vyre / vyre.ops / an op package loads no registry and no op module."""
    script = (
        "import json, sys, vyre, vyre.ops, vyre.ops.reduce, vyre.ops.nn\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.startswith('vyre.ops'))))\n"
    )
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=child_env(), cwd=ROOT,
                         timeout=120)
    assert run.returncode == 0, run.stderr
    loaded = set(json.loads(run.stdout))
    assert loaded <= {"vyre.ops", "vyre.ops.namespace", "vyre.ops.reduce", "vyre.ops.nn"}, loaded
