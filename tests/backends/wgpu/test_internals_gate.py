"""wgpu-py's private internals live in vyre/backends/wgpu/native.py (and native_map.py, native_record.py and
native_bind.py, which only native.py reaches) alone, behind one version gate;
with the gate closed (an unknown wgpu-py, or VYRE_WGPU_NATIVE=0) the backend runs on the public API."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
INTERNALS = re.compile(r"\b(_api|_ffi|_lib|_internal|_map_state|_mapped_status|_thread_event|_poll_wait"
                       r"|_experimental_get_mapped_range|_release_memoryviews)\b|wgpu_native")
#: the gate, and the modules behind it (reached only through the gate)
GATE = "native.py"
BEHIND_GATE = ("native_map.py", "native_record.py", "native_bind.py")
WGPU = ROOT / "vyre" / "backends" / "wgpu"


def test_no_module_but_native_mentions_wgpu_internals():
    offenders = []
    for path in sorted((ROOT / "vyre").rglob("*.py")):
        if path.parent == WGPU and path.name in (GATE, *BEHIND_GATE):
            continue
        for n, line in enumerate(path.read_text().splitlines(), 1):
            if INTERNALS.search(line):
                offenders.append(f"{path.relative_to(ROOT)}:{n}: {line.strip()}")
    assert not offenders, f"wgpu-py internals outside {GATE} / {' / '.join(BEHIND_GATE)}:\n" + "\n".join(offenders)


def test_the_modules_behind_the_gate_are_imported_by_the_gate_alone():
    """native_map / native_record / native_bind are reached only through native.py (its gate covers them)."""
    names = "|".join(re.escape(n[:-3]) for n in BEHIND_GATE)
    imports = re.compile(rf"^\s*(from\s+\S*\b({names})\b\s+import|import\s+\S*\b({names})\b)|"
                         rf"^\s*from\s+\S*\s+import\s+.*\b({names})\b", re.M)
    offenders = [str(path.relative_to(ROOT)) for path in sorted((ROOT / "vyre").rglob("*.py"))
                 if not (path.parent == WGPU and path.name == GATE) and imports.search(path.read_text())]
    assert not offenders, f"modules behind {GATE}'s gate imported elsewhere: {offenders}"
    for name in BEHIND_GATE:
        assert (WGPU / name).exists(), name


def test_the_gate_names_the_known_version_and_the_switch(monkeypatch):
    import wgpu

    from vyre.backends.wgpu import native

    assert wgpu.__version__ in native.KNOWN_WGPU
    monkeypatch.setenv(native.ENV_SWITCH, "0")
    assert not native.native_enabled()
    monkeypatch.delenv(native.ENV_SWITCH)
    monkeypatch.setattr(wgpu, "__version__", "99.0.0")
    assert not native.native_enabled()


def _run_in_child(env_extra: dict, code: str) -> str:
    from procs import child_env

    env = child_env(**env_extra)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300,
                         cwd=str(ROOT))
    assert out.returncode == 0, out.stderr[-3000:]
    return out.stdout.strip().splitlines()[-1]


CHILD = """
import numpy as np, vyre, vyre.ops
g = vyre.WgpuBackend.acquire(disk_cache=False)
x = np.arange(3000, dtype=np.float32)
y = np.ones(3000, dtype=np.float32)
assert np.array_equal(vyre.ops.zip_add(g, x, y), x + y)
h = g.allocate_resident(x.nbytes)
g.upload_resident(h, x)
assert np.array_equal(g.download_resident(h).view(np.float32), x)
p = g.dispatch_async(vyre.ops.api.pipeline_for("zip.add", {"shape_x": (3000,), "shape_y": (3000,),
                                                          "dtype": "f32"}).steps[0].program,
                     [x.reshape(-1, 4), y.reshape(-1, 4)],
                     vyre.DispatchConfig(counts={"out": 750}))
assert np.array_equal(p.wait()[0].reshape(-1), x + y)
t = g.dispatch_resident_sequence_timed([], read=[h])
assert t.outputs[0].view(np.float32)[5] == 5.0
print(g.stats()["driver"])
"""


def test_unknown_wgpu_version_falls_back_to_the_public_api(gpu):
    """Ops, resident transfers, async and timed work on the public API: with the switch, and with a wgpu-py
    version the gate does not know (simulated by patching ``wgpu.__version__`` before vyre looks)."""
    assert _run_in_child({"VYRE_WGPU_NATIVE": "0"}, CHILD) == "public"
    assert _run_in_child({}, "import wgpu; wgpu.__version__ = '99.0.0'\n" + CHILD) == "public"
    assert _run_in_child({}, CHILD) == gpu.stats()["driver"]


def test_native_bind_groups_work_and_report_validation_errors_as_wgpu_py_does(gpu):
    """NativeCalls.bind_group (the eager path's bind groups) gives a working GPUBindGroup, raises wgpu-py's own
    validation error for a bad descriptor, and steps aside (None) for a device whose create_bind_group was
    replaced."""
    import numpy as np
    import wgpu

    from vyre.backends.wgpu import native

    nat = native.native_calls()
    if not native.native_enabled():  # the public-API pass (VYRE_WGPU_NATIVE=0): the gate is closed
        assert nat is None
        return
    assert nat is not None
    dev = wgpu.gpu.request_adapter_sync().request_device_sync()
    layout = dev.create_bind_group_layout(entries=[
        {"binding": 0, "visibility": wgpu.ShaderStage.COMPUTE, "buffer": {"type": "storage"}}])
    buf = dev.create_buffer(size=64, usage=wgpu.BufferUsage.STORAGE | wgpu.BufferUsage.COPY_SRC)
    group = nat.bind_group(dev, layout, [(0, buf, 64)], "t:g0")
    assert isinstance(group, wgpu.GPUBindGroup)
    shader = dev.create_shader_module(code="@group(0) @binding(0) var<storage, read_write> o: array<u32>;\n"
                                           "@compute @workgroup_size(16) fn main(@builtin(global_invocation_id) i:"
                                           " vec3<u32>) { o[i.x] = i.x * 3u; }")
    pipe = dev.create_compute_pipeline(layout=dev.create_pipeline_layout(bind_group_layouts=[layout]),
                                       compute={"module": shader, "entry_point": "main"})
    enc = dev.create_command_encoder()
    cp = enc.begin_compute_pass()
    cp.set_pipeline(pipe)
    cp.set_bind_group(0, group)
    cp.dispatch_workgroups(1)
    cp.end()
    dev.queue.submit([enc.finish()])
    assert np.array_equal(np.frombuffer(dev.queue.read_buffer(buf), np.uint32), np.arange(16) * 3)
    bad = dev.create_buffer(size=64, usage=wgpu.BufferUsage.UNIFORM)  # not a storage buffer
    with pytest.raises(wgpu.GPUValidationError):
        nat.bind_group(dev, layout, [(0, bad, 64)], "t:bad")

    class Patched(type(dev)):
        def create_bind_group(self, **kw):
            return super().create_bind_group(**kw)

    dev.__class__ = Patched
    try:
        assert nat.bind_group(dev, layout, [(0, buf, 64)], "t:g0") is None
    finally:
        dev.__class__ = Patched.__mro__[1]
