"""The on-disk store of tuned kernel settings (:mod:`vyre.ops.tuning`), one JSON file per user.

Where: ``VYRE_TUNING_FILE`` if set (``off`` disables tuning lookups and writes), else
``tuning.json`` in the user cache root shared with the lowering cache (:mod:`vyre.backends.user_cache`:
``VYRE_CACHE_DIR`` or ``platformdirs.user_cache_dir("vyre")``; no store when that cache is ``off``).

Layout: ``{"format": "vyre-tuning", "version": 1, "adapters": {<adapter key>: {"adapter": {...},
"entries": {"<op>|<shape class>|t<tuner version>": entry}}}}``. The adapter key is a digest of the
adapter's identity (vendor, device, ids, backend type, adapter type, driver) and the wgpu version, so a
driver or wgpu upgrade starts afresh; the tuner version in the entry key retires entries when the
candidates or the measuring change. An entry is ``{"op", "class", "tuner", "setting": {"variant",
"params"}, "time_s", "method", "shape", "candidates": [...], "when"}``.

Writes merge into the file as it is on disk (other processes may have written), under a
``filelock.FileLock`` on ``<file>.lock`` (:func:`vyre.backends.user_cache.file_lock`), through a temp file
and ``os.replace``. A file that is not JSON, has another format or version, or holds malformed parts is
ignored with a warning on the ``vyre.tuning`` logger (and replaced at the next write), never an error.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..backends.user_cache import LOCK_TIMEOUT_S, default_root, env_path, file_lock, identity_fields

if TYPE_CHECKING:  # annotations only: the store (and `vyre tune --show`) needs no backend module
    from ..backends.base import Backend

ENV_VAR = "VYRE_TUNING_FILE"
FILE_NAME = "tuning.json"
FORMAT = "vyre-tuning"
VERSION = 1
RECHECK_S = 1.0  # how often a process looks whether the file changed

log = logging.getLogger("vyre.tuning")


def default_path() -> Path | None:
    """The store's path: ``VYRE_TUNING_FILE`` (None when ``off``), else ``tuning.json`` in the disk cache root."""
    def in_root() -> Path | None:
        root = default_root()
        return None if root is None else root / FILE_NAME

    return env_path(ENV_VAR, in_root)


# ---- adapter identity --------------------------------------------------------------------
def adapter_from_info(info: dict | None, backend_name: str = "wgpu") -> dict:
    """The identity fields of an ``adapter_info`` dict plus the wgpu version (``{"backend": name}`` without one)."""
    if not info:
        return {"backend": backend_name}
    wgpu = sys.modules.get("wgpu")  # its version, where loaded (never imported here)
    return {**identity_fields(info), "wgpu": str(getattr(wgpu, "__version__", "?"))}


def adapter_of(backend: Backend) -> dict:
    """The identity of ``backend``'s adapter (a wgpu backend's ``adapter_info``; the backend's name otherwise)."""
    info = getattr(backend, "adapter_info", None)
    if callable(info):
        info = info()
    name = str(getattr(backend.capabilities(), "backend", type(backend).__name__))
    return adapter_from_info(dict(info) if isinstance(info, dict) else None, name)


def adapter_key(adapter: dict) -> str:
    """A short digest of an adapter identity (the store's per-adapter key)."""
    blob = json.dumps(adapter, sort_keys=True, default=str).encode()
    return hashlib.sha256(blob).hexdigest()[:16]


def describe_adapter(adapter: dict) -> str:
    if "device" not in adapter:
        return str(adapter.get("backend", "?"))
    return (f"{adapter.get('device')} ({adapter.get('vendor')}, {adapter.get('backend_type')}, "
            f"driver {adapter.get('driver')!r}, wgpu {adapter.get('wgpu')})")


def entry_key(op_id: str, shape_class: str, tuner: int) -> str:
    return f"{op_id}|{shape_class}|t{tuner}"


# ---- the file --------------------------------------------------------------------------------
def _empty() -> dict:
    return {"format": FORMAT, "version": VERSION, "adapters": {}}


def _well_formed(doc: Any) -> str | None:
    """Why ``doc`` is not a store document (None when it is)."""
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        return "not a vyre tuning file"
    if doc.get("version") != VERSION:
        return f"format version {doc.get('version')!r}, this vyre reads {VERSION}"
    adapters = doc.get("adapters")
    if not isinstance(adapters, dict):
        return "'adapters' is not an object"
    for key, a in adapters.items():
        if not isinstance(a, dict) or not isinstance(a.get("entries"), dict) or not isinstance(a.get("adapter"), dict):
            return f"adapter {key!r} is malformed"
        for name, e in a["entries"].items():
            if not valid_entry(e):
                return f"entry {name!r} of adapter {key!r} is malformed"
    return None


def valid_entry(e: Any) -> bool:
    s = e.get("setting") if isinstance(e, dict) else None
    return (isinstance(s, dict) and isinstance(s.get("variant"), str) and isinstance(s.get("params"), dict)
            and all(isinstance(k, str) and type(v) is int for k, v in s["params"].items()))


class TuningStore:
    """The store at ``path`` (None: no store; lookups miss and writes are refused)."""

    def __init__(self, path: Path | str | None) -> None:
        self.path = Path(path) if path is not None else None
        self._lock = threading.Lock()
        self._seen: tuple[int, int] | None = None  # (mtime_ns, size) of the file last read
        self._seen_at: float | None = None  # when the file was last looked at (time.monotonic)
        self._doc: dict = _empty()
        self._warned: set[tuple] = set()

    def _read(self) -> dict:
        """The document on disk, or an empty one (missing, unreadable or malformed: warned once per version)."""
        assert self.path is not None
        try:
            raw = self.path.read_bytes()
        except FileNotFoundError:
            return _empty()
        except OSError as exc:
            self._warn(("io", str(exc)), "cannot read the tuning file %s: %s; running untuned", exc)
            return _empty()
        why: str | None
        doc: Any
        try:
            doc = json.loads(raw)
        except ValueError as exc:
            doc, why = None, f"not JSON ({exc})"
        else:
            why = _well_formed(doc)
        if why is not None:
            self._warn(("bad", len(raw), hash(raw)), "ignoring the tuning file %s: %s", why)
            return _empty()
        out: dict = doc  # _well_formed checked it is an object
        return out

    def _warn(self, key: tuple, msg: str, arg: Any) -> None:
        if key not in self._warned:
            self._warned.add(key)
            log.warning(msg, self.path, arg)

    def document(self) -> dict:
        """The current document (re-read when the file changed since the last look; the file is looked at
        at most every :data:`RECHECK_S` seconds, so calls stay cheap and other processes' writes show soon)."""
        if self.path is None:
            return _empty()
        now = time.monotonic()
        if self._seen_at is not None and now - self._seen_at < RECHECK_S:
            return self._doc
        try:
            st = self.path.stat()
            seen: tuple[int, int] | None = (st.st_mtime_ns, st.st_size)
        except OSError:
            seen = None
        with self._lock:
            if seen != self._seen or seen is None:
                self._doc = self._read() if seen is not None else _empty()
                self._seen = seen
            self._seen_at = now
            return self._doc

    def entries(self, akey: str) -> dict[str, dict]:
        return dict(self.document()["adapters"].get(akey, {}).get("entries", {}))

    def get(self, akey: str, op_id: str, shape_class: str, tuner: int) -> dict | None:
        a = self.document()["adapters"].get(akey)
        return None if a is None else a["entries"].get(entry_key(op_id, shape_class, tuner))

    def put(self, adapter: dict, op_id: str, shape_class: str, tuner: int, entry: dict) -> None:
        """Store ``entry`` for (adapter, op, class), merged into the file under its lock."""
        if not valid_entry(entry):
            raise ValueError(f"malformed tuning entry {entry!r}")

        def change(doc: dict) -> None:
            slot = doc["adapters"].setdefault(adapter_key(adapter), {"adapter": adapter, "entries": {}})
            slot["adapter"] = adapter
            slot["entries"][entry_key(op_id, shape_class, tuner)] = entry

        self._update(change)

    def clear(self) -> int:
        """Remove every entry of every adapter; returns how many there were."""
        removed = [0]

        def change(doc: dict) -> None:
            removed[0] = sum(len(a["entries"]) for a in doc["adapters"].values())
            doc["adapters"] = {}

        if self.path is not None and self.path.exists():
            self._update(change)
        return removed[0]

    def _update(self, change: Callable[[dict], None]) -> None:
        if self.path is None:
            raise OSError(f"the tuning store is off ({ENV_VAR}=off or the disk cache is off)")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with file_lock(str(self.path) + ".lock", timeout=LOCK_TIMEOUT_S):
            with self._lock:
                doc = self._read()  # what is on disk now: other processes may have written
                change(doc)
                fd, tmp = tempfile.mkstemp(prefix=".tuning-", suffix=".tmp", dir=self.path.parent)
                try:
                    with os.fdopen(fd, "w", encoding="utf-8") as f:
                        json.dump(doc, f, indent=1, sort_keys=True)
                        f.flush()
                        os.fsync(f.fileno())
                    os.replace(tmp, self.path)
                except BaseException:
                    Path(tmp).unlink(missing_ok=True)
                    raise
                self._seen = self._seen_at = None  # re-read at the next look


_STORES: dict[Path | None, TuningStore] = {}
_BY_ENV: dict[tuple, TuningStore] = {}
_STORES_LOCK = threading.Lock()
_ENV_KEYS = (ENV_VAR, "VYRE_CACHE_DIR")  # what a process may change while running (tests do)


def current() -> TuningStore:
    """The store at :func:`default_path` (one object per path, so its parsed file is shared; the path is
    resolved once per value of the environment variables it depends on: calls stay cheap)."""
    env = tuple(os.environ.get(k) for k in _ENV_KEYS)
    store = _BY_ENV.get(env)
    if store is not None:
        return store
    path = default_path()
    with _STORES_LOCK:
        store = _STORES.get(path)
        if store is None:
            store = _STORES[path] = TuningStore(path)
        _BY_ENV[env] = store
        return store


def now_iso() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


__all__ = ["ENV_VAR", "TuningStore", "current", "default_path", "adapter_of", "adapter_from_info", "adapter_key",
           "describe_adapter", "entry_key", "valid_entry", "now_iso"]
