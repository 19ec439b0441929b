"""Lowering Program -> WGSL: every node kind compiles on a real WebGPU device (lavapipe in CI),
the output is deterministic, and the WGSL quirks handled by the IR passes give the
semantics of docs/architecture.md (checked by running a few shaders)."""

from __future__ import annotations

import math
import os
import subprocess
import sys

import numpy as np
import pytest
import wgpu  # noqa: E402

from vyre.errors import LoweringError
from vyre.ir import nodes as N
from vyre.ir.builder import BufRef, ProgramBuilder, Val
from vyre.ir.passes import (
    atomic_arrays,
    bool_storage,
    hoist_atomics,
    hoist_constants,
    mask_shifts,
    wgsl_pipeline,
)
from vyre.ir.program import BufferDecl, Program, WorkgroupDecl
from vyre.ir.types import Access, DataType
from vyre.lower import LOWERING_VERSION, BindingInfo, LoweredProgram, lower
from vyre.lower.literals import literal
from vyre.lower.wgsl import render, uniform_binding_nbytes

from gpu_policy import skip_or_fail  # noqa: E402

D = DataType
U32, I32, F32, F16, BOOL = D.U32, D.I32, D.F32, D.F16, D.BOOL


# --------------------------------------------------------------------------- device
@pytest.fixture(scope="module")
def wgpu_device():
    try:
        adapter = wgpu.gpu.request_adapter_sync(power_preference="high-performance")
    except Exception as exc:  # pragma: no cover - depends on the machine
        skip_or_fail(f"no WebGPU adapter: {exc}")
    if adapter is None:  # pragma: no cover
        skip_or_fail("no WebGPU adapter")
    features = [f for f in ("shader-f16",) if f in adapter.features]
    device = adapter.request_device_sync(required_features=features)
    return device


def _has_f16(device) -> bool:
    return "shader-f16" in device.features


_KIND = {
    "read-only-storage": "read_only_storage",
    "storage": "storage",
    "uniform": "uniform",
}


def make_pipeline(device, lp: LoweredProgram):
    """Shader module + compute pipeline with an explicit layout built from ``lp.bindings``."""
    if "shader-f16" in lp.features and not _has_f16(device):
        skip_or_fail("adapter lacks shader-f16")
    module = device.create_shader_module(code=lp.wgsl)
    groups: dict[int, list] = {0: [], 1: []}
    for b in lp.bindings:
        groups.setdefault(b.group, []).append({
            "binding": b.binding,
            "visibility": wgpu.ShaderStage.COMPUTE,
            "buffer": {"type": getattr(wgpu.BufferBindingType, _KIND[b.kind])},
        })
    layouts = [device.create_bind_group_layout(entries=groups[g]) for g in sorted(groups)]
    pl = device.create_pipeline_layout(bind_group_layouts=layouts)
    pipeline = device.create_compute_pipeline(layout=pl, compute={"module": module, "entry_point": lp.entry_point})
    return pipeline, layouts


def compiles(device, program: Program | LoweredProgram) -> LoweredProgram:
    lp = program if isinstance(program, LoweredProgram) else lower(program)
    try:
        make_pipeline(device, lp)
    except wgpu.GPUValidationError as exc:  # show the shader with the error
        numbered = "\n".join(f"{i + 1:4d} {line}" for i, line in enumerate(lp.wgsl.splitlines()))
        pytest.fail(f"WGSL rejected:\n{exc}\n{numbered}")
    return lp


def lowered_unvalidated(program: Program) -> LoweredProgram:
    """Lower without the validator (for programs the validator rightly rejects, e.g. keyword names)."""
    r = render(program)
    wgsl, atomics, uses_f16 = r.wgsl, r.atomic_arrays, r.uses_f16
    binds = [BindingInfo(0, b.binding, b.name, {"read": "read-only-storage", "uniform": "uniform"}.get(
        b.access.value, "storage"), b.dtype, b.access, b.name in atomics) for b in program.sorted_buffers]
    binds.append(BindingInfo(1, 0, "_vyre", "uniform", U32, Access.UNIFORM, False))
    return LoweredProgram(wgsl, "main", tuple(binds), frozenset({"shader-f16"}) if uses_f16 else frozenset(),
                          program.workgroup_size, program.fingerprint, LOWERING_VERSION)


# --------------------------------------------------------------------------- running (semantics checks)
def run(device, program: Program, inputs: dict | None = None, counts: dict | None = None,
        grid: tuple[int, int, int] = (1, 1, 1), validate: bool = True) -> dict[str, np.ndarray]:
    """Dispatch a lowered program; inputs/outputs are raw storage-layout numpy arrays."""
    from vyre.backends.host import fold_grid

    inputs = inputs or {}
    counts = counts or {}
    lp = lower(program) if validate else lowered_unvalidated(program)
    pipeline, layouts = make_pipeline(device, lp)
    BU = wgpu.BufferUsage
    bufs, entries, lens = {}, [], []
    for decl in program.sorted_buffers:
        if decl.name in inputs:
            data = np.ascontiguousarray(inputs[decl.name])
            count = counts.get(decl.name, data.size // decl.dtype.storage_lanes)
        else:
            count = counts.get(decl.name, decl.count or 1)
            data = np.zeros(count * decl.dtype.storage_lanes, decl.dtype.storage_scalar.numpy_dtype)
        raw = data.tobytes()
        if decl.access is Access.UNIFORM:
            size = uniform_binding_nbytes(decl)
            usage = BU.UNIFORM | BU.COPY_DST
        else:
            size = max(16, (len(raw) + 15) // 16 * 16)
            usage = BU.STORAGE | BU.COPY_SRC | BU.COPY_DST
        buf = device.create_buffer(size=size, usage=usage)
        if raw:
            device.queue.write_buffer(buf, 0, raw + b"\0" * ((-len(raw)) % 4))
        bufs[decl.name] = buf
        lens.append(count)
        entries.append({"binding": decl.binding, "resource": {"buffer": buf, "offset": 0, "size": size}})
    L = max(1, math.ceil(len(lens) / 4))
    words = np.zeros(4 + 4 * L, np.uint32)
    words[0:3] = grid
    words[3] = grid[0] * grid[1] * grid[2]
    words[4:4 + len(lens)] = lens
    params = device.create_buffer_with_data(data=words, usage=BU.UNIFORM)
    bg0 = device.create_bind_group(layout=layouts[0], entries=entries)
    bg1 = device.create_bind_group(layout=layouts[1], entries=[{"binding": 0, "resource": {"buffer": params}}])
    enc = device.create_command_encoder()
    cp = enc.begin_compute_pass()
    cp.set_pipeline(pipeline)
    cp.set_bind_group(0, bg0)
    cp.set_bind_group(1, bg1)
    cp.dispatch_workgroups(*fold_grid(grid))
    cp.end()
    device.queue.submit([enc.finish()])
    out = {}
    for decl in program.output_buffers:
        raw = device.queue.read_buffer(bufs[decl.name])
        n = counts.get(decl.name, decl.count or (inputs[decl.name].size // decl.dtype.storage_lanes
                                                    if decl.name in inputs else 1))
        out[decl.name] = np.frombuffer(raw, decl.dtype.storage_scalar.numpy_dtype)[: n * decl.dtype.storage_lanes]
    return out


# --------------------------------------------------------------------------- program helpers
def prog(build, *, name="t", wg=(1, 1, 1), out_dtype: str | DataType = "u32", validate=True, n=64) -> Program:
    """``build(b, out)`` writes into buffer ``out`` (read_write, count ``n``)."""
    b = ProgramBuilder(name, workgroup_size=wg)
    out = b.buffer("out", out_dtype, access="read_write", count=n)
    build(b, out)
    return b.build(validate=validate)


def sample(b, dtype: DataType, k: int = 0):
    """A runtime value of ``dtype`` (loaded from a read buffer), so nothing is constant-folded."""
    name = "in_" + dtype.value.replace("<", "_").replace(">", "")
    known = any(d.name == name for d in b._buffers)
    ref = BufRef(b, name, dtype) if known else b.buffer(name, dtype)
    return ref[k]


def sink(b, out, value) -> None:
    """Consume ``value`` of any type by storing something derived from it into ``out`` (u32)."""
    t = value.dtype
    if t.is_vector:
        value = value[0]
        t = t.scalar
    if t is BOOL:
        value = value.cast("u32")
    elif t is not U32:
        value = value.cast("f32").bitcast("u32") if t.is_float else value.bitcast("u32")
    out[b.local_index()] = value


SCALARS = [U32, I32, F32, F16]
VECTORS = [D.VEC2_U32, D.VEC3_I32, D.VEC4_F32, D.VEC2_F16, D.VEC3_F32, D.VEC4_F16]


def _need_f16(device, *dtypes):
    if any(d.uses_f16 for d in dtypes) and not _has_f16(device):
        skip_or_fail("adapter lacks shader-f16")


# =========================================================================== API
def test_lowered_program_shape(wgpu_device):
    def body(b, out):
        x = b.buffer("x", "f32")
        u = b.buffer("u", "u32", access="uniform", count=4)
        out[b.global_index()] = x[0].cast("u32") + u[1]

    p = prog(body)
    lp = compiles(wgpu_device, p)
    assert lp.entry_point == "main"
    assert lp.lowering_version == LOWERING_VERSION
    assert lp.fingerprint == p.fingerprint
    assert lp.workgroup_size == (1, 1, 1)
    assert lp.features == frozenset()
    assert [(b.group, b.binding, b.name, b.kind) for b in lp.bindings] == [
        (0, 0, "out", "storage"), (0, 1, "x", "read-only-storage"), (0, 2, "u", "uniform"),
        (1, 0, "_vyre", "uniform"),
    ]
    assert all(isinstance(b, BindingInfo) for b in lp.bindings)
    assert "@group(1) @binding(0) var<uniform> _vyre: VyreParams;" in lp.wgsl
    assert "struct VyreParams {\n    grid: vec4<u32>,\n    lens: array<vec4<u32>, 1>,\n}" in lp.wgsl
    assert "var<uniform> b_u: array<vec4<u32>, 1>;" in lp.wgsl
    assert "@compute @workgroup_size(1, 1, 1)" in lp.wgsl
    with pytest.raises((TypeError, AttributeError, ValueError)):
        lp.wgsl = ""  # frozen


def test_lens_array_size(wgpu_device):
    def body(b, out):
        for k in range(5):
            b.buffer(f"x{k}", "u32")
        out[0] = b.lit(0)

    lp = compiles(wgpu_device, prog(body))
    assert "lens: array<vec4<u32>, 2>," in lp.wgsl


def test_lower_does_not_mutate():
    def body(b, out):
        m = b.buffer("m", "bool", access="read_write")
        c = b.buffer("c", "u32", access="read_write")
        v = b.lit(5) / b.lit(0)
        m[0] = ~m[1]
        out[0] = (c.atomic_add(0, 1) + v) << 40

    p = prog(body)
    before = p.to_wire()
    lower(p)
    assert p.to_wire() == before


# =========================================================================== determinism
def _complex_program() -> Program:
    b = ProgramBuilder("det", workgroup_size=(8, 4, 2))
    x = b.buffer("x", "f32")
    m = b.buffer("mask", "bool", access="read_write")
    c = b.buffer("counts", "u32", access="read_write", count=16)
    u = b.buffer("params", "vec4<f32>", access="uniform", count=2)
    y = b.buffer("y", "f16", access="write")
    tile = b.workgroup_array("tile", "f32", 64)
    hist = b.workgroup_array("hist", "u32", 16)
    i = b.global_index()
    tile[b.local_index()] = x[i] * u[0].x
    b.barrier()
    with b.if_(i < x.len()):
        acc = b.var("f32", 0.0)
        with b.for_range(0, 16) as k:
            acc += tile[k] + b.lit(1.0) / b.lit(0.0)
        old = hist.atomic_add(i % 16, 1)
        c.atomic_max(old, b.global_id(1))
        m[i] = (acc > 0.5) & ~m[i]
        y[i] = acc.cast("f16") + b.lit(0.1, "f16")
    return b.build(validate=False)


def test_deterministic_in_process(wgpu_device):
    p = _complex_program()
    a, b2 = lower(p), lower(p)
    assert a.wgsl == b2.wgsl and a == b2
    assert lower(Program.from_wire(p.to_wire())).wgsl == a.wgsl
    compiles(wgpu_device, a)


def test_deterministic_across_processes():
    p = _complex_program()
    here = lower(p).wgsl
    code = (
        "import sys\n"
        "from vyre.ir.program import Program\n"
        "from vyre.lower import lower\n"
        "sys.stdout.write(lower(Program.from_wire(sys.stdin.buffer.read())).wgsl)\n"
    )
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    for seed in ("0", "1", "12345"):
        env = dict(os.environ, PYTHONHASHSEED=seed, PYTHONPATH=root + os.pathsep + os.environ.get("PYTHONPATH", ""))
        res = subprocess.run([sys.executable, "-c", code], input=p.to_wire(), capture_output=True, env=env,
                             check=True, timeout=120)
        assert res.stdout.decode() == here


# =========================================================================== features
def test_f16_enables_extension(wgpu_device):
    _need_f16(wgpu_device, F16)
    lp = compiles(wgpu_device, prog(lambda b, out: out.__setitem__(0, b.lit(1.5, "f16").cast("u32"))))
    assert lp.wgsl.count("enable f16;") == 1
    assert lp.features == frozenset({"shader-f16"})


def test_f16_buffer_enables_extension(wgpu_device):
    _need_f16(wgpu_device, F16)

    def body(b, out):
        h = b.buffer("h", "vec4<f16>")
        out[0] = h[0].x.cast("u32")

    lp = compiles(wgpu_device, prog(body))
    assert "enable f16;" in lp.wgsl and "array<vec4<f16>>" in lp.wgsl


def test_f32_only_has_no_f16(wgpu_device):
    lp = compiles(wgpu_device, _f32_program())
    assert "f16" not in lp.wgsl
    assert lp.features == frozenset()


def _f32_program():
    def body(b, out):
        x = b.buffer("x", "f32")
        out[b.global_index()] = (x[0] * 2.0).sqrt().cast("u32")

    return prog(body)


# =========================================================================== bool storage
def test_bool_buffers_lower_to_u32(wgpu_device):
    def body(b, out):
        m = b.buffer("m", "bool")
        r = b.buffer("r", "bool", access="write")
        i = b.local_index()
        r[i] = ~m[i]
        out[i] = m[i].cast("u32")

    p = prog(body, wg=(4, 1, 1))
    lp = compiles(wgpu_device, p)
    assert "var<storage, read> b_m: array<u32>;" in lp.wgsl
    assert "var<storage, read_write> b_r: array<u32>;" in lp.wgsl
    assert "array<bool" not in lp.wgsl
    assert [b.dtype for b in lp.bindings[:3]] == [U32, BOOL, BOOL]  # the program's dtypes
    got = run(wgpu_device, p, {"m": np.array([1, 0, 0, 1], np.uint32)}, counts={"r": 4})
    assert got["r"].tolist() == [0, 1, 1, 0]
    assert got["out"][:4].tolist() == [1, 0, 0, 1]


def test_bool_storage_pass():
    b = ProgramBuilder("p")
    m = b.buffer("m", "bool", access="read_write")
    m[0] = ~m[1]
    p = b.build(validate=False)
    q = bool_storage(p)
    assert q.buffers[0].dtype is U32 and p.buffers[0].dtype is BOOL
    st = q.body[0]
    assert st.value.kind == "select" and st.value.if_true == N.Lit(dtype=U32, value=1)
    assert st.value.cond.arg == N.Binary(op=N.BinOp.NE, lhs=N.Load(buffer="m", index=N.Lit(dtype=U32, value=1)),
                                         rhs=N.Lit(dtype=U32, value=0))


def test_bool_workgroup_array_is_u32_words(wgpu_device):
    # NVIDIA's driver loses neighbouring invocations' stores into array<bool, N> (tests/fuzz/test_fuzz_findings.py)
    def body(b, out):
        w = b.workgroup_array("flags", "bool", 4)
        w[b.local_index()] = b.local_index() > 1
        b.barrier()
        out[b.local_index()] = w[3].cast("u32")

    lp = compiles(wgpu_device, prog(body, wg=(4, 1, 1)))
    assert "var<workgroup> w_flags: array<u32, 4>;" in lp.wgsl
    # the bool is stored as its 0/1 word (a select between constants: written as the condition's bit mask)
    assert "w_flags[_lidx] = 0u ^ ((1u ^ 0u) & (0u - u32(" in lp.wgsl and "(w_flags[3u] != 0u)" in lp.wgsl


# =========================================================================== names
def test_keyword_names_compile(wgpu_device):
    # the validator rejects these names; the lowering itself must still be safe
    p = Program(
        name="kw", workgroup_size=(1, 1, 1),
        buffers=[BufferDecl(name="loop", binding=0, dtype=U32, access=Access.READ_WRITE),
                 BufferDecl(name="main", binding=1, dtype=U32, access=Access.READ),
                 BufferDecl(name="_vyre", binding=2, dtype=U32, access=Access.READ)],
        workgroup=[WorkgroupDecl(name="fn", dtype=U32, count=4)],
        body=[
            N.VarDecl(name="var", dtype=U32, value=N.Load(buffer="main", index=N.Lit(dtype=U32, value=0))),
            N.Let(name="let", value=N.Var(name="var")),
            N.Let(name="_w", value=N.Load(buffer="_vyre", index=N.Lit(dtype=U32, value=0))),
            N.Let(name="u32", value=N.Var(name="_w")),
            N.For(var="for", start=N.Lit(dtype=U32, value=0), end=N.Lit(dtype=U32, value=3), body=[
                N.Store(buffer="fn", index=N.Var(name="for"), value=N.Var(name="let")),
                N.Assign(name="var", value=N.Binary(op=N.BinOp.ADD, lhs=N.Var(name="var"), rhs=N.Var(name="u32"))),
            ]),
            N.Store(buffer="loop", index=N.Lit(dtype=U32, value=0), value=N.Var(name="var")),
        ],
    )
    lp = compiles(wgpu_device, lowered_unvalidated(p))
    assert "b_loop" in lp.wgsl and "v_var" in lp.wgsl and "w_fn" in lp.wgsl and "b__vyre" in lp.wgsl


def test_non_identifier_names_are_encoded(wgpu_device):
    p = Program(
        name="odd name!", workgroup_size=(1, 1, 1),
        buffers=[BufferDecl(name="a-b", binding=0, dtype=U32, access=Access.READ_WRITE)],
        body=[N.Let(name="λ", value=N.Lit(dtype=U32, value=3)),
              N.Store(buffer="a-b", index=N.Lit(dtype=U32, value=0), value=N.Var(name="λ"))],
    )
    lp = compiles(wgpu_device, lowered_unvalidated(p))
    assert "bx_" in lp.wgsl and "vx_" in lp.wgsl


def test_redeclared_names_get_distinct_wgsl_names(wgpu_device):
    lit = lambda v: N.Lit(dtype=U32, value=v)  # noqa: E731
    p = Program(
        name="redecl", workgroup_size=(1, 1, 1),
        buffers=[BufferDecl(name="o", binding=0, dtype=U32, access=Access.READ_WRITE)],
        body=[N.Let(name="x", value=lit(1)), N.Let(name="x", value=lit(2)),
              N.If(cond=N.Lit(dtype=BOOL, value=True), then=[N.Let(name="x", value=lit(3)),
                                                           N.Store(buffer="o", index=lit(1), value=N.Var(name="x"))]),
              N.Store(buffer="o", index=lit(0), value=N.Var(name="x"))],
    )
    lp = compiles(wgpu_device, lowered_unvalidated(p))
    assert "let v_x: u32 = 1u;" in lp.wgsl and "let v1_x: u32 = 2u;" in lp.wgsl and "v2_x" in lp.wgsl
    assert "b_o[0u] = v1_x;" in lp.wgsl and "b_o[1u] = v2_x;" in lp.wgsl


# =========================================================================== expressions
@pytest.mark.parametrize("dtype", [U32, I32, F32, F16, BOOL])
@pytest.mark.parametrize("which", ["zero", "one", "big", "neg", "special"])
def test_literals(wgpu_device, dtype, which):
    _need_f16(wgpu_device, dtype)
    values = {
        U32: {"zero": 0, "one": 1, "big": 2**32 - 1, "neg": 2**31, "special": 123456789},
        I32: {"zero": 0, "one": 1, "big": 2**31 - 1, "neg": -(2**31), "special": -1},
        F32: {"zero": 0.0, "one": 0.1, "big": 3.4028234663852886e38, "neg": -0.0, "special": math.nan},
        F16: {"zero": 0.0, "one": 0.1, "big": 65504.0, "neg": -0.0, "special": -math.inf},
        BOOL: {"zero": False, "one": True, "big": True, "neg": False, "special": True},
    }[dtype][which]
    compiles(wgpu_device, prog(lambda b, out: sink(b, out, b.lit(values, dtype))))


def test_literal_text():
    assert literal(U32, 7) == "7u"
    assert literal(I32, -7) == "(-7i)"
    assert literal(I32, -(2**31)) == "(-2147483647i - 1i)"
    assert literal(F32, 0.1) == "0.1f"
    assert literal(F32, -0.0) == "bitcast<f32>(0x80000000u)"
    assert literal(F32, math.inf) == "_nonfinite_f32(0x7f800000u)"  # a helper call: not a const-expression
    assert literal(F32, math.nan) == "_nonfinite_f32(0x7fc00000u)"
    assert literal(F16, 0.5) == "0.5h"
    assert literal(F16, -0.0) == "f16(unpack2x16float(0x00008000u).x)"
    assert literal(BOOL, True) == "true"
    with pytest.raises(LoweringError):
        literal(U32, -1)
    with pytest.raises(LoweringError):
        literal(I32, 2**31)


def test_float_literals_are_exact(wgpu_device):
    """Every f32/f16 literal denotes exactly the value the reference uses (checked bit for bit)."""
    rng = np.random.default_rng(7)
    f32s = [0.1, 1 / 3, 1e-45, 1.17549435e-38, 3.4028235e38, -2.5, 16777217.0, 1e-40, math.pi, 1e10,
            math.inf, -math.inf, math.nan, -0.0, 0.0]
    f32s += rng.standard_normal(12).astype(np.float32).tolist()
    f32s += (rng.integers(0, 2**31, 12, dtype=np.uint32)).view(np.float32).tolist()  # any bit pattern
    f32s = [v for v in f32s if not (isinstance(v, float) and math.isnan(v))] + [math.nan]

    def body(b, out):
        for k, v in enumerate(f32s):
            out[k] = b.lit(v, "f32").bitcast("u32")

    got = run(wgpu_device, prog(body))["out"]
    want = np.array(f32s, np.float32).view(np.uint32)
    for k, v in enumerate(f32s):
        if math.isnan(v):
            assert (got[k] & 0x7FFFFFFF) > 0x7F800000
        else:
            assert got[k] == want[k], (v, hex(got[k]), hex(want[k]))

    if not _has_f16(wgpu_device):
        return
    f16s = [0.1, 1 / 3, 6e-8, 6.1e-5, 65504.0, -2.5, 2049.0, 0.0999, -0.0, math.inf, -math.inf]
    f16s += [v for v in np.arange(0, 2**15, 997, dtype=np.uint16).view(np.float16).astype(float).tolist()
             if not math.isnan(v)]  # NaN payloads are not kept (literals hold Python floats)

    def body16(b, out):
        for k, v in enumerate(f16s):
            out[k] = b.lit(v, "f16").cast("f32").bitcast("u32")

    got = run(wgpu_device, prog(body16))["out"]
    want = np.array(f16s, np.float16).astype(np.float32).view(np.uint32)
    assert [hex(g) for g in got[: len(f16s)]] == [hex(w) for w in want]


def test_var_load_len_builtin(wgpu_device):
    def body(b, out):
        x = b.buffer("x", "u32")
        fixed = b.buffer("fixed", "u32", count=3)
        w = b.workgroup_array("w", "u32", 8)
        v = b.let(x[0] + fixed[1] + w[2])
        total = v + x.len() + fixed.len() + w.len() + out.len()
        for ax in range(3):
            total = total + b.global_id(ax) + b.local_id(ax) + b.workgroup_id(ax) + b.num_workgroups(ax)
        out[b.global_index()] = total + b.local_index()

    lp = compiles(wgpu_device, prog(body, wg=(2, 2, 2)))
    assert "_vyre.lens[0].y" in lp.wgsl  # x is buffer 1, runtime-sized
    assert "3u" in lp.wgsl and "8u" in lp.wgsl and "64u" in lp.wgsl  # fixed counts are constants


UNARY_CASES = [
    (N.UnOp.NEG, [I32, F32, F16, D.VEC3_F32, D.VEC2_I32]),
    (N.UnOp.NOT, [BOOL, U32, I32, D.VEC4_U32]),
    (N.UnOp.ABS, [U32, I32, F32, F16, D.VEC2_F32]),
    (N.UnOp.SIGN, [I32, F32, F16, D.VEC3_I32]),
    *[(op, [F32, F16, D.VEC4_F32]) for op in sorted(N.FLOAT_UNOPS, key=lambda o: o.value)],
    *[(op, [U32, I32, D.VEC2_U32]) for op in sorted(N.INT_UNOPS, key=lambda o: o.value)],
]


def _runtime(b, dtype: DataType):
    if dtype is BOOL:
        return sample(b, U32) != 0
    return sample(b, dtype)


@pytest.mark.parametrize("op,dtype", [(op, d) for op, ds in UNARY_CASES for d in ds],
                         ids=lambda x: getattr(x, "value", str(x)))
@pytest.mark.parametrize("const", [False, True], ids=["runtime", "literal"])
def test_unary(wgpu_device, op, dtype, const):
    _need_f16(wgpu_device, dtype)
    assert set(UnOp for UnOp, _ in UNARY_CASES) == set(N.UnOp)

    def body(b, out):
        if const and not dtype.is_vector:
            x = b.lit({BOOL: True, U32: 0, I32: -(2**31)}.get(dtype, -1.0), dtype)  # worst-case constants
        elif const:
            x = b.vec(dtype, b.lit(0 if dtype.is_int else -1.0, dtype.scalar))
        else:
            x = _runtime(b, dtype)
        sink(b, out, b.let(Val(b, N.Unary(op=op, arg=x.node))))

    compiles(wgpu_device, prog(body))


ARITH = [N.BinOp.ADD, N.BinOp.SUB, N.BinOp.MUL, N.BinOp.DIV, N.BinOp.REM]
BINARY_CASES = [
    *[(op, d, d) for op in ARITH + [N.BinOp.MIN, N.BinOp.MAX] for d in [U32, I32, F32, F16, D.VEC3_F32, D.VEC2_I32]],
    *[(op, D.VEC4_F32, F32) for op in ARITH],
    *[(op, I32, D.VEC3_I32) for op in ARITH],
    (N.BinOp.POW, F32, F32), (N.BinOp.POW, F16, F16), (N.BinOp.POW, D.VEC2_F32, D.VEC2_F32),
    *[(op, d, d) for op in (N.BinOp.BIT_AND, N.BinOp.BIT_OR, N.BinOp.BIT_XOR) for d in [U32, I32, D.VEC4_U32]],
    *[(op, d, U32) for op in (N.BinOp.SHL, N.BinOp.SHR) for d in [U32, I32]],
    *[(op, D.VEC2_I32, D.VEC2_U32) for op in (N.BinOp.SHL, N.BinOp.SHR)],
    *[(op, d, d) for op in (N.BinOp.EQ, N.BinOp.NE, N.BinOp.LT, N.BinOp.LE, N.BinOp.GT, N.BinOp.GE)
      for d in [U32, I32, F32, F16]],
    (N.BinOp.EQ, BOOL, BOOL), (N.BinOp.NE, BOOL, BOOL),
    (N.BinOp.AND, BOOL, BOOL), (N.BinOp.OR, BOOL, BOOL),
]


def _const(b, dtype: DataType, which: int):
    """Constants that make WGSL constant evaluation fail: zero divisors, overflow, shift >= 32, NaN."""
    if dtype is BOOL:
        return b.lit(which == 0, BOOL)
    if dtype.is_vector:
        return b.vec(dtype, _const(b, dtype.scalar, which))
    if dtype is U32:
        return b.lit([4294967295, 0][which], U32)
    if dtype is I32:
        return b.lit([-(2**31), 0][which], I32)
    return b.lit([-65504.0 if dtype is F16 else -3e38, 0.0][which], dtype)


@pytest.mark.parametrize("op,lt,rt", BINARY_CASES, ids=lambda x: getattr(x, "value", str(x)))
@pytest.mark.parametrize("const", [False, True], ids=["runtime", "literal"])
def test_binary(wgpu_device, op, lt, rt, const):
    _need_f16(wgpu_device, lt, rt)
    assert set(o for o, _, _ in BINARY_CASES) == set(N.BinOp)
    def body(b, out):
        if const:
            x = _const(b, lt, 0)
            y = b.lit(33, "u32") if op in (N.BinOp.SHL, N.BinOp.SHR) and rt is U32 else _const(b, rt, 1)
            if op in (N.BinOp.SHL, N.BinOp.SHR) and rt.is_vector:
                y = b.vec(rt, b.lit(40, "u32"))
        else:
            x, y = _runtime(b, lt), _runtime(b, rt)
        sink(b, out, b.let(Val(b, N.Binary(op=op, lhs=x.node, rhs=y.node))))

    compiles(wgpu_device, prog(body))


@pytest.mark.parametrize("dtype", [U32, F32, F16, D.VEC3_F32, BOOL])
def test_select(wgpu_device, dtype):
    _need_f16(wgpu_device, dtype)
    other = (lambda b: _runtime(b, dtype)) if dtype is not BOOL else (lambda b: b.lit(True))
    compiles(wgpu_device, prog(lambda b, out: sink(b, out, b.select(_runtime(b, U32) > 3, _runtime(b, dtype),
                                                                    other(b)))))


CAST_TYPES = [U32, I32, F32, F16, BOOL]


@pytest.mark.parametrize("src", CAST_TYPES, ids=str)
@pytest.mark.parametrize("dst", CAST_TYPES, ids=str)
@pytest.mark.parametrize("const", [False, True], ids=["runtime", "literal"])
def test_cast_scalar(wgpu_device, src, dst, const):
    _need_f16(wgpu_device, src, dst)

    def body(b, out):
        x = _const(b, src, 0) if const else _runtime(b, src)
        sink(b, out, b.let(x.cast(dst)))

    compiles(wgpu_device, prog(body))


@pytest.mark.parametrize("src,dst", [(D.VEC3_F32, D.VEC3_I32), (D.VEC4_F32, D.VEC4_U32), (D.VEC2_F16, D.VEC2_I32),
                                     (D.VEC2_U32, D.VEC2_F32), (D.VEC4_I32, D.VEC4_F16), (D.VEC3_F16, D.VEC3_F32)],
                         ids=str)
def test_cast_vector(wgpu_device, src, dst):
    _need_f16(wgpu_device, src, dst)
    compiles(wgpu_device, prog(lambda b, out: sink(b, out, b.let(_runtime(b, src).cast(dst)))))


BITCASTS = [(U32, I32), (I32, F32), (F32, U32), (U32, U32), (D.VEC2_U32, D.VEC2_F32), (D.VEC4_F32, D.VEC4_I32),
            (U32, D.VEC2_F16), (D.VEC2_F16, U32), (F32, D.VEC2_F16), (D.VEC2_F16, I32), (D.VEC2_U32, D.VEC4_F16),
            (D.VEC4_F16, D.VEC2_F32), (D.VEC4_F16, D.VEC2_U32), (F16, F16), (D.VEC2_F16, D.VEC2_F16)]


@pytest.mark.parametrize("src,dst", BITCASTS, ids=str)
@pytest.mark.parametrize("const", [False, True], ids=["runtime", "literal"])
def test_bitcast(wgpu_device, src, dst, const):
    _need_f16(wgpu_device, src, dst)
    compiles(wgpu_device, prog(lambda b, out: sink(b, out, b.let((_const(b, src, 0) if const else _runtime(b, src))
                                                          .bitcast(dst)))))


@pytest.mark.parametrize("dtype", [F32, F16, D.VEC4_F32])
def test_fma(wgpu_device, dtype):
    _need_f16(wgpu_device, dtype)
    compiles(wgpu_device, prog(lambda b, out: sink(b, out, b.fma(_runtime(b, dtype), _runtime(b, dtype),
                                                                 _runtime(b, dtype)))))
    compiles(wgpu_device, prog(lambda b, out: sink(b, out, b.let(b.fma(_const(b, dtype, 0), _const(b, dtype, 0),
                                                               _const(b, dtype, 0))))))


@pytest.mark.parametrize("dtype", VECTORS, ids=str)
def test_vec_and_extract(wgpu_device, dtype):
    _need_f16(wgpu_device, dtype)

    def body(b, out):
        s = dtype.scalar
        full = b.vec(dtype, *[_runtime(b, s) for _ in range(dtype.lanes)])
        splat = b.vec(dtype, b.lit(1, s) if s.is_int else b.lit(1.0, s))
        lanes = [full[k] for k in range(dtype.lanes)] + [splat[dtype.lanes - 1], (full + splat)[0]]
        acc = lanes[0]
        for v in lanes[1:]:
            acc = acc + v
        sink(b, out, acc)

    compiles(wgpu_device, prog(body))


@pytest.mark.parametrize("op", list(N.AtomicOp), ids=lambda o: o.value)
@pytest.mark.parametrize("where", ["buffer", "workgroup"])
@pytest.mark.parametrize("dtype", [U32, I32], ids=str)
def test_atomics(wgpu_device, op, where, dtype):
    def body(b, out):
        arr = (b.buffer("acc", dtype, access="read_write") if where == "buffer"
               else b.workgroup_array("acc", dtype, 16))
        i = b.local_index() % 16
        v = _runtime(b, dtype)
        name = {N.AtomicOp.COMPARE_EXCHANGE: "atomic_compare_exchange"}.get(op, f"atomic_{op.value}")
        if op is N.AtomicOp.LOAD:
            old = arr.atomic_load(i)
        elif op is N.AtomicOp.COMPARE_EXCHANGE:
            old = arr.atomic_compare_exchange(i, v, v + 1)
        else:
            old = getattr(arr, name)(i, v)
        arr[i + 1] = old  # plain store -> atomicStore
        sink(b, out, old + arr[i])  # plain load -> atomicLoad

    p = prog(body, wg=(16, 1, 1))
    lp = compiles(wgpu_device, p)
    assert f"array<atomic<{dtype.value}>" in lp.wgsl
    assert "atomicStore(&" in lp.wgsl and "atomicLoad(&" in lp.wgsl
    assert any(b.atomic for b in lp.bindings) == (where == "buffer")
    if op is N.AtomicOp.COMPARE_EXCHANGE:
        assert "atomicCompareExchangeWeak" in lp.wgsl and "loop {" in lp.wgsl


def test_nested_atomics_and_eval(wgpu_device):
    """Atomics nested in expressions (hand-built IR) get their own lets, in evaluation order."""
    lit = lambda v: N.Lit(dtype=U32, value=v)  # noqa: E731
    add = lambda i, v: N.Atomic(op=N.AtomicOp.ADD, buffer="c", index=lit(i), value=v)  # noqa: E731
    cas = N.Atomic(op=N.AtomicOp.COMPARE_EXCHANGE, buffer="c", index=lit(2), expected=add(0, lit(1)), value=lit(7))
    p = Program(
        name="nested", workgroup_size=(1, 1, 1),
        buffers=[BufferDecl(name="c", binding=0, dtype=U32, access=Access.READ_WRITE, count=4)],
        body=[
            N.Eval(value=add(1, add(0, lit(1)))),
            N.Eval(value=cas),
            N.Eval(value=N.Binary(op=N.BinOp.ADD, lhs=add(3, lit(1)), rhs=lit(1))),
            N.Store(buffer="c", index=lit(3), value=N.Binary(op=N.BinOp.ADD, lhs=add(3, lit(0)), rhs=lit(100))),
            N.If(cond=N.Binary(op=N.BinOp.EQ, lhs=add(0, lit(0)), rhs=lit(3)), then=[
                N.Eval(value=N.Atomic(op=N.AtomicOp.LOAD, buffer="c", index=lit(0)))]),
            N.VarDecl(name="k", dtype=U32),
            N.While(cond=N.Binary(op=N.BinOp.LT, lhs=add(1, lit(0)), rhs=lit(5)), body=[
                N.Eval(value=add(1, lit(1)))]),
        ],
    )
    q = hoist_atomics(p)
    for s in q.body:
        for e in ([s.value] if hasattr(s, "value") and s.value is not None else []):
            assert e.kind == "atomic" or not any(n.kind == "atomic" for n in _walk(e))
    assert atomic_arrays(p) == frozenset({"c"})
    got = run(wgpu_device, p, counts={"c": 4})["c"]
    # c0: +1 (inner), +1 (cas expected) -> 2 ; c1: += 1 (old c0 = 0) -> 0, while: 0 -> 5 ;
    # c2: cas(expected=1, c2=0) fails -> 0
    # c3: +1 then old(1)+100 stored -> 101
    assert got.tolist() == [2, 5, 0, 101]


def _walk(e):
    from vyre.ir.traverse import iter_expr

    return iter_expr(e)


def test_atomic_in_for_end_is_a_lowering_error():
    p = Program(
        name="bad", workgroup_size=(1, 1, 1),
        buffers=[BufferDecl(name="c", binding=0, dtype=U32, access=Access.READ_WRITE)],
        body=[N.For(var="k", start=N.Lit(dtype=U32, value=0),
                    end=N.Atomic(op=N.AtomicOp.LOAD, buffer="c", index=N.Lit(dtype=U32, value=0)))],
    )
    with pytest.raises(LoweringError) as info:
        render(p)
    assert info.value.fix


# =========================================================================== statements
def test_all_statement_kinds(wgpu_device):
    def body(b, out):
        x = b.buffer("x", "i32")
        c = b.buffer("c", "u32", access="read_write")
        t = b.let(x[0] * 2)                                    # let
        v = b.var("i32")                                       # var (zero)
        w = b.var("i32", t + 1)                                # var (init)
        v.set(w - t)                                           # assign
        out[0] = v.cast("u32")                                 # store
        with b.if_(t > 0):                                     # if / else
            w += 1
        with b.else_():
            w -= 1
        with b.for_range(0, 10) as k:                          # for, break, continue
            with b.if_(k == 5):
                b.break_()
            with b.if_(k % 2 == 0):
                b.continue_()
            w += k.cast("i32")
        with b.for_range(b.lit(10, "i32"), -3, step=-2) as k:  # negative step, i32
            w += k
        with b.for_range(b.lit(21), 0, step=-3) as k:          # negative step, u32
            w += k.cast("i32")
        with b.while_(w < 100):                                # while
            w += 7
        b.barrier()                                            # barriers
        b.barrier("storage")
        b.eval(c.atomic_add(0, 1))                             # eval of an atomic
        b.eval(w + 1)                                          # eval of a pure value
        with b.if_(w > 1000):
            b.return_()                                        # return
        out[1] = w.cast("u32")

    p = prog(body)
    lp = compiles(wgpu_device, p)
    for text in ("for (var v_k", "-= 2i", "-= 3u", "while (", "workgroupBarrier();", "storageBarrier();",
                 "return;", "break;", "continue;", "} else {", "_ = "):
        assert text in lp.wgsl, text
    got = run(wgpu_device, p, {"x": np.array([3], np.int32)}, counts={"c": 1})["out"]
    w = 7 + 1 + (1 + 3) + sum(range(10, -3, -2)) + sum(range(21, 0, -3))
    while w < 100:
        w += 7
    assert got[:2].tolist() == [1, w]


# =========================================================================== semantics on the device
def test_integer_semantics_with_constants(wgpu_device):
    """Operations on literals that WGSL would reject or fold differently (div by 0, shifts >= 32)."""
    def body(b, out):
        i = lambda v: b.lit(v, "i32")  # noqa: E731
        vals = [
            b.lit(7) / b.lit(0), b.lit(7) % b.lit(0),
            (i(-(2**31)) / i(-1)).bitcast("u32"), (i(-(2**31)) % i(-1)).bitcast("u32"),
            (i(-7) / i(2)).bitcast("u32"), (i(-7) % i(2)).bitcast("u32"),
            b.lit(1) << b.lit(33), b.lit(0x80000000) >> b.lit(35), (i(-8) >> b.lit(33)).bitcast("u32"),
            (abs(i(-(2**31)))).bitcast("u32"), (-i(-(2**31))).bitcast("u32"),
            b.lit(0xFFFFFFFF) + b.lit(1), (i(2**31 - 1) + i(1)).bitcast("u32"),
            b.lit(0) - b.lit(1),
        ]
        for k, v in enumerate(vals):
            out[k] = v

    got = run(wgpu_device, prog(body))["out"].astype(np.int64)
    u = lambda v: v & 0xFFFFFFFF  # noqa: E731
    assert got[:14].tolist() == [7, 0, u(-(2**31)), 0, u(-3), u(-1), 2, 0x80000000 >> 3, u(-4),
                                 u(-(2**31)), u(-(2**31)), 0, u(-(2**31)), 0xFFFFFFFF]


def test_runtime_shift_amounts_are_masked(wgpu_device):
    def body(b, out):
        x = b.buffer("x", "u32")
        out[0] = x[0] << x[1]
        out[1] = (x[0].bitcast("i32") * -1 >> x[2]).bitcast("u32")

    got = run(wgpu_device, prog(body), {"x": np.array([3, 33, 65], np.uint32)})["out"]
    assert got[:2].tolist() == [6, (-3 >> 1) & 0xFFFFFFFF]


def test_float_to_int_casts_saturate(wgpu_device):
    xs = np.array([3e9, -3e9, np.nan, np.inf, -np.inf, 2147483520.0, 4294967040.0, -0.7, 5e9, 2.5, -2.5,
                   -2147483648.0, 1e-30, -1.0, 65504.0, 7.9], np.float32)

    def body(b, out):
        x = b.buffer("x", "f32")
        i = b.local_index()
        out[i] = x[i].cast("i32").bitcast("u32")
        out[i + 16] = x[i].cast("u32")
        if _has_f16(wgpu_device):
            out[i + 32] = x[i].cast("f16").cast("i32").bitcast("u32")
            v = b.vec("vec2<f32>", x[i], x[i])
            out[i + 48] = v.cast("vec2<u32>")[1]

    got = run(wgpu_device, prog(body, wg=(16, 1, 1)), {"x": xs})["out"]

    def sat(v, lo, hi):
        if math.isnan(v):
            return 0
        return int(min(max(math.trunc(v) if math.isfinite(v) else (hi if v > 0 else lo), lo), hi))

    assert got[:16].view(np.int32).tolist() == [sat(float(v), -(2**31), 2**31 - 1) for v in xs]
    assert got[16:32].tolist() == [sat(float(v), 0, 2**32 - 1) for v in xs]
    if _has_f16(wgpu_device):
        with np.errstate(over="ignore"):
            h = xs.astype(np.float16).astype(np.float64)
        # f32 -> f16 overflow to inf is not portable through a following cast: NVIDIA's Vulkan
        # driver folds f32->f16->i32 and skips the f16 rounding, so compare in-range values only
        fits = ~(np.abs(xs) > 65504.0)
        want16 = [sat(float(v), -(2**31), 2**31 - 1) for v in h]
        assert got[32:48].view(np.int32)[fits].tolist() == [w for w, f in zip(want16, fits) if f]
        assert got[48:64].tolist() == [sat(float(v), 0, 2**32 - 1) for v in xs]


# Edge values of float -> int casts (issue 9): out of range both ways, NaN, +-inf, -0.0, the
# first values past each range, the last f32 values inside it, and values truncating to a bound.
_F32_CAST_EDGES = [-2.5, 1e10, -1e10, math.nan, math.inf, -math.inf, 4294967296.0, 2147483648.0, -0.0, -0.7,
                   4294967040.0, 2147483520.0, -2147483648.0, -2147483904.0, 3.9, 0.99999994]
_F16_CAST_EDGES = [-2.5, math.nan, math.inf, -math.inf, 65504.0, -65504.0, -0.0, -0.7, 3.9, 0.99951171875]


@pytest.mark.parametrize("src", ["f32", "f16"])
def test_float_to_int_casts_match_the_reference(gpu, assert_parity, src):
    """Casts of out-of-range, NaN and infinite floats to u32/i32 (scalars and vectors, literals and
    loaded values, under a select that drops or keeps them) give the reference's saturated values
    bit for bit. (The helpers also clamp before converting, see the next test; the select of issue 9
    itself is test_select_between_minus_one_bits_and_zero.)"""
    if src == "f16" and not gpu.supports_f16():
        skip_or_fail("adapter lacks shader-f16")
    edges = _F16_CAST_EDGES if src == "f16" else _F32_CAST_EDGES
    n = len(edges)
    b = ProgramBuilder(f"casts_{src}", 1)
    flag = b.buffer("flag", "u32")
    x = b.buffer("x", src)
    outs = {t: b.buffer(f"o_{t}", t, access="read_write", count=20 * n) for t in ("u32", "i32")}
    slot = dict.fromkeys(outs, 0)

    def emit(t, v):
        outs[t][slot[t]] = v
        slot[t] += 1

    lit = lambda v: b.lit(v, src)  # noqa: E731
    for k, v in enumerate(edges):
        w = edges[(k + 1) % n]
        for t in ("u32", "i32"):
            emit(t, lit(v).cast(t))  # a literal (hoisted to a let)
            emit(t, x[k].cast(t))  # a loaded value
            for lanes in (2, 3, 4):
                vt, it = f"vec{lanes}<{src}>", f"vec{lanes}<{t}>"
                cv = b.vec(vt, *(lit(v if j % 2 == 0 else w) for j in range(lanes))).cast(it)
                rv = b.vec(vt, *(x[(k + 1) % n] if j % 2 == 0 else x[k] for j in range(lanes))).cast(it)
                emit(t, cv[0])  # lane 0 holds v in both vectors, lane 1 in the loaded one
                emit(t, rv[1])
            # not the bits of -1.0: lavapipe miscompiles that select (test_select_between_minus_one_bits_and_zero)
            keep = b.lit(0xDEADBEEF, "u32") if t == "u32" else b.lit(-7, "i32")
            emit(t, b.select(flag[0] > 0, keep, lit(v).cast(t)))  # the cast is taken (flag[0] == 0)
            emit(t, b.select(flag[1] > 0, keep, lit(v).cast(t)))  # the cast is dropped (flag[1] == 1)
            emit(t, b.select(flag[0] > 0, keep, x[k].cast(t)))
    program = b.build()
    with np.errstate(over="ignore"):
        xs = np.array(edges, np.float16 if src == "f16" else np.float32)
    inputs = {"flag": np.array([0, 1], np.uint32), "x": xs,
              "o_u32": np.zeros(20 * n, np.uint32), "o_i32": np.zeros(20 * n, np.int32)}
    got = assert_parity(program, inputs)
    # spot checks against the documented semantics, independent of the reference
    want_u = {-2.5: 0, 1e10: 2**32 - 1, -1e10: 0, math.inf: 2**32 - 1, -math.inf: 0, 4294967296.0: 2**32 - 1,
              2147483648.0: 2**31, 4294967040.0: 4294967040, 65504.0: 65504, 3.9: 3}
    want_i = {-2.5: -2, 1e10: 2**31 - 1, -1e10: -(2**31), math.inf: 2**31 - 1, -math.inf: -(2**31),
              2147483648.0: 2**31 - 1, -2147483904.0: -(2**31), 2147483520.0: 2147483520, -65504.0: -65504}
    per_value = slot["u32"] // n
    for k, v in enumerate(edges):
        u, i = got[0][k * per_value: (k + 1) * per_value], got[1][k * per_value: (k + 1) * per_value]
        if math.isnan(v):
            assert u.tolist() == [0] * 8 + [0, 0xDEADBEEF, 0] and i.tolist() == [0] * 8 + [0, -7, 0]
        if v in want_u:
            assert u[[0, 1, *range(2, 8), 8, 10]].tolist() == [want_u[v]] * 10 and u[9] == 0xDEADBEEF, (v, u)
        if v in want_i:
            assert i[[0, 1, *range(2, 8), 8, 10]].tolist() == [want_i[v]] * 10 and i[9] == -7, (v, i)


def test_float_to_int_helpers_convert_only_clamped_values():
    """The cast helpers clamp (with selects, NaN -> 0) before converting: the WGSL never converts the raw argument."""
    def body(b, out):
        x = b.buffer("x", "f32")
        out[0] = x[0].cast("u32")
        out[1] = x[0].cast("i32").bitcast("u32")
        out[2] = b.vec("vec3<f32>", x[0], x[1], x[2]).cast("vec3<u32>")[0]

    wgsl = lower(prog(body)).wgsl
    for dst, clamp in (("u32", "0.0f, 4294967040.0f"), ("i32", "-2147483648.0f, 2147483520.0f"),
                       ("vec3<u32>", "0.0f, 4294967040.0f")):
        fn = wgsl[wgsl.index(f"-> {dst} {{"):]
        fn = fn[: fn.index("\n}")]
        assert f"{dst}(x)" not in fn and f"return select({dst}(y)," in fn
        assert f"[{clamp}]" in wgsl


def test_select_between_minus_one_bits_and_zero(gpu, assert_parity):
    """The select of issue 9: the cast arm is 0 on both backends. lavapipe miscompiled the select itself (where
    it is false it gave 0x80000000, -0.0, as if rewritten to -f32(cond); an if/else too): a select between
    constants is lowered as the condition's bit mask picking the bits, which it compiles right."""
    b = ProgramBuilder("select_minus_one_bits", 1)
    x = b.buffer("x", "u32")
    out = b.buffer("out", "u32", access="read_write", count=3)
    out[0] = b.select(x[0] > 0, b.lit(0xBF800000, "u32"), b.lit(-2.5).cast("u32"))
    out[1] = b.select(x[0] > 0, b.lit(0xBF800000, "u32"), b.lit(0, "u32"))  # same without any cast
    out[2] = b.select(x[0] > 0, b.lit(-1.0), b.lit(0.0)).bitcast("u32")  # -0.0 instead of 0.0
    got = assert_parity(b.build(), {"x": np.array([0], np.uint32), "out": np.zeros(3, np.uint32)})
    assert got[0].tolist() == [0, 0, 0]


def test_float_semantics(wgpu_device):
    xs = np.array([5.5, -5.5, 2.0, -2.0, 2.5, -2.5, 0.5, 1.5], np.float32)

    def body(b, out):
        x = b.buffer("x", "f32")
        out[0] = (x[0] % x[2]).bitcast("u32")
        out[1] = (x[1] % x[2]).bitcast("u32")
        out[2] = (x[0] % x[3]).bitcast("u32")
        for k in range(4):
            out[3 + k] = x[4 + k].round().bitcast("u32")
        out[7] = (b.lit(1.0) / b.lit(0.0)).bitcast("u32")
        out[8] = (b.lit(5.5) % b.lit(2.0)).bitcast("u32")
        out[9] = b.lit(-1.0).sqrt().bitcast("u32")

    got = run(wgpu_device, prog(body), {"x": xs})["out"]
    f = got.view(np.float32)
    assert f[:3].tolist() == [1.5, -1.5, 1.5]
    assert f[3:7].tolist() == [2.0, -2.0, 0.0, 2.0]
    assert f[7] == np.inf and f[8] == 1.5 and np.isnan(f[9])


def test_bitcast_f16_helpers_roundtrip(wgpu_device):
    _need_f16(wgpu_device, F16)
    words = np.array([0x3C00BC00, 0x7E007C00, 0x00018000, 0x12345678], np.uint32)

    def body(b, out):
        x = b.buffer("x", "u32")
        i = b.local_index()
        h = x[i].bitcast("vec2<f16>")
        out[i] = h.bitcast("u32")
        out[i + 4] = h[0].cast("f32").bitcast("u32")
        pair = b.vec("vec2<u32>", x[i], x[(i + 1) % 4])
        q = pair.bitcast("vec4<f16>").bitcast("vec2<u32>")
        out[i + 8] = q[0] ^ q[1]

    got = run(wgpu_device, prog(body, wg=(4, 1, 1)), {"x": words})["out"]
    low = words.astype(np.uint16)  # the low half is lane 0
    want_f32 = low.view(np.float16).astype(np.float32).view(np.uint32)
    assert got[4:6].tolist() == want_f32[:2].tolist()  # NaN/subnormal-free lanes are exact
    assert got[[0, 3]].tolist() == words[[0, 3]].tolist()
    assert got[8] == words[0] ^ words[1]


@pytest.mark.parametrize("dtype", [U32, I32, F32, D.VEC4_F32, D.VEC4_U32, D.VEC2_F32, D.VEC3_I32, F16, D.VEC2_F16,
                                   D.VEC3_F16, D.VEC4_F16, BOOL], ids=str)
def test_uniform_layouts(wgpu_device, dtype):
    _need_f16(wgpu_device, dtype)
    n = 5
    rng = np.random.default_rng(1)
    host = rng.integers(0, 100, n * dtype.lanes).astype(dtype.numpy_dtype).reshape(n, dtype.lanes)
    if dtype is BOOL:
        host = host % 2 == 0
    storage = np.zeros((n, dtype.storage_lanes), dtype.storage_scalar.numpy_dtype)
    storage[:, : dtype.lanes] = host

    def body(b, out):
        u = b.buffer("u", dtype, access="uniform", count=n)
        i = b.local_index()
        with b.if_(i < n):
            v = u[i]
            for k in range(dtype.lanes):
                lane = v[k] if dtype.is_vector else v
                out[i * 4 + k] = lane.cast("u32") if lane.dtype is not BOOL else b.select(lane, b.lit(1), b.lit(0))

    # the validator only admits 32-bit scalar and vec4 uniforms; the lowering handles every layout
    p = prog(body, wg=(8, 1, 1), validate=False)
    got = run(wgpu_device, p, {"u": storage.reshape(-1)}, validate=False)["out"]
    want = np.zeros(64, np.uint32)
    for i in range(n):
        want[i * 4: i * 4 + dtype.lanes] = host[i].astype(np.uint32)
    assert got.tolist() == want.tolist()
    assert uniform_binding_nbytes(p.buffer("u")) % 16 == 0


def test_grid_folding_and_builtins(wgpu_device):
    """The prologue unravels the linear workgroup index over the logical grid."""
    def body(b, out):
        i = b.global_index()
        out[i * 4] = b.workgroup_id(0) + b.workgroup_id(1) * 10 + b.workgroup_id(2) * 100
        out[i * 4 + 1] = b.global_id(0) + b.global_id(1) * 10 + b.global_id(2) * 100
        out[i * 4 + 2] = b.num_workgroups(0) + b.num_workgroups(1) * 10 + b.num_workgroups(2) * 100
        out[i * 4 + 3] = b.local_id(0) + b.local_index() * 10

    p = prog(body, wg=(2, 1, 1), n=96)
    got = run(wgpu_device, p, grid=(2, 3, 2))["out"].reshape(-1, 4)
    k = 0
    for z in range(2):
        for y in range(3):
            for x in range(2):
                for lx in range(2):
                    assert got[k].tolist() == [x + 10 * y + 100 * z, 2 * x + lx + 10 * y + 100 * z, 2 + 30 + 200,
                                               lx + 10 * lx]
                    k += 1


def test_compare_exchange_is_strong(wgpu_device):
    """Many invocations CAS-increment one counter in a retry loop: every increment lands."""
    def body(b, out):
        c = b.buffer("c", "u32", access="read_write", count=1)
        done = b.var("bool", False)
        with b.while_(~done):
            cur = c.atomic_load(0)
            old = c.atomic_compare_exchange(0, cur, cur + 1)
            with b.if_(old == cur):
                done.set(True)
        out[0] = b.lit(0)

    got = run(wgpu_device, prog(body, wg=(64, 1, 1)), counts={"c": 1}, grid=(4, 1, 1))["c"]
    assert got.tolist() == [256]


# =========================================================================== passes
def test_mask_shifts_pass():
    b = ProgramBuilder("s")
    o = b.buffer("o", "u32", access="read_write")
    o[0] = o[1] << 37
    o[1] = o[2] >> o[3]
    p = b.build(validate=False)
    q = mask_shifts(p)
    assert q.body[0].value.rhs == N.Lit(dtype=U32, value=5)
    assert q.body[1].value.rhs == N.Binary(op=N.BinOp.BIT_AND, lhs=p.body[1].value.rhs, rhs=N.Lit(dtype=U32, value=31))
    assert mask_shifts(q) == q  # idempotent


def test_hoist_constants_pass():
    b = ProgramBuilder("c")
    o = b.buffer("o", "u32", access="read_write")
    o[0] = b.lit(5) / b.lit(0)
    o[1] = o[0] / b.lit(0)  # runtime operand: left alone
    p = b.build(validate=False)
    q = hoist_constants(p)
    assert q.body[0] == N.Let(name="_const0", value=N.Lit(dtype=U32, value=5))
    assert q.body[1].value == N.Binary(op=N.BinOp.DIV, lhs=N.Var(name="_const0"), rhs=N.Lit(dtype=U32, value=0))
    assert q.body[2] == p.body[1]


def test_fresh_names_avoid_user_names():
    b = ProgramBuilder("c")
    o = b.buffer("o", "u32", access="read_write")
    b.let(b.lit(1), name="_const0")
    o[0] = b.lit(5) / b.lit(0)
    q = hoist_constants(b.build(validate=False))
    assert q.body[1].name == "_const1"


def test_pipeline_is_pure_and_deterministic():
    p = _complex_program()
    before, fp = p.to_wire(), p.fingerprint
    a, b2 = wgsl_pipeline(p), wgsl_pipeline(p)
    assert a == b2 and p.to_wire() == before
    assert a.fingerprint != fp  # rewritten programs are new objects with their own identity
    assert a.fingerprint == Program.from_wire(a.to_wire()).fingerprint


# =========================================================================== errors
def test_lowering_errors_have_fixes():
    cases = [
        Program(name="e1", buffers=[BufferDecl(name="u", binding=0, dtype=U32, access=Access.UNIFORM)],
                body=[N.Let(name="a", value=N.Load(buffer="u", index=N.Lit(dtype=U32, value=0)))]),
        Program(name="e2", buffers=[BufferDecl(name="r", binding=0, dtype=U32, access=Access.READ)],
                body=[N.Store(buffer="r", index=N.Lit(dtype=U32, value=0), value=N.Lit(dtype=U32, value=1))]),
        Program(name="e3", body=[N.Let(name="a", value=N.Var(name="nope"))]),
        Program(name="e4", body=[N.Let(name="a", value=N.Lit(dtype=U32, value=1)),
                                 N.Assign(name="a", value=N.Lit(dtype=U32, value=2))]),
        Program(name="e5", body=[N.Let(name="a", value=N.Binary(op=N.BinOp.ADD, lhs=N.Lit(dtype=U32, value=1),
                                                                 rhs=N.Lit(dtype=F32, value=1.0)))]),
        Program(name="e6", buffers=[BufferDecl(name="r", binding=0, dtype=F32, access=Access.READ_WRITE)],
                body=[N.Eval(value=N.Atomic(op=N.AtomicOp.ADD, buffer="r", index=N.Lit(dtype=U32, value=0),
                                            value=N.Lit(dtype=F32, value=1.0)))]),
        Program(name="e7", buffers=[BufferDecl(name="r", binding=0, dtype=BOOL, access=Access.READ_WRITE)],
                body=[N.Eval(value=N.Atomic(op=N.AtomicOp.ADD, buffer="r", index=N.Lit(dtype=U32, value=0),
                                            value=N.Lit(dtype=BOOL, value=True)))]),
        Program(name="e8", buffers=[BufferDecl(name="r", binding=0, dtype=U32, access=Access.READ)],
                body=[N.Eval(value=N.Atomic(op=N.AtomicOp.ADD, buffer="r", index=N.Lit(dtype=U32, value=0),
                                            value=N.Lit(dtype=U32, value=1)))]),
        Program(name="e9", body=[N.If(cond=N.Lit(dtype=U32, value=1))]),
    ]
    for p in cases:
        with pytest.raises(LoweringError) as info:
            render(p)
        assert info.value.fix, p.name
        assert p.name in str(info.value)


def test_lower_rejects_non_programs():
    with pytest.raises(LoweringError):
        lower("not a program")  # type: ignore[arg-type]


def test_operations_on_constants_run_at_run_time(gpu, reference):
    """WGSL evaluates operations on constants at shader creation and refuses a zero integer divisor or
    a non-finite result there; vyre gives them their run-time meaning (x / 0 = x, x % 0 = 0, inf)."""
    from vyre.backends.float_model import check_under_model

    b = ProgramBuilder("constants", 64)
    x = b.buffer("x", "u32")
    o = b.buffer("o", "u32", access="write")
    f = b.buffer("f", "f32", access="write")
    i = b.global_index()
    with b.if_(i < o.len()):
        o[i] = x[i] / b.lit(0, "u32") + x[i] % b.lit(0, "u32") + b.lit(7, "u32") / b.lit(0, "u32")
        f[i] = b.lit(1e30) * b.lit(1e30) + b.lit(3.0) / b.lit(0.0) + (b.lit(2.0) % b.lit(0.75)) + b.lit(-1.0).sqrt()
    program = b.build()
    wgsl = lower(program).wgsl
    assert "_rt_u32(0u)" in wgsl
    inputs = [np.arange(5, dtype=np.uint32)]
    got = gpu.dispatch(program, inputs, (1,))
    np.testing.assert_array_equal(got[0], reference.dispatch(program, inputs, (1,))[0])
    np.testing.assert_array_equal(got[0], np.arange(5, dtype=np.uint32) + 7)
    assert check_under_model(program, inputs, got, (1,)).ok
