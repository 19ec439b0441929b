"""Compile WGSL with Dawn's Tint (a second WGSL compiler besides wgpu's naga).

``check(sources)`` sends every ``(name, wgsl)`` to one ``node tests/tint/check_wgsl.mjs`` process
(the npm package ``webgpu``, Dawn's node binding, on its null backend: no GPU needed) and returns
``{name: [message, ...]}`` for the sources Tint rejects (shader errors with line:col, and
pipeline errors from ``createComputePipeline(layout: "auto")``).

``require()`` skips the calling test when Node.js or the package is missing (``make test``
installs both), except under ``CI=true``, where it fails it.

:data:`KNOWN` lists rejections whose cause is known and whose fix is pending (each names the
offending WGSL and the fix): they are reported apart (``Report.known``) and do not count as
failures, except with ``VYRE_TINT_STRICT=1``. An entry is removed once the lowering is fixed.

Sources using the 64-bit types (f64, i64, u64: wgpu-native's extensions, not standard WebGPU; the
lowering marks them with a ``// not standard WebGPU: ...`` line, ``vyre.lower.wgsl.NONSTANDARD_MARK``)
are not sent to Tint, which has no such types: they are counted in ``Report.nonstandard`` with that reason.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from gpu_policy import IN_CI

TINT_DIR = Path(__file__).resolve().parent / "tint"
SCRIPT = TINT_DIR / "check_wgsl.mjs"
PACKAGE = TINT_DIR / "node_modules" / "webgpu" / "package.json"
INSTALL_HINT = "make test installs them (apt-get install nodejs npm; npm ci --prefix tests/tint)"


STRICT = os.environ.get("VYRE_TINT_STRICT") == "1"


@dataclass(frozen=True)
class Known:
    """A known Tint rejection: Tint's message and a regex the offending WGSL line matches."""

    id: str
    message: str
    line: str
    cause: str


# Empty: the two rejections first found (u32 x / 0u and x % 0u with a constant zero divisor; FLT_MAX
# spelled 3.40282347e38f in the f32 remainder helper) are fixed in the lowering. An entry looks like
# Known("id", "Tint's message", r"regex of the offending WGSL line", "cause and pending fix").
KNOWN: tuple[Known, ...] = ()


def node() -> str | None:
    return shutil.which("node") or shutil.which("nodejs")


def missing() -> str | None:
    """Why Tint cannot run here, or None when it can."""
    if node() is None:
        return f"Node.js is not installed: {INSTALL_HINT}"
    if not PACKAGE.is_file():
        return f"the npm package webgpu is not installed in {TINT_DIR}: {INSTALL_HINT}"
    return None


def require() -> None:
    """Skip the calling test when Tint cannot run; fail it under CI=true."""
    reason = missing()
    if reason is None:
        return
    if IN_CI:
        pytest.fail(f"CI=true: the Tint check cannot be skipped: {reason}", pytrace=False)
    pytest.skip(reason)


@dataclass
class Report:
    checked: int
    failures: dict[str, list[str]] = field(default_factory=dict)  # name -> Tint's errors, with the WGSL line
    known: dict[str, list[str]] = field(default_factory=dict)  # name -> ids of KNOWN rejections (not failures)
    limits: dict[str, list[str]] = field(default_factory=dict)  # name -> null-adapter limits exceeded
    summary: dict = field(default_factory=dict)  # the checker's last line (webgpu version, features)
    nonstandard: dict[str, str] = field(default_factory=dict)  # name -> why it was not checked (64-bit types)

    def describe_nonstandard(self) -> str:
        """The sources left out because they are not standard WebGPU (empty when none)."""
        if not self.nonstandard:
            return ""
        name, why = next(iter(sorted(self.nonstandard.items())))
        return (f"{len(self.nonstandard)} sources not checked: not standard WebGPU (e.g. {name}: {why}); "
                "Tint has no 64-bit types")

    def describe(self, limit: int = 40) -> str:
        """One paragraph per failing source: its name, Tint's messages and the offending lines."""
        out = [f"Tint rejected {len(self.failures)} of {self.checked} WGSL sources "
               f"(webgpu {self.summary.get('webgpu', '?')}):"]
        for name in sorted(self.failures)[:limit]:
            out.append(f"- {name}:")
            out.extend(f"    {m}" for m in self.failures[name])
        if len(self.failures) > limit:
            out.append(f"... and {len(self.failures) - limit} more")
        return "\n".join(out)

    def describe_known(self) -> str:
        """The known rejections met: per KNOWN entry, how many sources, one example and the cause."""
        out = []
        for k in KNOWN:
            names = sorted(n for n, ids in self.known.items() if k.id in ids)
            if names:
                out.append(f"known Tint rejection {k.id} in {len(names)} of {self.checked} sources "
                           f"(e.g. {names[0]}): {k.message}: {k.cause}")
        return "\n".join(out)


def _text(m: dict, wgsl: str) -> str:
    where = f"{m['line']}:{m['col']}: " if m.get("line") else ""
    text = f"{m.get('stage', 'shader')} {m['type']}: {where}{m['message']}"
    lines = wgsl.splitlines()
    if m.get("line") and 0 < m["line"] <= len(lines):
        text += f"\n        | {lines[m['line'] - 1].strip()}"
    return text


def _known(m: dict, wgsl: str) -> str | None:
    """The id of the KNOWN entry that explains this error, or None."""
    lines = wgsl.splitlines()
    line = lines[m["line"] - 1] if m.get("line") and 0 < m["line"] <= len(lines) else ""
    for k in KNOWN:
        if m["message"] == k.message and re.search(k.line, line):
            return k.id
    return None


def check(sources: Iterable[tuple[str, str]], *, pipelines: bool = True, timeout: float | None = None) -> Report:
    """Compile every (name, wgsl) with Tint in one Node.js process. Names must be unique."""
    from vyre.lower.wgsl import NONSTANDARD_MARK

    docs, nonstandard = [], {}
    for name, wgsl in sources:
        second = wgsl.split("\n", 2)[1] if wgsl.count("\n") >= 1 else ""
        if second.startswith(NONSTANDARD_MARK):
            nonstandard[name] = second.removeprefix(NONSTANDARD_MARK)
        else:
            docs.append({"name": name, "wgsl": wgsl})
    if not docs:
        return Report(0, nonstandard=nonstandard)
    if timeout is None:
        timeout = 60 + 0.1 * len(docs)  # about 1 ms a source here: only a hung checker gets near
    names = [d["name"] for d in docs]
    if len(set(names)) != len(names):
        raise ValueError("tint_check.check: source names must be unique")
    exe = node()
    if exe is None:
        raise RuntimeError(missing())
    with tempfile.TemporaryDirectory(prefix="vyre-tint-") as tmp:
        path = Path(tmp) / "sources.json"
        path.write_text(json.dumps(docs), encoding="utf-8")
        result = Path(tmp) / "results.jsonl"  # stdout also gets Dawn's warnings
        cmd = [exe, str(SCRIPT), str(path), f"--out={result}"] + ([] if pipelines else ["--no-pipeline"])
        for attempt in (1, 2):  # dawn.node crashed now and then before check_wgsl.mjs renewed its device
            try:
                r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=TINT_DIR,
                                   env={**os.environ, "NODE_NO_WARNINGS": "1"})
            except subprocess.TimeoutExpired:
                kept = Path(tempfile.mkdtemp(prefix="vyre-tint-timeout-")) / "sources.json"
                shutil.copy(path, kept)
                done = result.read_text(encoding="utf-8").count("\n") if result.exists() else 0
                raise RuntimeError(f"the Tint checker did not finish in {timeout:g} s ({done} of {len(docs)} "
                                   f"sources done; the sources are kept in {kept})") from None
            if r.returncode in (0, 1) or attempt == 2:
                break
        output = result.read_text(encoding="utf-8") if result.exists() else ""
    results, summary = {}, {}
    for line in output.splitlines():
        doc = json.loads(line)
        if "summary" in doc:
            summary = doc["summary"]
        else:
            results[doc["name"]] = doc
    if r.returncode not in (0, 1) or not summary or len(results) != len(docs):
        raise RuntimeError(f"the Tint checker failed (exit {r.returncode}, {len(results)} of {len(docs)} "
                           f"results):\n{r.stderr[-4000:]}{r.stdout[-2000:]}")
    wgsl_of = {d["name"]: d["wgsl"] for d in docs}
    report = Report(len(docs), summary=summary, nonstandard=nonstandard)
    for name, doc in results.items():
        errors = [m for m in doc["messages"] if m["type"] == "error"]
        known = [None if STRICT else _known(m, wgsl_of[name]) for m in errors]
        if errors and all(known):
            report.known[name] = sorted({k for k in known if k})
        elif errors:
            report.failures[name] = [_text(m, wgsl_of[name]) for m in errors]
        limits = [m["message"] for m in doc["messages"] if m["type"] == "limit"]
        if limits:
            report.limits[name] = limits
    return report


__all__ = ["TINT_DIR", "SCRIPT", "KNOWN", "Known", "missing", "require", "check", "Report"]
