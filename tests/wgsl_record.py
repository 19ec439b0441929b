"""pytest plugin: every WGSL the lowering renders during the test session, compiled by Tint at the end.

Registered by tests/conftest.py. It wraps ``vyre.lower.wgsl.render`` (the one function that
turns a program into WGSL; ``vyre.lower.lower`` calls it) for the session, when that module is
first imported (or at once when it already is): each distinct WGSL
is written once, named by its sha256, into a directory of the controller (pytest-xdist
workers get it through ``workerinput``). At the end of the session the controller compiles
them all with Tint in one Node.js process (tests/tint_check.py) and fails the session (exit
status 1, a "vyre: Tint" section in the terminal summary) when Tint rejects any. The wrapper
returns the lowering's result unchanged: no test sees a difference.

Switches: ``VYRE_TINT_SESSION=0`` turns the plugin off. Without Node.js or the webgpu package
the check is skipped with a note, except under ``CI=true``, where the session fails.
Rejections listed in ``tint_check.KNOWN`` are reported but do not fail (``VYRE_TINT_STRICT=1``:
they do). WGSL lowered in child processes that tests start is not seen.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.abc
import importlib.machinery
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import pytest

ENABLED = os.environ.get("VYRE_TINT_SESSION", "1") != "0"
KEY = "vyre_wgsl_record_dir"
TARGET = "vyre.lower.wgsl"
SECTION = "vyre: Tint (every WGSL lowered in this session)"


class _Recorder:
    def __init__(self, directory: Path):
        self.dir = directory
        self.seen: set[str] = set()

    def record(self, wgsl: str) -> None:
        digest = hashlib.sha256(wgsl.encode("utf-8")).hexdigest()
        if digest in self.seen:
            return
        self.seen.add(digest)
        path = self.dir / f"{digest}.wgsl"
        if path.exists():
            return
        tmp = self.dir / f".{digest}.{os.getpid()}.tmp"
        tmp.write_text(wgsl, encoding="utf-8")
        os.replace(tmp, path)


def _wrap(recorder: _Recorder, original):
    @functools.wraps(original)
    def render(program, *args, **kwargs):
        out = original(program, *args, **kwargs)
        try:
            recorder.record(out.wgsl)
        except OSError:  # recording must never change a test's outcome
            pass
        return out

    render._vyre_recording = True  # type: ignore[attr-defined]
    return render


def _patch(recorder: _Recorder, wgsl_mod) -> None:
    """Wrap ``render`` in vyre.lower.wgsl and, when loaded, in vyre.lower (lower() looks it up there)."""
    if not getattr(wgsl_mod.render, "_vyre_recording", False):
        wgsl_mod.render = _wrap(recorder, wgsl_mod.render)
    lower_pkg = sys.modules.get("vyre.lower")
    if lower_pkg is not None and getattr(lower_pkg, "render", None) is not wgsl_mod.render:
        lower_pkg.render = wgsl_mod.render


class _Finder(importlib.abc.MetaPathFinder):
    """Patches vyre.lower.wgsl right after it is first imported, so that the session imports
    vyre's modules when and in the order it would without the plugin (``vyre.lower`` is also a
    lazy attribute of the package: importing the module early would change what it names)."""

    def __init__(self, recorder: _Recorder):
        self.recorder = recorder

    def find_spec(self, name, path, target=None):
        if name != TARGET:
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path, target)
        if spec is None or spec.loader is None:
            return spec
        loader, recorder = spec.loader, self.recorder
        exec_module = loader.exec_module

        def exec_and_patch(module):
            exec_module(module)
            _patch(recorder, module)

        loader.exec_module = exec_and_patch  # type: ignore[method-assign]
        return spec


def _install(recorder: _Recorder):
    """Record every WGSL rendered in this process; returns a function that undoes it."""
    finder = _Finder(recorder)
    if TARGET in sys.modules:
        _patch(recorder, sys.modules[TARGET])
    else:
        sys.meta_path.insert(0, finder)

    def undo() -> None:
        if finder in sys.meta_path:
            sys.meta_path.remove(finder)
        for name in (TARGET, "vyre.lower"):
            mod = sys.modules.get(name)
            render = getattr(mod, "render", None)
            if getattr(render, "_vyre_recording", False):
                mod.render = render.__wrapped__  # type: ignore[union-attr]

    return undo


def pytest_configure(config):
    if not ENABLED:
        return
    workerinput = getattr(config, "workerinput", None)
    if workerinput is not None:
        directory = workerinput.get(KEY)
        if not directory:
            return
        config._vyre_wgsl = {"dir": Path(directory), "controller": False}
    else:
        config._vyre_wgsl = {"dir": Path(tempfile.mkdtemp(prefix="vyre-wgsl-")), "controller": True}
    config._vyre_wgsl["undo"] = _install(_Recorder(config._vyre_wgsl["dir"]))


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node):
    """pytest-xdist: hand the controller's directory to each worker."""
    state = getattr(node.config, "_vyre_wgsl", None)
    if state is not None:
        node.workerinput[KEY] = str(state["dir"])


def pytest_unconfigure(config):
    state = getattr(config, "_vyre_wgsl", None)
    if state is None:
        return
    state["undo"]()
    if state["controller"] and not state.get("keep"):
        shutil.rmtree(state["dir"], ignore_errors=True)


def _program_name(wgsl: str) -> str:
    first = wgsl.split("\n", 1)[0]
    return first.rsplit(" from program ", 1)[-1] if " from program " in first else "?"


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session, exitstatus):
    config = session.config
    state = getattr(config, "_vyre_wgsl", None)
    if state is None or not state["controller"]:
        return
    if exitstatus not in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED) or config.option.collectonly:
        return
    paths = sorted(state["dir"].glob("*.wgsl"))
    if not paths:
        return
    import tint_check

    lines: list[str] = []
    state["lines"] = lines
    reason = tint_check.missing()
    if reason is not None:
        if tint_check.IN_CI:
            lines.append(f"CI=true: the Tint check of {len(paths)} WGSL sources cannot be skipped: {reason}")
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
        else:
            lines.append(f"skipped ({len(paths)} WGSL sources recorded): {reason}")
        return
    t0 = time.perf_counter()
    sources = [(f"{_program_name(p.read_text(encoding='utf-8'))} {p.stem[:12]}", p.read_text(encoding="utf-8"))
               for p in paths]
    try:
        report = tint_check.check(sources)
    except Exception as exc:  # the checker could not run: a failure, not a silent pass
        lines.append(f"the Tint check failed to run: {exc}")
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
        return
    took = time.perf_counter() - t0
    ok = report.checked - len(report.failures) - len(report.known)
    lines.append(f"Tint (webgpu {report.summary.get('webgpu', '?')}, node {report.summary.get('node', '?')}) "
                 f"compiled {ok} of {report.checked} distinct WGSL sources lowered in this session "
                 f"in {took:.1f} s")
    if report.limits:
        lines.append(f"{len(report.limits)} sources exceed a limit of Tint's null adapter (not a WGSL error), "
                     f"e.g. {next(iter(report.limits.values()))[0].splitlines()[0]}")
    if report.known:
        lines.append(report.describe_known())
    if report.nonstandard:
        lines.append(report.describe_nonstandard())
    if report.failures:
        state["keep"] = True
        lines.append(report.describe())
        lines.append(f"the sources are kept in {state['dir']}")
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    state = getattr(config, "_vyre_wgsl", None)
    lines = state.get("lines") if state else None
    if lines:
        terminalreporter.section(SECTION)
        for line in lines:
            terminalreporter.write_line(line)
