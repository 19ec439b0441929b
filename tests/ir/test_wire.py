"""Wire format: canonical bytes round-trip, fingerprints are stable (also across processes),
malformed input is a ValidationError, and the validator copes with any decodable program."""

from __future__ import annotations

import dataclasses
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vyre.errors import ValidationError, ValidationIssue
from vyre.ir import (
    Assign,
    Atomic,
    AtomicOp,
    Barrier,
    BarrierScope,
    Binary,
    BinOp,
    Bitcast,
    Break,
    BufferDecl,
    BufLen,
    Builtin,
    BuiltinName,
    Cast,
    Continue,
    Eval,
    Extract,
    Fma,
    For,
    If,
    Let,
    Lit,
    Load,
    Program,
    Return,
    Select,
    Store,
    Unary,
    UnOp,
    Var,
    VarDecl,
    VecNew,
    While,
    WorkgroupDecl,
)
from vyre.ir.types import Access, DataType
from vyre.ir.validate import RULES, check, validate
from vyre.ir.wire import WIRE_FORMAT, WIRE_VERSION, fingerprint, from_wire, json_dict, to_wire

ROOT = Path(__file__).resolve().parents[2]

# --------------------------------------------------------------------------- strategies
names = st.one_of(
    st.sampled_from(["x", "y", "acc", "k", "t1", "tile", "for", "_vyre", "é"]),
    st.text(min_size=0, max_size=6),  # any unicode, incl. quotes, backslashes and control characters
)
dtypes = st.sampled_from(list(DataType))
float_values = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([math.nan, math.inf, -math.inf, -0.0, 0.0, 5e-324, 1.7976931348623157e308, 65504.0]),
)
big_ints = st.one_of(st.integers(), st.integers(min_value=-(2**80), max_value=2**80),
                     st.sampled_from([0, -1, 2**31 - 1, -(2**31), 2**32 - 1, 2**32, 2**64 + 1]))
lits = st.one_of(
    st.builds(Lit, dtype=st.sampled_from([DataType.F32, DataType.F16]), value=float_values),
    st.builds(Lit, dtype=st.sampled_from([DataType.U32, DataType.I32]), value=big_ints),
    st.builds(Lit, dtype=st.just(DataType.BOOL), value=st.booleans()),
    st.builds(Lit, dtype=dtypes, value=st.one_of(st.booleans(), big_ints, float_values)),  # ill-typed on purpose
)
builtins = st.builds(Builtin, name=st.sampled_from(list(BuiltinName)), axis=st.one_of(st.none(), st.integers(-1, 3)))
leaves = st.one_of(lits, st.builds(Var, name=names), st.builds(BufLen, buffer=names), builtins)


def _extend(ch):
    return st.one_of(
        st.builds(Unary, op=st.sampled_from(list(UnOp)), arg=ch),
        st.builds(Binary, op=st.sampled_from(list(BinOp)), lhs=ch, rhs=ch),
        st.builds(Select, cond=ch, if_true=ch, if_false=ch),
        st.builds(Cast, dtype=dtypes, arg=ch),
        st.builds(Bitcast, dtype=dtypes, arg=ch),
        st.builds(Fma, a=ch, b=ch, c=ch),
        st.builds(Load, buffer=names, index=ch),
        st.builds(Atomic, op=st.sampled_from(list(AtomicOp)), buffer=names, index=ch,
                  value=st.one_of(st.none(), ch), expected=st.one_of(st.none(), ch)),
        st.builds(VecNew, dtype=dtypes, args=st.lists(ch, max_size=4)),
        st.builds(Extract, arg=ch, lane=st.integers(-1, 4)),
    )


exprs = st.recursive(leaves, _extend, max_leaves=12)
simple_stmts = st.one_of(
    st.builds(Let, name=names, value=exprs),
    st.builds(VarDecl, name=names, dtype=dtypes, value=st.one_of(st.none(), exprs)),
    st.builds(Assign, name=names, value=exprs),
    st.builds(Store, buffer=names, index=exprs, value=exprs),
    st.builds(Eval, value=exprs),
    st.builds(Barrier, scope=st.sampled_from(list(BarrierScope))),
    st.just(Break()), st.just(Continue()), st.just(Return()),
)
blocks = lambda ch: st.lists(ch, max_size=3)  # noqa: E731
stmts = st.recursive(simple_stmts, lambda ch: st.one_of(
    st.builds(If, cond=exprs, then=blocks(ch), otherwise=blocks(ch)),
    st.builds(For, var=names, start=exprs, end=exprs, step=big_ints, body=blocks(ch)),
    st.builds(While, cond=exprs, body=blocks(ch)),
), max_leaves=8)
dims = st.integers(-2, 2**40)
programs = st.builds(
    Program,
    name=names,
    buffers=st.lists(st.builds(BufferDecl, name=names, binding=st.integers(-1, 2**40), dtype=dtypes,
                               access=st.sampled_from(list(Access)),
                               count=st.one_of(st.none(), st.integers(-1, 2**40))), max_size=4),
    workgroup=st.lists(st.builds(WorkgroupDecl, name=names, dtype=dtypes, count=st.integers(-1, 2**40)),
                       max_size=3),
    workgroup_size=st.tuples(dims, dims, dims),
    body=st.lists(stmts, max_size=5),
    grid_from=st.one_of(st.none(), names),
)

# example counts come from the hypothesis profile in conftest.py ("dev" locally, "ci" under CI=true)
SETTINGS = settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])


# --------------------------------------------------------------------------- round trip
@SETTINGS
@given(programs)
def test_wire_round_trip_is_byte_identical(p):
    wire = p.to_wire()
    assert isinstance(wire, bytes)
    wire.decode("ascii")  # canonical bytes are pure ASCII
    q = Program.from_wire(wire)
    assert q.to_wire() == wire
    assert q.fingerprint == p.fingerprint == fingerprint(q)
    assert len(p.fingerprint) == 64 and int(p.fingerprint, 16) >= 0
    assert Program.from_wire(wire.decode("ascii")).to_wire() == wire  # str input too
    doc = json.loads(wire)
    assert doc["format"] == WIRE_FORMAT and doc["version"] == WIRE_VERSION


@SETTINGS
@given(exprs)
def test_expression_round_trip(e):
    p = Program(name="e", body=[Let(name="v", value=e), Eval(value=e)])
    q = from_wire(to_wire(p))
    assert to_wire(q) == to_wire(p)
    assert json_dict(q.body[0].value) == json_dict(e)


@SETTINGS
@given(float_values)
def test_special_floats_survive(v):
    p = Program(name="f", body=[Let(name="v", value=Lit(dtype=DataType.F32, value=v))])
    got = from_wire(to_wire(p)).body[0].value.value
    assert isinstance(got, float)
    if math.isnan(v):
        assert math.isnan(got)
    else:
        assert got == v and math.copysign(1.0, got) == math.copysign(1.0, v)  # keeps -0.0


@SETTINGS
@given(big_ints)
def test_big_ints_survive(v):
    p = Program(name="i", body=[Let(name="v", value=Lit(dtype=DataType.I32, value=v))])
    got = from_wire(to_wire(p)).body[0].value.value
    assert got == v and type(got) is int


def test_fingerprint_distinguishes_programs():
    a = Program(name="p", body=[Let(name="v", value=Lit(dtype=DataType.F32, value=0.0))])
    b = Program(name="p", body=[Let(name="v", value=Lit(dtype=DataType.F32, value=-0.0))])
    c = Program(name="p", body=[Let(name="v", value=Lit(dtype=DataType.F32, value=0))])  # int 0 is another literal
    assert len({a.fingerprint, b.fingerprint, c.fingerprint}) == 3
    assert a.fingerprint == Program(name="p", body=[Let(name="v", value=Lit(dtype="f32", value=0.0))]).fingerprint


# --------------------------------------------------------------------------- stable across processes
FIXED_PROGRAM = r'''
import math
from vyre.ir import ProgramBuilder

b = ProgramBuilder("fixed", workgroup_size=(64, 1, 1))
a = b.buffer("a", "f32", access="uniform", count=1)
x = b.buffer("x", "f32")
y = b.buffer("y", "f32", access="read_write")
c = b.buffer("c", "u32", access="read_write", count=4)
tile = b.workgroup_array("tile", "f32", 64)
i = b.global_index()
tile[b.local_index()] = b.select(i < x.len(), x[b.select(i < x.len(), i, 0)], math.nan)
b.barrier()
acc = b.var("f32", -0.0, name="acc")
with b.for_range(0, 64, name="k") as k:
    acc += tile[k] * float("inf")
with b.if_(i < y.len()):
    y[i] = a[0] * acc + y[i]
    c.atomic_add(1, 4294967295)
with b.else_():
    b.return_()
program = b.build()
print(program.fingerprint)
'''
# changed when Program gained grid_from (written as null when unset)
EXPECTED_FINGERPRINT = "7bf1da4f7f50fb5ef974a53ccffc4d97b57039bf0e37baa2bcc133bac7d9d2db"


def _fixed_fingerprint(hash_seed: str) -> str:
    # the child sees this process's sys.path: the same vyre and the same installed packages
    path = os.pathsep.join(dict.fromkeys([str(ROOT), *filter(None, sys.path)]))
    env = dict(os.environ, PYTHONHASHSEED=hash_seed, PYTHONPATH=path)
    out = subprocess.run([sys.executable, "-c", FIXED_PROGRAM], env=env, cwd=ROOT, capture_output=True,
                         text=True, check=True, timeout=120)
    return out.stdout.strip()


def test_fingerprint_is_stable_across_processes():
    seen = {_fixed_fingerprint(seed) for seed in ("0", "1", "4242")}
    assert seen == {EXPECTED_FINGERPRINT}
    scope: dict = {}
    exec(compile(FIXED_PROGRAM.replace("print(program.fingerprint)", ""), "<fixed>", "exec"), scope)
    p = scope["program"]
    assert p.fingerprint == EXPECTED_FINGERPRINT
    assert Program.from_wire(p.to_wire()).fingerprint == EXPECTED_FINGERPRINT


# --------------------------------------------------------------------------- malformed input
def _valid_doc() -> dict:
    p = Program(name="p", buffers=[BufferDecl(name="y", binding=0, dtype="u32", access="read_write")],
                body=[Store(buffer="y", index=Lit(dtype="u32", value=0), value=Lit(dtype="u32", value=1))])
    return json.loads(p.to_wire())


def _mutate(path, value):
    doc = _valid_doc()
    target = doc
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return json.dumps(doc).encode()


def _drop(path):
    doc = _valid_doc()
    target = doc
    for key in path[:-1]:
        target = target[key]
    del target[path[-1]]
    return json.dumps(doc).encode()


MALFORMED = {
    "empty": b"",
    "not json": b"{not json",
    "binary": b"\xff\xfe\x00garbage",
    "truncated": to_wire(Program(name="p"))[:-3],
    "json list": b"[1, 2, 3]",
    "json number": b"42",
    "no format": json.dumps({"version": 1, "program": {"name": "p"}}).encode(),
    "wrong format": json.dumps({"format": "other", "version": 1, "program": {"name": "p"}}).encode(),
    "wrong version": _mutate(["version"], 99),
    "string version": _mutate(["version"], "1"),
    "no program": json.dumps({"format": WIRE_FORMAT, "version": WIRE_VERSION}).encode(),
    "program not object": _mutate(["program"], [1]),
    "missing name": json.dumps({"format": WIRE_FORMAT, "version": WIRE_VERSION, "program": {}}).encode(),
    "extra field": _mutate(["program", "colour"], "red"),
    "unknown stmt kind": _mutate(["program", "body", 0, "kind"], "goto"),
    "unknown dtype": _mutate(["program", "buffers", 0, "dtype"], "f128"),
    "unknown access": _mutate(["program", "buffers", 0, "access"], "rw"),
    "bad workgroup size": _mutate(["program", "workgroup_size"], [1, 2, 3, 4]),
    "lit value object": _mutate(["program", "body", 0, "value", "value"], {"x": 1}),
    "lit value text": _mutate(["program", "body", 0, "value", "value"], "lots"),
    "missing expr field": _mutate(["program", "body", 0, "index"], {"kind": "load", "buffer": "y"}),
    "deep json": b"[" * 100_000,
    "deep program": (b'{"format":"vyre.program","version":1,"program":{"name":"p","body":[{"kind":"eval","value":'
                     + b'{"kind":"unary","op":"not","arg":' * 2000 + b'{"kind":"lit","dtype":"u32","value":1}'
                     + b"}" * 2000 + b"}]}}"),
    "not bytes": None,
    # issue 9: only canonical documents are accepted
    "workgroup_size float": _mutate(["program", "workgroup_size"], 1.5),
    "workgroup_size null": _mutate(["program", "workgroup_size"], None),
    "workgroup_size string": _mutate(["program", "workgroup_size"], "64"),
    "workgroup_size bool": _mutate(["program", "workgroup_size"], True),
    "workgroup_size int": _mutate(["program", "workgroup_size"], 64),
    "workgroup_size short": _mutate(["program", "workgroup_size"], [64]),
    "workgroup_size float item": _mutate(["program", "workgroup_size"], [64, 1, 1.0]),
    "workgroup_size bool item": _mutate(["program", "workgroup_size"], [64, True, 1]),
    "count bool": _mutate(["program", "buffers", 0, "count"], True),
    "count string": _mutate(["program", "buffers", 0, "count"], "4"),
    "binding negative zero": _mutate(["program", "buffers", 0, "binding"], -0.0),
    "binding float": _mutate(["program", "buffers", 0, "binding"], 0.0),
    "binding string": _mutate(["program", "buffers", 0, "binding"], "0"),
    "lit value string int": _mutate(["program", "body", 0, "value", "value"], "1"),
    "lit value nan literal": _mutate(["program", "body", 0, "value", "value"], math.nan),
    "version bool": _mutate(["version"], True),
    "version float": _mutate(["version"], 1.0),
    "extra envelope field": _mutate(["extra"], 1),
    "duplicate key": to_wire(Program(name="p")).replace(b'"name":"p"', b'"name":"p","name":"p"'),
    "missing workgroup": _drop(["program", "workgroup"]),
    "missing count": _drop(["program", "buffers", 0, "count"]),
    "missing body": _drop(["program", "body"]),
    "missing access": _drop(["program", "buffers", 0, "access"]),
    "missing axis": _mutate(["program", "body", 0, "index"], {"kind": "builtin", "name": "global_index"}),
    "missing then": _mutate(["program", "body", 0], {"kind": "if", "cond": {"kind": "lit", "dtype": "bool",
                                                                            "value": True}, "otherwise": []}),
    "missing step": _mutate(["program", "body", 0], {"kind": "for", "var": "i", "body": [],
                                                     "start": {"kind": "lit", "dtype": "u32", "value": 0},
                                                     "end": {"kind": "lit", "dtype": "u32", "value": 1}}),
    "step float": _mutate(["program", "body", 0], {"kind": "for", "var": "i", "body": [], "step": 1.0,
                                                   "start": {"kind": "lit", "dtype": "u32", "value": 0},
                                                   "end": {"kind": "lit", "dtype": "u32", "value": 1}}),
}


@pytest.mark.parametrize("name", sorted(MALFORMED))
def test_malformed_wire_raises_validation_error(name):
    with pytest.raises(ValidationError) as exc:
        Program.from_wire(MALFORMED[name])
    err = exc.value
    assert err.issues and all(isinstance(i, ValidationIssue) for i in err.issues)
    assert err.issues[0].rule == "wire" and err.issues[0].fix
    assert "Fix: " in str(err)
    assert err.issues[0].path  # where the document is wrong


@pytest.mark.parametrize(("name", "path"), [
    ("workgroup_size float", "program.workgroup_size"), ("count bool", "program.buffers[0].count"),
    ("binding negative zero", "program.buffers[0].binding"), ("missing workgroup", "program.workgroup"),
    ("missing count", "program.buffers[0].count"), ("version bool", "version"),
    ("extra envelope field", "extra"), ("missing axis", "program.body[0].index.axis"),
    ("lit value object", "program.body[0].value.value"),
])
def test_malformed_wire_names_the_offending_field(name, path):
    with pytest.raises(ValidationError) as exc:
        Program.from_wire(MALFORMED[name])
    assert exc.value.issues[0].path == path


def test_canonical_documents_load_in_any_layout():
    """Key order and white space are free; the content must be canonical."""
    wire = to_wire(_programs_for_layout())
    doc = json.loads(wire)
    for text in (json.dumps(doc), json.dumps(doc, indent=2), json.dumps(doc, sort_keys=True)):
        assert Program.from_wire(text).to_wire() == wire


@SETTINGS
@given(st.binary(max_size=64))
def test_random_bytes_never_crash_the_decoder(data):
    try:
        Program.from_wire(data)
    except ValidationError:
        pass


@SETTINGS
@given(programs, st.data())
def test_corrupted_wire_is_rejected_or_decoded(p, data):
    wire = bytearray(p.to_wire())
    pos = data.draw(st.integers(0, len(wire) - 1))
    wire[pos] = data.draw(st.integers(0, 255))
    try:
        q = Program.from_wire(bytes(wire))
    except ValidationError:
        return
    assert Program.from_wire(q.to_wire()).to_wire() == q.to_wire()


def _programs_for_layout() -> Program:
    return Program(name="lay", buffers=[BufferDecl(name="y", binding=1, dtype="f32", access="read_write", count=8)],
                   workgroup=[WorkgroupDecl(name="t", dtype="f32", count=4)], workgroup_size=(8, 2, 1),
                   body=[Store(buffer="y", index=Builtin(name="global_id", axis=0),
                               value=Lit(dtype="f32", value=-0.0))])


def _json_paths(doc, path=()):
    yield path
    if isinstance(doc, dict):
        for key, value in doc.items():
            yield from _json_paths(value, (*path, key))
    elif isinstance(doc, list):
        for i, value in enumerate(doc):
            yield from _json_paths(value, (*path, i))


_REPLACEMENTS = st.one_of(
    st.none(), st.booleans(), st.integers(-3, 2**33), st.sampled_from([0.0, -0.0, 1.0, 1.5, math.nan, math.inf]),
    st.sampled_from(["", "0", "1", "64", "u32", "nan", "lit", "read"]), st.just([]), st.just({}),
    st.lists(st.integers(0, 70), max_size=4),
)


def _retype(value, data):
    """``value`` as another JSON type: an int as a bool, float or string, and so on."""
    if isinstance(value, bool):
        return data.draw(st.sampled_from([int(value), float(value), str(value).lower(), None]))
    if isinstance(value, int):
        return data.draw(st.sampled_from([float(value), str(value), bool(value), [value], None]))
    if isinstance(value, float):
        return data.draw(st.sampled_from([str(value), [value], None] + ([int(value)] if value.is_integer() else [])))
    if isinstance(value, str):
        return data.draw(st.sampled_from([[value], {value: value}, 0, None]))
    if isinstance(value, list):
        return data.draw(st.sampled_from([tuple(value)[:1] and value[0], {}, "[]", None]))
    return data.draw(_REPLACEMENTS)


@SETTINGS
@given(programs, st.data())
def test_mutated_wire_documents_are_rejected_or_canonical(p, data):
    """Drop a field, retype a value, add an unknown field or replace a value: from_wire either raises
    ValidationError or returns a program whose wire document is the mutated document itself."""
    doc = json.loads(p.to_wire())
    paths = list(_json_paths(doc))
    path = data.draw(st.sampled_from(paths[1:]))
    parent = doc
    for key in path[:-1]:
        parent = parent[key]
    how = data.draw(st.sampled_from(["drop", "retype", "add", "replace"]))
    if how == "drop":
        del parent[path[-1]]
    elif how == "retype":
        parent[path[-1]] = _retype(parent[path[-1]], data)
    elif how == "add":
        container = parent[path[-1]] if isinstance(parent[path[-1]], dict) else doc
        container[data.draw(st.sampled_from(["colour", "kind2", "axis", "extra", "value"]))] = data.draw(_REPLACEMENTS)
    else:
        parent[path[-1]] = data.draw(_REPLACEMENTS)
    try:
        q = Program.from_wire(json.dumps(doc))
    except ValidationError as exc:
        assert exc.issues[0].rule == "wire" and exc.issues[0].path and exc.issues[0].fix
        return
    doc = json.loads(json.dumps(doc))  # as sent: a retyped () is the JSON list []
    assert json.loads(q.to_wire()) == doc
    assert q.to_wire() == json.dumps(doc, sort_keys=True, separators=(",", ":")).encode()


# --------------------------------------------------------------------------- decoded programs validate
@SETTINGS
@given(programs)
def test_validator_handles_any_decodable_program(p):
    """Whatever arrives over the wire, check() returns well-formed issues instead of crashing."""
    q = Program.from_wire(p.to_wire())
    issues = check(q)
    for issue in issues:
        assert issue.rule in RULES
        assert issue.path and issue.message and issue.fix
        assert isinstance(issue.node, str)
    if issues:
        with pytest.raises(ValidationError) as exc:
            validate(q)
        assert len(exc.value.issues) == len(issues)
    else:
        validate(q)


def test_replace_recomputes_fingerprint():
    from vyre.ir import ProgramBuilder

    b = ProgramBuilder("fp_copy")
    b.buffer("x", "f32")
    p = b.build()
    before = p.fingerprint
    q = dataclasses.replace(p, name="fp_copy2")
    assert q.fingerprint != before
    assert q.fingerprint == dataclasses.replace(q).fingerprint
    assert p.fingerprint == before
