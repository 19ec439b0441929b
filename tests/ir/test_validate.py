"""The validator: one negative test per rule, several errors at once, valid programs pass."""

from __future__ import annotations

import pytest

from vyre.errors import ValidationError, ValidationIssue
from vyre.ir import (
    Assign,
    Atomic,
    AtomicOp,
    Barrier,
    Binary,
    BinOp,
    Break,
    BufferDecl,
    Builtin,
    BuiltinName,
    Continue,
    Eval,
    For,
    If,
    Let,
    Lit,
    Load,
    Program,
    ProgramBuilder,
    Return,
    Store,
    Unary,
    UnOp,
    Var,
    VarDecl,
    While,
    WorkgroupDecl,
)
from vyre.ir.validate import MAX_BLOCK_DEPTH, MAX_EXPR_DEPTH, RULES, Limits, check, name_problem, validate

U32 = "u32"


def u(v: int) -> Lit:
    return Lit(dtype="u32", value=v)


def gidx() -> Builtin:
    return Builtin(name=BuiltinName.GLOBAL_INDEX)


def prog(body=(), buffers=(), workgroup=(), workgroup_size=64, name="p") -> Program:
    return Program(name=name, buffers=list(buffers), workgroup=list(workgroup), workgroup_size=workgroup_size,
                   body=list(body))


def out_buf(name="y", dtype="u32", binding=0, access="read_write", count=None) -> BufferDecl:
    return BufferDecl(name=name, binding=binding, dtype=dtype, access=access, count=count)


def only(program: Program, limits=None) -> ValidationIssue:
    issues = check(program, limits)
    assert len(issues) == 1, "\n".join(map(str, issues))
    return issues[0]


def assert_issue(issue: ValidationIssue, rule: str, path: str, *words: str, node: str | None = None) -> None:
    assert issue.rule == rule, str(issue)
    assert issue.rule in RULES
    assert issue.path == path, str(issue)
    assert issue.message and issue.fix, str(issue)
    assert "Fix: " + issue.fix in str(issue)
    for w in words:
        assert w in issue.message, f"{w!r} not in {issue.message!r}"
    if node is not None:
        assert issue.node == node


# --------------------------------------------------------------------------- valid programs
def saxpy() -> Program:
    b = ProgramBuilder("saxpy", workgroup_size=64)
    a = b.buffer("a", "f32", access="uniform", count=1)
    x = b.buffer("x", "f32")
    y = b.buffer("y", "f32", access="read_write")
    i = b.global_index()
    with b.if_(i < y.len()):
        y[i] = a[0] * x[i] + y[i]
    return b.build()


def tiled_sum() -> Program:
    """Workgroup reduction: barriers in uniform loops, atomics on a workgroup array and an output."""
    b = ProgramBuilder("tiled_sum", workgroup_size=(64, 1, 1))
    x = b.buffer("x", "u32")
    out = b.buffer("out", "u32", access="read_write", count=1)
    params = b.buffer("params", "vec4<u32>", access="uniform", count=1)
    tile = b.workgroup_array("tile", "u32", 64)
    hits = b.workgroup_array("hits", "i32", 1)
    lid = b.local_index()
    i = b.global_index()
    tile[lid] = b.select(i < x.len(), x[i], 0)
    b.barrier()
    rounds = b.let(params[0].x)
    stride = b.var("u32", 32)
    with b.for_range(0, rounds):
        with b.if_(lid < stride):
            tile[lid] = tile[lid] + tile[lid + stride]
        b.barrier()
        stride.set(stride / 2)
        with b.if_(stride == 0):
            b.break_()  # uniform condition: stride is uniform
    with b.while_(stride > 0):
        stride.set(stride - 1)
        b.barrier("storage")
    with b.if_(b.workgroup_id(0) == b.num_workgroups(0) - 1):
        b.barrier()
    with b.if_(lid == 0):
        b.eval(b.lit(0))
        hits.atomic_add(0, b.lit(1, "i32"))
        out.atomic_add(0, tile[0])
    with b.for_range(b.lit(-3, "i32"), b.lit(3, "i32"), step=-2) as k:
        with b.if_(k == 1):
            b.continue_()
    with b.if_(i >= x.len()):
        b.return_()
    return b.build()


def test_valid_programs_pass():
    for p in (saxpy(), tiled_sum()):
        assert check(p) == []
        validate(p)


def test_valid_f16_bool_and_vec_buffers():
    b = ProgramBuilder("kinds", workgroup_size=(8, 8, 4))
    h = b.buffer("h", "f16")
    flags = b.buffer("flags", "bool", access="write")
    v3 = b.buffer("v3", "vec3<f32>", access="read_write", count=16)
    i = b.global_index()
    flags[i] = h[i] > 0.0
    v3[i] = b.vec("vec3<f32>", 1.0, 2.0, 3.0) * 2.0
    b.workgroup_array("wv3", "vec3<f32>", 1024)  # 1024 * 16 bytes = exactly the default limit
    assert check(b.build(validate=False)) == []


def test_sibling_scopes_may_reuse_names():
    b = ProgramBuilder("siblings")
    y = b.buffer("y", "u32", access="read_write")
    with b.if_(b.global_index() < 3):
        t = b.let(b.lit(1), name="t")
        y[0] = t
    with b.else_():
        t = b.let(b.lit(2), name="t")
        y[0] = t
    with b.for_range(0, 4, name="k"):
        pass
    with b.for_range(0, 4, name="k"):
        pass
    assert check(b.build(validate=False)) == []


# --------------------------------------------------------------------------- one test per rule
def test_rule_type_store_value():
    p = prog([Store(buffer="y", index=gidx(), value=Lit(dtype="f32", value=1.0))], [out_buf()])
    assert_issue(only(p), "type", "body[0].value", "holds u32", "f32", node="1.0")


def test_rule_type_from_expression_inference_has_deep_path():
    bad = Binary(op=BinOp.ADD, lhs=u(1), rhs=Lit(dtype="i32", value=2))
    p = prog([If(cond=Binary(op=BinOp.LT, lhs=gidx(), rhs=u(4)),
                 then=[Store(buffer="y", index=u(0), value=Binary(op=BinOp.MUL, lhs=u(3), rhs=bad))])],
             [out_buf()])
    assert_issue(only(p), "type", "body[0].then[0].value.rhs", "u32 and i32", node="(1u + 2i)")


def test_rule_type_conditions_and_var_init_and_assign():
    p = prog([
        If(cond=u(1)),
        While(cond=gidx()),
        VarDecl(name="v", dtype="f32", value=u(0)),
        Assign(name="v", value=u(2)),
    ])
    issues = check(p)
    assert [(i.rule, i.path) for i in issues] == [
        ("type", "body[0].cond"), ("type", "body[1].cond"), ("type", "body[2].value"), ("type", "body[3].value"),
    ]
    assert "must be bool" in issues[0].message and "must be bool" in issues[1].message
    assert "declared f32 but initialised with a u32" in issues[2].message
    assert ".cast('f32')" in issues[3].fix


def test_rule_type_for_bounds():
    p = prog([For(var="k", start=u(0), end=Lit(dtype="i32", value=4))])
    assert_issue(only(p), "type", "body[0]", "start is u32, end is i32")
    p = prog([For(var="k", start=Lit(dtype="f32", value=0.0), end=Lit(dtype="f32", value=4.0))])
    assert_issue(only(p), "type", "body[0].start", "u32 or i32", "f32")


def test_rule_type_store_index():
    p = prog([Store(buffer="y", index=Lit(dtype="f32", value=1.0), value=u(1))], [out_buf()])
    assert_issue(only(p), "type", "body[0].index", "index must be u32 or i32")


def test_rule_undefined():
    p = prog([Let(name="a", value=Binary(op=BinOp.ADD, lhs=Var(name="nope"), rhs=u(1))),
              Store(buffer="missing", index=u(0), value=u(1)),
              Assign(name="ghost", value=u(1))])
    issues = check(p)
    assert [(i.rule, i.path) for i in issues] == [
        ("undefined", "body[0].value.lhs"), ("undefined", "body[1]"), ("undefined", "body[2]")]
    assert "'nope'" in issues[0].message and "missing" in issues[1].message and "ghost" in issues[2].message


def test_rule_undefined_out_of_scope():
    p = prog([If(cond=Lit(dtype="bool", value=True), then=[Let(name="inner", value=u(1))]),
              Let(name="after", value=Var(name="inner"))])
    assert_issue(only(p), "undefined", "body[1].value", "'inner'", node="inner")


def test_rule_shadowed_enclosing_scope():
    p = prog([Let(name="t", value=u(1)),
              For(var="k", start=u(0), end=u(4), body=[VarDecl(name="t", dtype="u32")])])
    assert_issue(only(p), "shadowed", "body[1].body[0]", "'t'", "body[0]", node="var t: u32")


def test_rule_shadowed_loop_variable_and_same_scope():
    p = prog([For(var="k", start=u(0), end=u(4), body=[For(var="k", start=u(0), end=u(2))]),
              Let(name="a", value=u(1)), Let(name="a", value=u(2))])
    issues = check(p)
    assert [(i.rule, i.path) for i in issues] == [("shadowed", "body[0].body[0]"), ("shadowed", "body[2]")]
    assert "for-loop variable" in issues[0].message


def test_rule_shadowed_buffer_name():
    p = prog([Let(name="y", value=u(1))], [out_buf()])
    assert_issue(only(p), "shadowed", "body[0]", "buffer/workgroup array 'y'", "buffers[0]")


@pytest.mark.parametrize("bad", ["for", "u32", "min", "read", "workgroupBarrier", "__x", "_vyre_tmp", "_",
                                 "2x", "a-b", "naïve", ""])
def test_rule_name(bad):
    assert name_problem(bad) is not None
    p = prog([Let(name=bad, value=u(1))])
    issue = only(p)
    assert_issue(issue, "name", "body[0]", repr(bad) if bad != "_" else "`_`")
    assert "rename it" in issue.fix
    suggested = issue.fix.split("'")[1]
    assert name_problem(suggested) is None


def test_rule_name_on_buffers_and_workgroup_arrays():
    p = prog(buffers=[out_buf(name="struct")], workgroup=[WorkgroupDecl(name="__tile", dtype="f32", count=4)])
    issues = check(p)
    assert [(i.rule, i.path) for i in issues] == [("name", "buffers[0]"), ("name", "workgroup[0]")]
    assert "buffer name" in issues[0].message and "workgroup array name" in issues[1].message


def test_good_names():
    for good in ("x", "tile_sum", "_old1", "k2", "X", "values_", "vyre_x"):
        assert name_problem(good) is None


def test_rule_assign_immutable_let():
    p = prog([Let(name="t", value=u(1)), Assign(name="t", value=u(2))])
    assert_issue(only(p), "assign-immutable", "body[1]", "'t'", "`let`", "body[0]")
    assert "b.var" in only(p).fix


def test_rule_assign_immutable_for_variable_and_buffer():
    p = prog([For(var="k", start=u(0), end=u(4), body=[Assign(name="k", value=u(9))]),
              Assign(name="y", value=u(1))], [out_buf()])
    issues = check(p)
    assert [(i.rule, i.path) for i in issues] == [("assign-immutable", "body[0].body[0]"),
                                                  ("assign-immutable", "body[1]")]
    assert "for-loop variable" in issues[0].message
    assert "y[i] = value" in issues[1].fix


@pytest.mark.parametrize("access", ["read", "uniform"])
def test_rule_readonly_store(access):
    x = out_buf(name="x", access=access, count=4)
    p = prog([Store(buffer="x", index=u(0), value=u(1))], [x])
    issue = only(p)
    assert_issue(issue, "readonly-store", "body[0]", "'x'", access, node="x[0u] = 1u")
    assert "access='read_write'" in issue.fix


def test_store_into_write_buffer_and_workgroup_array_is_fine():
    p = prog([Store(buffer="y", index=u(0), value=u(1)), Store(buffer="s", index=u(0), value=u(1))],
             [out_buf(access="write")], [WorkgroupDecl(name="s", dtype="u32", count=4)])
    assert check(p) == []


def test_rule_uniform_misuse_declaration():
    bufs = [out_buf(name="a", access="uniform", binding=0),  # no count
            out_buf(name="b", dtype="vec3<f32>", access="uniform", binding=1, count=2),
            out_buf(name="c", dtype="f16", access="uniform", binding=2, count=2),
            out_buf(name="d", dtype="bool", access="uniform", binding=3, count=2),
            out_buf(name="e", dtype="f32", access="uniform", binding=4, count=1 << 20)]
    issues = check(prog(buffers=bufs))
    assert [(i.rule, i.path) for i in issues] == [("uniform-misuse", f"buffers[{k}]") for k in range(5)]
    assert "no count" in issues[0].message and "count=" in issues[0].fix
    assert "vec3<f32>" in issues[1].message and "f16" in issues[2].message and "bool" in issues[3].message
    assert "max_uniform_buffer_binding_size" in issues[4].message


def test_rule_uniform_misuse_atomic():
    a = out_buf(name="a", access="uniform", count=4)
    p = prog([Let(name="old", value=Atomic(op=AtomicOp.ADD, buffer="a", index=u(0), value=u(1)))], [a])
    assert_issue(only(p), "uniform-misuse", "body[0].value", "atomic_add", "'a'", node="atomic_add(a[0u], 1u)")


@pytest.mark.parametrize("access", ["read", "write"])
def test_rule_atomic_type_access(access):
    p = prog([Let(name="old", value=Atomic(op=AtomicOp.MAX, buffer="y", index=u(0), value=u(1)))],
             [out_buf(access=access)])
    issue = only(p)
    assert_issue(issue, "atomic-type", "body[0].value", "atomic_max", access, "read_write")


def test_rule_atomic_type_dtype():
    p = prog([If(cond=Lit(dtype="bool", value=True), then=[
        Let(name="old", value=Atomic(op=AtomicOp.ADD, buffer="f", index=u(0), value=Lit(dtype="f32", value=1.0)))])],
        [out_buf(name="f", dtype="f32")])
    assert_issue(only(p), "atomic-type", "body[0].then[0].value", "f32", "u32 or i32")


def test_rule_atomic_type_workgroup_f32():
    b = ProgramBuilder("wg")
    s = b.workgroup_array("s", "f32", 8)
    s.atomic_add(0, 1.0)
    assert_issue(only(b.build(validate=False)), "atomic-type", "body[0].value", "'s'")


def test_rule_barrier_uniformity_if():
    p = prog([If(cond=Binary(op=BinOp.LT, lhs=gidx(), rhs=u(4)), then=[Barrier()])])
    issue = only(p)
    assert_issue(issue, "barrier-uniformity", "body[0].then[0]", "global_index", "body[0]",
                 node="barrier(workgroup)")
    assert "move the barrier" in issue.fix


def test_rule_barrier_uniformity_return_before_barrier():
    b = ProgramBuilder("early_exit")
    y = b.buffer("y", "u32", access="read_write")
    with b.if_(b.global_index() >= y.len()):
        b.return_()
    b.barrier()
    assert_issue(only(b.build(validate=False)), "barrier-uniformity", "body[1]", "`return` at body[0].then[0]")


def test_rule_barrier_uniformity_loops():
    b = ProgramBuilder("loops")
    y = b.buffer("y", "u32", access="read_write")
    with b.for_range(0, y[0]):  # bounds load a storage buffer
        b.barrier()
    with b.for_range(0, y.len()):
        b.barrier()
        with b.if_(y[1] == 0):
            b.break_()
    acc = b.var("u32", 0)
    with b.while_(acc < 8):
        b.barrier()
        acc += b.local_index()
    issues = check(b.build(validate=False))
    assert [(i.rule, i.path) for i in issues] == [
        ("barrier-uniformity", "body[0].body[0]"),
        ("barrier-uniformity", "body[1].body[0]"),
        ("barrier-uniformity", "body[3].body[0]"),
    ]
    assert "`for` loop at body[0]" in issues[0].message
    assert "`break` at body[1].body[1].then[0]" in issues[1].message
    assert "local_index" in issues[2].message and "`v" in issues[2].message


def test_barrier_uniformity_variable_assigned_in_nonuniform_branch():
    b = ProgramBuilder("flag")
    flag = b.var("bool", False, name="flag")
    with b.if_(b.local_index() == 0):
        flag.set(True)
    with b.if_(flag):
        b.barrier()
    assert_issue(only(b.build(validate=False)), "barrier-uniformity", "body[2].then[0]", "flag",
                 "non-uniform control flow at body[1].then[0]")


def test_uniform_barriers_pass():
    b = ProgramBuilder("uniform")
    a = b.buffer("a", "u32", access="uniform", count=4)
    with b.if_((a[1] > 0) & (b.workgroup_id(1) == 0)):
        b.barrier()
    n = b.let(a[b.lit(2)] + b.num_workgroups(0))
    with b.for_range(0, n):
        b.barrier()
    assert check(b.build(validate=False)) == []


def test_rule_control_flow():
    p = prog([Break(), If(cond=Lit(dtype="bool", value=True), then=[Continue()]),
              While(cond=Lit(dtype="bool", value=False), body=[Break(), Continue()])])
    issues = check(p)
    assert [(i.rule, i.path) for i in issues] == [("control-flow", "body[0]"), ("control-flow", "body[1].then[0]")]
    assert "`break` outside a loop" in issues[0].message and "`continue`" in issues[1].message


def test_rule_for_step():
    p = prog([For(var="k", start=u(0), end=u(4), step=0)])
    assert_issue(only(p), "for-step", "body[0].step", "step of 0", node="for k in 0u..4u step 0 {...}")
    p = prog([For(var="k", start=u(0), end=u(4), step=2**31)])
    assert_issue(only(p), "for-step", "body[0].step", "does not fit in i32")


def test_rule_workgroup_size():
    issue = only(prog(workgroup_size=(0, 1, 1)))
    assert_issue(issue, "workgroup-size", "workgroup_size[0]", ">= 1", node="@workgroup_size(0, 1, 1)")
    issue = only(prog(workgroup_size=(1, 1, 65)))
    assert_issue(issue, "workgroup-size", "workgroup_size[2]", "65", "64", "max_compute_workgroup_size_z")
    issue = only(prog(workgroup_size=(32, 16, 1)))
    assert_issue(issue, "workgroup-size", "workgroup_size", "512", "256", "max_compute_invocations_per_workgroup")


def test_workgroup_size_respects_given_limits():
    p = prog(workgroup_size=(1024, 1, 1))
    assert check(p, {"max_compute_invocations_per_workgroup": 1024, "max_compute_workgroup_size_x": 1024}) == []
    # wgpu-py style kebab-case and camelCase keys, and Limits objects
    assert check(p, {"max-compute-invocations-per-workgroup": 1024, "maxComputeWorkgroupSizeX": 1024}) == []
    assert check(p, Limits(max_compute_invocations_per_workgroup=1024, max_compute_workgroup_size_x=1024)) == []
    issue = only(p, {"max_compute_workgroup_size_x": 1024})
    assert_issue(issue, "workgroup-size", "workgroup_size", "1024", "256")


def test_rule_workgroup_memory():
    wg = [WorkgroupDecl(name="a", dtype="f32", count=2048), WorkgroupDecl(name="b", dtype="vec3<u32>", count=512),
          WorkgroupDecl(name="c", dtype="bool", count=1)]
    issue = only(prog(workgroup=wg))
    # 2048*4 + 512*16 + roundup16(1*4) = 8192 + 8192 + 16
    assert_issue(issue, "workgroup-memory", "workgroup", "16400 bytes", "16384")
    assert check(prog(workgroup=wg), {"max_compute_workgroup_storage_size": 32768}) == []
    issue = only(prog(workgroup=[WorkgroupDecl(name="z", dtype="u32", count=0)]))
    assert_issue(issue, "workgroup-memory", "workgroup[0]", "count=0", ">= 1")


def test_rule_duplicate_binding():
    p = prog(buffers=[out_buf(name="a", binding=1), out_buf(name="b", binding=1)])
    assert_issue(only(p), "duplicate-binding", "buffers[1]", "binding 1", "'a'", "buffers[0]")


def test_rule_binding_negative():
    assert_issue(only(prog(buffers=[out_buf(binding=-1)])), "binding", "buffers[0]", "-1")


def test_rule_binding_over_the_bindings_per_group_limit():
    """A binding past maxBindingsPerBindGroup (1000 in portable WebGPU) used to pass validation and
    fail in the GPU's bind group layout as "a vyre lowering bug" (issue 9)."""
    assert check(prog(buffers=[out_buf(binding=999)])) == []
    issue = only(prog(buffers=[out_buf(binding=1000)]))
    assert_issue(issue, "binding", "buffers[0]", "binding 1000", "below 1000", "max_bindings_per_bind_group")
    assert "below 1000" in issue.fix
    issue = only(prog(buffers=[out_buf(binding=8)]), {"max-bindings-per-bind-group": 8})  # an adapter's own limit
    assert_issue(issue, "binding", "buffers[0]", "below 8")
    assert check(prog(buffers=[out_buf(binding=1020)]), {"maxBindingsPerBindGroup": 1024}) == []


def test_rule_buffer_limit():
    """More buffers than the per-stage limits used to fail in the GPU's layout creation (issue 9)."""
    lim = {"max-storage-buffers-per-shader-stage": 8, "max-uniform-buffers-per-shader-stage": 12}
    storage = [out_buf(name=f"s{k}", binding=k) for k in range(9)]
    issue = only(prog(buffers=storage), lim)
    assert_issue(issue, "buffer-limit", "buffers", "9 storage buffers", "max_storage_buffers_per_shader_stage")
    assert check(prog(buffers=storage[:8]), lim) == []
    assert check(prog(buffers=storage)) == []  # not checked without the adapter's limits
    uniform = [out_buf(name=f"u{k}", binding=k, access="uniform", count=1) for k in range(12)]
    issue = only(prog(buffers=[*uniform, out_buf(name="y", binding=20)]), lim)
    assert_issue(issue, "buffer-limit", "buffers", "12 uniform buffers", "at most 11")
    assert check(prog(buffers=[*uniform[:11], out_buf(name="y", binding=20)]), lim) == []


def test_rule_duplicate_name():
    p = prog(buffers=[out_buf(name="a", binding=0), out_buf(name="a", binding=1)],
             workgroup=[WorkgroupDecl(name="a", dtype="u32", count=4)])
    issues = check(p)
    assert [(i.rule, i.path) for i in issues] == [("duplicate-name", "buffers[1]"), ("duplicate-name", "workgroup[0]")]
    assert "buffers[0]" in issues[0].message and "workgroup array name 'a'" in issues[1].message


def test_rule_buffer_count():
    assert_issue(only(prog(buffers=[out_buf(count=0)])), "buffer-count", "buffers[0]", "count=0")


def _deep_expr(depth: int):
    e = u(1)
    for _ in range(depth - 1):
        e = Unary(op=UnOp.NOT, arg=e)
    return e


def _nested_ifs(depth: int, inner: list):
    for _ in range(depth):
        inner = [If(cond=Lit(dtype="bool", value=True), then=inner)]
    return inner


def test_rule_nesting_expression():
    assert check(prog([Eval(value=_deep_expr(MAX_EXPR_DEPTH))])) == []
    issue = only(prog([Let(name="t", value=u(0)), Eval(value=_deep_expr(MAX_EXPR_DEPTH + 1))]))
    assert_issue(issue, "nesting", "body[1].value", f"{MAX_EXPR_DEPTH + 1} levels", str(MAX_EXPR_DEPTH))
    assert "b.let" in issue.fix
    # far past Python's recursion limit: still one clean issue, no RecursionError
    issue = only(prog([Eval(value=_deep_expr(5000))]))
    assert issue.rule == "nesting" and issue.path == "body[0].value"


def test_rule_nesting_blocks():
    assert check(prog(_nested_ifs(MAX_BLOCK_DEPTH, [Barrier()]))) == []
    issue = only(prog(_nested_ifs(MAX_BLOCK_DEPTH + 1, [Barrier()])))
    assert_issue(issue, "nesting", "body[0]" + ".then[0]" * MAX_BLOCK_DEPTH + ".then", str(MAX_BLOCK_DEPTH))
    assert issue.rule == "nesting"
    assert only(prog(_nested_ifs(3000, [Barrier()]))).rule == "nesting"


def test_programs_within_nesting_limits_have_wire_form():
    p = prog(_nested_ifs(MAX_BLOCK_DEPTH, [Let(name="t", value=_deep_expr(MAX_EXPR_DEPTH))]))
    validate(p)
    assert Program.from_wire(p.to_wire()).fingerprint == p.fingerprint


# --------------------------------------------------------------------------- all at once
def test_several_errors_reported_at_once():
    b = ProgramBuilder("many", workgroup_size=(512, 1, 1))
    x = b.buffer("x", "f32")
    y = b.buffer("y", "u32", access="read_write")
    b.workgroup_array("s", "f32", 8192)
    i = b.global_index()
    with b.if_(i < 10):
        x[i] = 1.0
        b.barrier()
    b.let(x[0], name="for")
    with b.for_range(0, y.len(), step=0):
        pass
    b.continue_()
    b.var("u32", 1.5)
    program = b.build(validate=False)
    expected = [
        ("workgroup-size", "workgroup_size[0]"), ("workgroup-memory", "workgroup"),
        ("readonly-store", "body[0].then[0]"), ("name", "body[1]"), ("for-step", "body[2].step"),
        ("control-flow", "body[3]"), ("type", "body[4].value"), ("barrier-uniformity", "body[0].then[1]"),
    ]
    assert [(i.rule, i.path) for i in check(program)] == expected
    with pytest.raises(ValidationError) as exc:
        b.build()
    err = exc.value
    assert err.program_name == "many" and err.code == "VYRE-E100"
    assert [(i.rule, i.path) for i in err.issues] == expected
    assert err.rules == [r for r, _ in expected]
    text = str(err)
    assert "8 error(s)" in text and text.count("Fix: ") == 8
    with pytest.raises(ValidationError):
        validate(program)


def test_no_cascade_after_bad_let():
    """A let whose value does not type-check reports once; later uses are not 'undefined'."""
    p = prog([Let(name="t", value=Binary(op=BinOp.ADD, lhs=u(1), rhs=Lit(dtype="f32", value=1.0))),
              Let(name="w", value=Binary(op=BinOp.MUL, lhs=Var(name="t"), rhs=u(2)))])
    assert [(i.rule, i.path) for i in check(p)] == [("type", "body[0].value")]


def test_issue_fields_are_text():
    p = prog([Store(buffer="x", index=Load(buffer="x", index=u(0)), value=u(1)),
              Return()], [out_buf(name="x", access="read")])
    (issue,) = check(p)
    assert issue.node == "x[x[0u]] = 1u"
    assert all(isinstance(getattr(issue, f), str) for f in ("rule", "path", "node", "message", "fix"))
