"""Subgroup operations in the IR: builder, typing, the subgroup-uniformity rule, text and wire forms."""

from __future__ import annotations

import pytest

from vyre.errors import ValidationError
from vyre.ir.builder import ProgramBuilder
from vyre.ir.nodes import Subgroup, SubgroupOp
from vyre.ir.program import Program
from vyre.ir.subgroups import program_uses_subgroups
from vyre.ir.validate import RULES, check


def _base(name: str = "sg", wg: int = 64):
    b = ProgramBuilder(name, wg)
    x = b.buffer("x", "u32")
    y = b.buffer("y", "u32", "write")
    i = b.global_index()
    v = b.let(b.select(i < x.len(), x[i], 0), "v")
    return b, x, y, i, v


def _issues(program: Program, rule: str):
    return [issue for issue in check(program) if issue.rule == rule]


def test_every_op_builds_types_and_round_trips():
    b, x, y, i, v = _base()
    f = b.let(v.cast("f32"), "f")
    lane = b.subgroup_invocation_id()
    terms = [
        b.subgroup_add(v), b.subgroup_mul(v), b.subgroup_min(v), b.subgroup_max(v), b.subgroup_and(v),
        b.subgroup_or(v), b.subgroup_xor(v), b.subgroup_inclusive_add(v), b.subgroup_exclusive_add(v),
        b.subgroup_inclusive_mul(v), b.subgroup_exclusive_mul(v), b.subgroup_broadcast(v, 3),
        b.subgroup_broadcast_first(v), b.subgroup_shuffle(v, lane ^ 1), b.subgroup_shuffle_xor(v, 2),
        b.subgroup_shuffle_up(v, 1), b.subgroup_shuffle_down(v, 1), b.subgroup_ballot(v > 3)[0],
        b.subgroup_all(v > 3).cast("u32"), b.subgroup_any(v > 3).cast("u32"), b.subgroup_add(f).cast("u32"),
        b.subgroup_size(), lane,
    ]
    total = terms[0]
    for t in terms[1:]:
        total = total + t
    y[i] = total
    p = b.build()
    ops = {n.op for n in _walk(p) if isinstance(n, Subgroup)}
    assert ops == set(SubgroupOp)
    assert b.type_of(b.subgroup_ballot(v > 3).node).value == "vec4<u32>"
    again = Program.from_wire(p.to_wire())
    assert again == p and again.fingerprint == p.fingerprint
    text = p.to_text()
    assert "subgroup_shuffle_xor(v, 2u)" in text and "subgroup_invocation_id" in text
    assert program_uses_subgroups(p)


def _walk(p: Program):
    from vyre.ir.traverse import iter_exprs
    return list(iter_exprs(p.body))


def test_programs_without_subgroups_keep_their_wire_form():
    b, x, y, i, v = _base()
    y[i] = v + 1
    p = b.build()
    assert not program_uses_subgroups(p)
    assert b"subgroup" not in p.to_wire()


def test_builtins_alone_count_as_subgroup_use():
    b, x, y, i, v = _base()
    y[i] = b.subgroup_size()
    assert program_uses_subgroups(b.build())


@pytest.mark.parametrize("make, fragment", [
    (lambda b, v: b.subgroup_add(v > 1), "numeric scalar or vector"),
    (lambda b, v: b.subgroup_and(v.cast("f32")), "integer"),
    (lambda b, v: b.subgroup_all(v), "takes a bool"),
    (lambda b, v: b.subgroup_ballot(v), "takes a bool"),
    (lambda b, v: b.subgroup_shuffle(v, v.cast("i32")), "must be u32"),
    (lambda b, v: b.subgroup_broadcast(v, 200), "literal in [0, 128)"),
])
def test_type_errors_are_located_with_a_fix(make, fragment):
    b, x, y, i, v = _base()
    b.eval(make(b, v))
    with pytest.raises(ValidationError) as err:
        b.build()
    issue = err.value.issues[0]
    assert issue.rule == "type" and fragment in issue.message and issue.fix
    assert issue.path.startswith("body[")


def test_broadcast_lane_must_be_a_literal():
    b, x, y, i, v = _base()
    y[i] = _computed_broadcast(b, v)
    issues = _issues(b.build(validate=False), "type")
    assert issues and "literal" in issues[0].message and "subgroup_shuffle" in issues[0].fix


def _computed_broadcast(b, v):  # a broadcast whose lane is computed: only shuffle takes that
    from vyre.ir.values import Val
    return Val(b, Subgroup(op=SubgroupOp.BROADCAST, value=v.node, lane=b.subgroup_invocation_id().node))


def test_bad_lane_argument_is_a_builder_error():
    b, x, y, i, v = _base()
    with pytest.raises(ValidationError, match="lane must be an int"):
        b.subgroup_shuffle(v, 1.5)


def test_subgroup_op_under_a_non_uniform_branch_is_rejected():
    b, x, y, i, v = _base()
    with b.if_(i < x.len()):
        y[i] = b.subgroup_add(x[i])
    issues = _issues(b.build(validate=False), "subgroup-uniformity")
    assert len(issues) == 1
    assert issues[0].path == "body[1].then[0].value" and "global_index" in issues[0].message
    assert "select" in issues[0].fix
    assert "subgroup-uniformity" in RULES


def test_subgroup_op_after_a_non_uniform_return_is_rejected():
    b, x, y, i, v = _base()
    with b.if_(i >= x.len()):
        b.return_()
    y[i] = b.subgroup_add(x[i])
    issues = _issues(b.build(validate=False), "subgroup-uniformity")
    assert len(issues) == 1 and "return" in issues[0].message


def test_uniform_branches_and_loops_are_fine():
    b, x, y, i, v = _base()
    acc = b.var("u32", 0, name="acc")
    with b.if_(b.workgroup_id(0) == 0):
        with b.for_range(0, x.len(), name="k"):
            acc.set(acc + b.subgroup_add(v))
    y[i] = acc
    assert not check(b.build(validate=False))


def test_non_uniform_loop_condition_with_subgroup_op_is_rejected():
    b, x, y, i, v = _base()
    k = b.var("u32", 0, name="k")
    with b.while_(b.subgroup_any(k < v)):
        k.set(k + 1)
    y[i] = k
    issues = _issues(b.build(validate=False), "subgroup-uniformity")
    assert len(issues) == 1 and issues[0].path == "body[2].cond"


def test_shuffle_xor_mask_must_be_uniform_but_shuffle_lane_need_not():
    b, x, y, i, v = _base()
    y[i] = b.subgroup_shuffle_xor(v, v & 1) + b.subgroup_shuffle(v, v & 1) + b.subgroup_shuffle_up(v, x.len())
    issues = _issues(b.build(validate=False), "subgroup-uniformity")
    assert [q.path for q in issues] == ["body[1].value.lhs.lhs.lane"]
    assert "mask" in issues[0].message


def test_subgroup_results_are_not_uniform_for_barriers():
    b, x, y, i, v = _base()
    s = b.let(b.subgroup_add(v), "s")
    with b.if_(s > 0):
        b.barrier()
    y[i] = s
    issues = _issues(b.build(validate=False), "barrier-uniformity")
    assert issues and "subgroup operation" in issues[0].message
