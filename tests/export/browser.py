"""Run exported modules in headless Chromium (WebGPU on SwiftShader's Vulkan, on the CPU).

:func:`run_jobs` serves a folder from 127.0.0.1 (http.server in a thread), starts one
``chromium --headless=new --no-sandbox --enable-unsafe-webgpu`` on ``browser_page.html``, and the page
imports each job's module, runs it on the job's inputs and POSTs the outputs back (``--dump-dom``
returns before GPU work ends, so results travel by POST only). One browser process, one page and one
GPU device for every job.

:func:`require` skips the calling test when Chromium is missing (``make test`` installs it with
apt-get), except under ``CI=true``, where it fails it.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import tempfile
import threading
import time
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from gpu_policy import IN_CI

HERE = Path(__file__).resolve().parent
PAGE = HERE / "browser_page.html"
DRIVER = HERE / "browser_page.mjs"
INSTALL_HINT = "make test installs it (apt-get install chromium)"
FLAGS = ["--headless=new", "--no-sandbox", "--enable-unsafe-webgpu", "--no-first-run", "--no-default-browser-check",
         "--disable-extensions", "--disable-background-networking", "--disable-dev-shm-usage", "--mute-audio"]

#: the TypedArray a result comes back as -> numpy dtype (bool outputs come back as 0/1 bytes)
ARRAYS = {"Float32Array": np.float32, "Uint32Array": np.uint32, "Int32Array": np.int32, "Uint8Array": np.uint8,
          "Uint16Array": np.uint16}


def chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


def require() -> str:
    """The Chromium executable; skips the calling test without one (fails it under CI=true)."""
    exe = chromium()
    if exe is not None:
        return exe
    reason = f"Chromium is not installed: {INSTALL_HINT}"
    if IN_CI:
        pytest.fail(f"CI=true: the browser check cannot be skipped: {reason}", pytrace=False)
    pytest.skip(reason)


def decode(out: dict[str, Any]) -> np.ndarray:
    """One posted output ({array, base64}) as a numpy array."""
    return np.frombuffer(base64.b64decode(out["base64"]), dtype=ARRAYS[out["array"]]).copy()


class _Collector:
    def __init__(self) -> None:
        self.results: dict[str, dict] = {}
        self.summary: dict | None = None
        self.started: str | None = None  # the job the page is running (the one that hangs, on a timeout)
        self.done = threading.Event()
        self.lock = threading.Lock()


def _handler(root: Path, sink: _Collector) -> type[SimpleHTTPRequestHandler]:
    class Handler(SimpleHTTPRequestHandler):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, directory=str(root), **kwargs)

        def do_POST(self) -> None:  # noqa: N802 - http.server's naming
            body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            doc = json.loads(body or b"{}")
            with sink.lock:
                if self.path == "/start":
                    sink.started = doc["id"]
                elif self.path == "/result":
                    sink.results[doc["id"]] = doc
                elif self.path == "/done":
                    sink.summary = doc
                    sink.done.set()
            self.send_response(204)
            self.end_headers()

        def end_headers(self) -> None:
            self.send_header("Cache-Control", "no-store")
            super().end_headers()

        def log_message(self, *args: Any) -> None:  # quiet: the test reports what matters
            pass

    Handler.extensions_map = {**SimpleHTTPRequestHandler.extensions_map, ".mjs": "text/javascript",
                              ".js": "text/javascript"}
    return Handler


def run_jobs(root: Path, jobs: list[dict], timeout: float = 540.0) -> tuple[dict[str, dict], dict]:
    """Run ``jobs`` (module paths relative to ``root``) in one headless Chromium; returns (results by
    id, summary). Each result: ``{id, outputs: {name: {array, base64}}, ms}`` or ``{id, error}``."""
    exe = require()
    shutil.copy(PAGE, root / PAGE.name)
    shutil.copy(DRIVER, root / DRIVER.name)
    (root / "jobs.json").write_text(json.dumps({"jobs": jobs}), encoding="utf-8")
    sink = _Collector()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(root, sink))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    profile = tempfile.mkdtemp(prefix="vyre-chromium-")
    log = root / "chromium.log"
    env = {**os.environ, "XDG_RUNTIME_DIR": os.environ.get("XDG_RUNTIME_DIR") or "/tmp"}
    t0 = time.monotonic()
    with open(log, "wb") as err:
        proc = subprocess.Popen([exe, *FLAGS, f"--user-data-dir={profile}",
                                 f"http://127.0.0.1:{server.server_port}/{PAGE.name}"],
                                stdout=subprocess.DEVNULL, stderr=err, env=env)
        try:
            finished = sink.done.wait(timeout)
        finally:
            proc.terminate()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            server.shutdown()
            server.server_close()
            shutil.rmtree(profile, ignore_errors=True)
    wall = time.monotonic() - t0
    with sink.lock:
        results, summary = dict(sink.results), dict(sink.summary or {})
    (root / "results.json").write_text(json.dumps({"results": results, "summary": summary}), encoding="utf-8")
    if not finished:
        tail = log.read_text(encoding="utf-8", errors="replace")[-3000:]
        raise AssertionError(f"the browser page did not finish within {timeout:.0f} s ({len(results)} of "
                             f"{len(jobs)} jobs reported, job {sink.started} running); chromium's log ends:\n{tail}")
    summary["wall_s"] = wall
    return results, summary


__all__ = ["chromium", "require", "run_jobs", "decode", "ARRAYS"]
