"""The ``vyre`` console script, through the real entry point: a subprocess of the installed ``vyre`` (next to
this Python) started from a temporary directory, with the user's cache directories redirected there."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import vyre
from vyre.demo import build_saxpy

ROOT = Path(__file__).resolve().parent.parent
IN_CI = os.environ.get("CI") == "true"
SUBCOMMANDS = ("info", "wgsl", "run", "export", "conform", "bench", "tune", "cache", "demo")


def _vyre_exe() -> str | None:
    here = Path(sys.executable).parent / "vyre"
    return str(here) if here.exists() else shutil.which("vyre")


VYRE = _vyre_exe()
pytestmark = pytest.mark.skipif(VYRE is None and not IN_CI, reason="the vyre console script is not installed "
                                "(pip install -e .)")


@pytest.fixture
def cli(tmp_path):
    """``cli(*args, env=..., input=...)`` runs ``vyre args`` in tmp_path/work; returns the CompletedProcess."""
    work = tmp_path / "work"
    work.mkdir()
    base = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}  # the installed vyre, not the checkout's
    base.update(XDG_CACHE_HOME=str(tmp_path / "xdg-cache"), VYRE_CACHE_DIR=str(tmp_path / "vyre-cache"))

    def run(*args: str, env: dict[str, str | None] | None = None, input: bytes | None = None, exe=None,
            timeout: float = 300):
        full = dict(base)
        for k, v in (env or {}).items():
            if v is None:
                full.pop(k, None)
            else:
                full[k] = v
        cmd = [exe or VYRE, *args] if not isinstance(exe, list) else [*exe, *args]
        r = subprocess.run(cmd, cwd=work, env=full, capture_output=True, input=input, timeout=timeout)
        r.out, r.err = r.stdout.decode(), r.stderr.decode()  # type: ignore[attr-defined]
        return r

    run.work = work  # type: ignore[attr-defined]
    return run


def _one_line_error(r, status: int, *needles: str) -> None:
    assert r.returncode == status, (r.returncode, r.out, r.err)
    lines = r.err.strip().splitlines()
    assert len(lines) == 1 and "error:" in lines[0], r.err
    assert "Traceback" not in r.err
    for n in needles:
        assert n in lines[0], (n, lines[0])


@pytest.fixture(scope="module")
def saxpy_wire(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("wire") / "saxpy.json"
    path.write_bytes(build_saxpy().to_wire())
    return path


def _npy(dir: Path, name: str, array) -> str:
    path = dir / f"{name}.npy"
    np.save(path, array)
    return str(path)


# ---------------------------------------------------------------------------------------------- the program
def test_help_version_and_python_m_vyre(cli):
    r = cli("--help")
    assert r.returncode == 0 and all(f"  {c} " in r.out for c in SUBCOMMANDS), r.out
    r = cli("--version")
    assert r.returncode == 0 and r.out.strip() == f"vyre {vyre.__version__}"
    r = cli("--help", exe=[sys.executable, "-m", "vyre"])
    assert r.returncode == 0 and "python -m vyre" in r.out and all(f"  {c} " in r.out for c in SUBCOMMANDS)
    for c in SUBCOMMANDS:
        assert cli(c, "--help").returncode == 0, c
    _one_line_error(cli("frobnicate"), 2, "No such command", "vyre --help")
    r = cli()  # no command: the help
    assert r.returncode == 2 and r.err.startswith("Usage: vyre [OPTIONS] COMMAND") and "Commands:" in r.err
    _one_line_error(cli("info", "--frob"), 2, "vyre info: error:", "--frob")


def test_packaging_declares_the_script_and_the_benches():
    from importlib.metadata import entry_points

    (ep,) = [e for e in entry_points(group="console_scripts") if e.name == "vyre"]
    assert ep.value == "vyre.cli:main"
    # benches is a top-level package of the distribution: importable from a directory that is not the checkout
    r = subprocess.run([sys.executable, "-c", "import benches.__main__ as m; print(m.FAMILIES[0])"],
                       capture_output=True, text=True, cwd=Path(sys.executable).parent,
                       env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"})
    assert r.returncode == 0 and r.stdout.strip() == "elementwise", r.stderr


def test_importing_vyre_does_not_import_the_cli():
    code = "import sys, vyre; bad = [m for m in ('vyre.cli', 'click', 'tqdm') if m in sys.modules]; assert not bad, bad"
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


# ---------------------------------------------------------------------------------------------- info
def test_info(cli, gpu):
    r = cli("info")
    assert r.returncode == 0, r.err
    assert "adapters:" in r.out and "chosen: [" in r.out and "key limits:" in r.out and "features (" in r.out
    assert gpu.adapter_info["device"] in r.out
    doc = json.loads(cli("info", "--json").out)
    assert {"index", "name", "backend", "type", "driver"} <= set(doc["adapters"][0])
    chosen = doc["chosen"]
    assert chosen["name"] == gpu.adapter_info["device"] and isinstance(chosen["features"], list)
    assert chosen["key_limits"]["max-compute-invocations-per-workgroup"] >= 256
    r = cli("info", env={"VYRE_ADAPTER": "no-such-adapter-xyz"})
    assert r.returncode == 1 and "no-such-adapter-xyz" in r.err and "Traceback" not in r.err


def test_no_xdg_runtime_dir_complaint(cli, gpu):
    r = cli("info", env={"XDG_RUNTIME_DIR": None})
    assert r.returncode == 0, r.err
    assert "XDG_RUNTIME_DIR" not in r.err, r.err


# ---------------------------------------------------------------------------------------------- wgsl
SCRIPT = """
import vyre

def build(n=64):
    b = vyre.ProgramBuilder("double", workgroup_size=n)
    x = b.buffer("x", "f32", access="read_write")
    i = b.global_index()
    with b.if_(i < x.len()):
        x[i] = x[i] * 2.0
    return b.build()

program = build()
"""


def test_wgsl_of_wire_module_and_script(cli, saxpy_wire):
    from vyre.lower import lower

    want = lower(build_saxpy()).wgsl
    assert cli("wgsl", str(saxpy_wire)).out == want
    assert cli("wgsl", "vyre.demo:build_saxpy").out == want  # a builder function in a module
    assert cli("wgsl", "-", input=saxpy_wire.read_bytes()).out == want  # standard input
    r = cli("wgsl", str(saxpy_wire), "--text")
    assert r.returncode == 0 and r.out.strip() == build_saxpy().to_text().strip()
    assert cli("wgsl", "vyre.demo:build_saxpy", "--wire").out.strip().encode() == build_saxpy().to_wire()
    (cli.work / "kern.py").write_text(SCRIPT)
    r = cli("wgsl", "kern.py")  # the only Program at the top level
    assert r.returncode == 0 and "fn main(" in r.out and "@workgroup_size(64" in r.out, r.err
    r = cli("wgsl", "kern.py:build")
    assert r.returncode == 0 and "fn main(" in r.out


def test_wgsl_errors(cli, tmp_path):
    _one_line_error(cli("wgsl", "missing.json"), 2, "vyre wgsl: error:", "no such file: missing.json")
    _one_line_error(cli("wgsl", "missing.py"), 2, "no such file")
    _one_line_error(cli("wgsl", "no_such_module_xyz:prog"), 2, "no such file or module")
    (cli.work / "bad.json").write_text('{"format": "something else"}')
    _one_line_error(cli("wgsl", "bad.json"), 2, "bad.json is not a valid vyre wire document")
    (cli.work / "junk.json").write_bytes(b"\xff\x00 not json")
    _one_line_error(cli("wgsl", "junk.json"), 2, "not a valid vyre wire document")
    (cli.work / "empty.py").write_text("x = 1\n")
    _one_line_error(cli("wgsl", "empty.py"), 2, "no Program", "empty.py:NAME")
    _one_line_error(cli("wgsl", "empty.py:y"), 2, "no attribute 'y'")
    _one_line_error(cli("wgsl", "empty.py:x"), 2, "not a vyre Program")
    (cli.work / "boom.py").write_text("import vyre\n\nraise RuntimeError('kaboom')\n")
    _one_line_error(cli("wgsl", "boom.py"), 1, "RuntimeError: kaboom", "boom.py:3")
    (cli.work / "needs.py").write_text("def build(n):\n    pass\n")
    _one_line_error(cli("wgsl", "needs.py:build"), 2, "needs arguments (n)")
    _one_line_error(cli("wgsl", "."), 2, "is a directory")
    _one_line_error(cli("wgsl"), 2, "Missing argument 'PROGRAM'")


# ---------------------------------------------------------------------------------------------- run
def _saxpy_inputs(dir: Path):
    rng = np.random.default_rng(1)
    x = rng.uniform(-1, 1, 1000).astype(np.float32)
    y = rng.uniform(-1, 1, 1000).astype(np.float32)
    return x, y, ["--input", f"x={_npy(dir, 'x', x)}", "--input", f"y={_npy(dir, 'y', y)}"]


@pytest.mark.parametrize("backend", ["reference", "wgpu"])
def test_run_writes_npy_outputs(cli, saxpy_wire, backend, request):
    if backend == "wgpu":
        request.getfixturevalue("gpu")
    x, y, args = _saxpy_inputs(cli.work)
    r = cli("run", str(saxpy_wire), "--input", "a=2.5", *args, "--backend", backend, "--out-dir", "outs")
    assert r.returncode == 0, r.err
    assert r.out.strip() == "y: float32 (1000,) -> outs/y.npy"
    np.testing.assert_allclose(np.load(cli.work / "outs" / "y.npy"), 2.5 * x + y, rtol=1e-5, atol=1e-6)
    a = _npy(cli.work, "a", np.float32([3.0]))
    r = cli("run", str(saxpy_wire), "-i", f"a={a}", *args, "--backend", backend, "-o", "y=named/result.npy")
    assert r.returncode == 0, r.err
    np.testing.assert_allclose(np.load(cli.work / "named" / "result.npy"), 3 * x + y, rtol=1e-5, atol=1e-6)


def test_run_errors(cli, saxpy_wire):
    w = str(saxpy_wire)
    x, y, args = _saxpy_inputs(cli.work)
    _one_line_error(cli("run", w, *args), 2, "vyre run: error:", "missing --input for a")
    _one_line_error(cli("run", w, "-i", "a=1", *args, "-i", "z=1"), 2, "no input buffer 'z'", "inputs: a, x, y")
    _one_line_error(cli("run", w, "-i", "a=1", "-i", "x=nope.npy", "-i", f"y={cli.work / 'y.npy'}"), 2,
                    "--input x: no such file: nope.npy")
    _one_line_error(cli("run", w, "-i", "a", *args), 2, "expected NAME=VALUE")
    _one_line_error(cli("run", w, "-i", "a=1", *args, "--backend", "cuda"), 2, "'cuda' is not one of")
    _one_line_error(cli("run", w, "-i", "a=1", *args, "-o", "q=q.npy"), 2, "no output buffer 'q'")
    _one_line_error(cli("run", w, "-i", "a=1", *args, "--grid", "two"), 2, "--grid")
    (cli.work / "bad.npy").write_text("not an array")
    _one_line_error(cli("run", w, "-i", "a=1", "-i", "x=bad.npy", "-i", f"y={cli.work / 'y.npy'}"), 2,
                    "cannot read bad.npy")
    xi = _npy(cli.work, "xi", np.arange(1000, dtype=np.int32))  # wrong dtype: the dispatch refuses it
    # exit 2 when the backend calls it a bad argument (an InvalidArgumentError, issue 27's rule), else 1
    try:
        vyre.ReferenceBackend().dispatch(build_saxpy(), {"a": np.float32([1]), "x": np.load(xi),
                                                         "y": np.load(cli.work / "y.npy")})
    except vyre.errors.DispatchError as exc:
        status = 2 if isinstance(exc, vyre.errors.InvalidArgumentError) else 1
    _one_line_error(cli("run", w, "-i", "a=1", "-i", f"x={xi}", "-i", f"y={cli.work / 'y.npy'}",
                        "--backend", "reference"), status, "DispatchError", "dtype int32")
    _one_line_error(cli("run", "missing.json"), 2, "no such file")


def test_run_writes_exactly_the_output_path_it_reports(cli, saxpy_wire):
    # issue 27: `-o y=result` reported `result` and wrote `result.npy`; `-o y=<dir>` wrote `<dir>.npy`
    w = str(saxpy_wire)
    x, y, args = _saxpy_inputs(cli.work)
    base = ("run", w, "-i", "a=2", *args, "--backend", "reference")
    for given, written in (("result", "result.npy"), ("sub/res", "sub/res.npy"), ("y.out", "y.out"),
                           ("named.npy", "named.npy"), ("deep/er/r.v1", "deep/er/r.v1")):
        r = cli(*base, "-o", f"y={given}")
        assert r.returncode == 0, r.err
        assert r.out.strip() == f"y: float32 (1000,) -> {written}", (given, r.out)
        np.testing.assert_allclose(np.load(cli.work / written), 2 * x + y, rtol=1e-5, atol=1e-6)
    assert not (cli.work / "y.out.npy").exists() and not (cli.work / "result.npy.npy").exists()
    (cli.work / "adir").mkdir()
    (cli.work / "outs" / "y.npy").mkdir(parents=True)
    before = sorted(p.name for p in cli.work.iterdir())
    _one_line_error(cli(*base, "-o", "y=adir"), 2, "--output y=adir", "is a directory", "adir/y.npy")
    _one_line_error(cli(*base, "-o", "y=newdir/"), 2, "is a directory")
    _one_line_error(cli(*base, "-o", "y=a.npy", "-o", "y=b.npy"), 2, "--output y given twice")
    _one_line_error(cli(*base, "--out-dir", "outs"), 2, "it is a directory")
    assert sorted(p.name for p in cli.work.iterdir()) == before  # nothing written: no adir.npy, no newdir
    assert not list((cli.work / "adir").iterdir())


# ---------------------------------------------------------------------------------------------- export
def test_export_bad_name_is_a_bad_argument(cli, saxpy_wire):
    # issue 27: `vyre export --name ../../x` exited 1 (the docs: bad arguments exit 2)
    for bad in ("../../x", "a/b", ".hidden", "-x"):
        _one_line_error(cli("export", str(saxpy_wire), "--out", "exported", "--name", bad), 2,
                        "vyre export: error:", f"--name {bad!r}", "not a plain file name")
    assert not (cli.work / "exported").exists() and not (cli.work.parent.parent / "x.json").exists()


def test_export(cli, saxpy_wire):
    r = cli("export", str(saxpy_wire), "--out", "exported")
    assert r.returncode == 0, r.err
    manifest = Path(r.out.strip())
    assert (cli.work / manifest).is_file() and manifest.parent.name == "exported"
    assert json.loads((cli.work / manifest).read_text())
    r = cli("export", "vyre.demo:build_saxpy", "--out", "exported", "--name", "mine")
    assert r.returncode == 0 and (cli.work / "exported" / "mine.wgsl").is_file(), r.err
    _one_line_error(cli("export", str(saxpy_wire)), 2, "Missing option '--out'")
    _one_line_error(cli("export", "missing.json", "--out", "x"), 2, "no such file")


# ---------------------------------------------------------------------------------------------- conform
def test_conform_writes_the_certificate_under_the_user_cache(cli, tmp_path):
    r = cli("conform", "--ops", "zip.add", "--quick", "--backend", "reference")
    assert r.returncode == 0, r.out + r.err
    want = tmp_path / "xdg-cache" / "vyre" / "conformance.json"
    assert r.out.strip().splitlines()[-1] == f"certificate: {want}"
    cert = json.loads(want.read_text())
    assert cert["summary"]["passed"] and [e["id"] for e in cert["ops"]] == ["zip.add"]
    assert "[1/1] zip.add: reference PASS" in r.out and "\r" not in r.out  # no bar when not on a terminal
    assert not list(cli.work.iterdir())  # nothing in the current directory
    r = cli("conform", "--ops", "zip.add", "--quick", "--backend", "reference", "--out", "here/cert.json")
    assert r.returncode == 0 and (cli.work / "here" / "cert.json").is_file()
    r = cli("--ops", "zip.add", "--quick", "--backend", "reference", exe=[sys.executable, "-m", "vyre.conform"])
    assert r.returncode == 0 and f"certificate: {want}" in r.out and not (cli.work / "conformance.json").exists()
    _one_line_error(cli("conform", "--backend", "cuda"), 2, "'cuda' is not one of")


def test_conform_progress_bar_on_a_terminal(cli):
    pty = pytest.importorskip("pty")
    import fcntl
    import struct
    import termios

    primary, secondary = pty.openpty()
    fcntl.ioctl(secondary, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 100, 0, 0))  # a 100-column terminal
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.update(XDG_CACHE_HOME=str(cli.work.parent / "xdg-cache"), COLUMNS="100")
    proc = subprocess.Popen([VYRE, "conform", "--ops", "zip.add", "--quick", "--backend", "reference"],
                            stdout=secondary, stderr=secondary, cwd=cli.work, env=env)
    os.close(secondary)
    chunks = []
    while True:
        try:
            data = os.read(primary, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    os.close(primary)
    assert proc.wait(120) == 0
    out = b"".join(chunks).decode(errors="replace")
    assert "\r" in out.replace("\r\n", "") and "/1 [" in out and "op/s]" in out, out  # tqdm, redrawn in place
    assert "[1/1] zip.add" not in out  # the per-op log lines are for pipes and files


# ---------------------------------------------------------------------------------------------- bench
def test_bench_from_any_directory(cli):
    r = cli("bench", "--help")
    assert r.returncode == 0 and r.out.startswith("usage: vyre bench") and "--quick" in r.out, r.err
    r = cli("bench", "--only", "nonsense")
    assert r.returncode != 0 and "unknown benchmark" in r.err and "Traceback" not in r.err
    r = cli("bench", "--frobnicate")
    assert r.returncode == 2 and "unrecognized arguments: --frobnicate" in r.err
    # python -m benches still works from the repository root
    r = subprocess.run([sys.executable, "-m", "benches", "--help"], cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0 and "python -m benches" in r.stdout


# ---------------------------------------------------------------------------------------------- cache
def _fill_cache(root: Path, n: int) -> None:
    from vyre.backends.wgpu.disk_cache import DiskCache
    from vyre.backends.wgpu.keys import lowering_contract
    from vyre.backends.wgpu.transfer import Stats
    from vyre.lower import lower

    cache = DiskCache(root, lowering_contract(None), Stats())
    old = DiskCache(root, "lowering=old;vyre=0.0.1", Stats())
    for k in range(n):
        b = vyre.ProgramBuilder(f"cached_{k}", 64)
        x = b.buffer("x", "u32", access="read_write")
        x[b.global_index()] = x[b.global_index()] + k
        p = b.build()
        target = cache if k % 2 else old
        target.store(p.fingerprint, "s", lower(p))
        os.utime(target.path(p.fingerprint, "s"), (1e9 + k, 1e9 + k))  # long ago, one second apart


def test_cache_info_prune_clear(cli, tmp_path):
    root = tmp_path / "vyre-cache"
    _fill_cache(root, 6)
    r = cli("cache", "info")
    assert r.returncode == 0 and f"cache: {root}" in r.out and "6 entries" in r.out, r.out + r.err
    assert "(this vyre)" in r.out and "stale" in r.out
    doc = json.loads(cli("cache", "info", "--json").out)
    assert doc["entries"] == 6 and doc["bytes"] > 0 and sum(d["current"] for d in doc["dirs"]) == 1
    assert doc["max_bytes"] == 256 * 2**20
    size = doc["bytes"] // 6
    r = cli("cache", "prune", "--max-age", "0", "--max-size", str(2 * size + size // 2))
    assert r.returncode == 0 and r.out.startswith("removed 4 entries"), r.out + r.err
    assert json.loads(cli("cache", "info", "--json").out)["entries"] == 2
    r = cli("cache", "prune")  # default: older than 30 days, and the cap
    assert r.returncode == 0 and r.out.startswith("removed 2 entries"), r.out
    _fill_cache(root, 3)
    r = cli("cache", "clear")
    assert r.returncode == 0 and r.out.startswith("removed 3 entries")
    assert json.loads(cli("cache", "info", "--json").out)["entries"] == 0
    _one_line_error(cli("cache", "prune", "--max-size", "lots"), 2, "vyre cache prune: error:", "'lots'")
    _one_line_error(cli("cache", "prune", "--max-age", "soon"), 2, "'soon'")
    _one_line_error(cli("cache", "info", env={"VYRE_CACHE_DIR": "off"}), 2, "the disk cache is off")
    _one_line_error(cli("cache", "frob"), 2, "No such command 'frob'")


# ---------------------------------------------------------------------------------------------- demo
def test_demo(cli, gpu):
    r = cli("demo", "-n", "1000")
    assert r.returncode == 0, r.out[-2000:] + r.err[-2000:]
    assert "fn main(" in r.out and r.out.strip().splitlines()[-1] == "OK"
    _one_line_error(cli("demo", "-n", "0"), 2, "-n")
