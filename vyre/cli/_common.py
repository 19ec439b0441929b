"""What the subcommands share: :class:`CliError` (a one-line message and an exit status) and
:func:`load_program`, which turns a PROGRAM argument into a :class:`vyre.ir.program.Program`.

PROGRAM is one of:

* ``prog.json`` — a wire document (``Program.to_wire()``); ``-`` reads one from standard input;
* ``script.py`` or ``script.py:NAME`` — a Python file, run as a module (not as ``__main__``);
* ``package.module`` or ``package.module:NAME`` — an importable module.

``NAME`` is an attribute (dotted names walk into objects) holding a Program, an object with a
``program`` attribute holding one (such as a kernel object), or a function taking no required
arguments that returns either (a builder function). Without ``NAME``, the file or module must hold
exactly one such Program or object at its top level.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import re
import sys
import traceback
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from ..errors import VyreError

if TYPE_CHECKING:
    from ..ir.program import Program

USAGE = 2  # bad arguments: a missing file, a malformed wire document, an unknown name
RUNTIME = 1  # the work itself failed: no adapter, a dispatch error, a failing check

PROGRAM_HELP = ("PROGRAM is a wire JSON file (or - for standard input), a Python file 'script.py[:NAME]' or a "
                "module 'package.module[:NAME]'; NAME is a Program, an object with a .program, or a function "
                "without required arguments that builds one (default: the only Program at the top level)")

_RUNNING = {"path": "vyre"}  # the command running, for error messages raised after click let go of it


def track(ctx: click.Context) -> None:
    """Remember the command path (``vyre cache prune``) for the error line."""
    _RUNNING["path"] = f"{ctx.command_path} {ctx.invoked_subcommand}" if ctx.invoked_subcommand else ctx.command_path


_SPEC = re.compile(r"(?P<target>.+?):(?P<attr>[A-Za-z_][\w]*(?:\.[A-Za-z_]\w*)*)")
_MODULE = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*")


class CliError(Exception):
    """A failure reported as ``vyre <command>: error: <message>`` with exit status ``status``."""

    def __init__(self, message: str, status: int = RUNTIME) -> None:
        super().__init__(message)
        self.status = status


def one_line(text: str) -> str:
    """A message on one line: its non-empty lines joined with '; ' (a space after one ending in ':')."""
    out = ""
    for line in (ln.strip() for ln in str(text).splitlines()):
        if line:
            out += (" " if out.endswith(":") else "; " if out else "") + line
    return out


def describe_exception(exc: BaseException, where: str | None = None) -> str:
    """``Type: message`` on one line, with the innermost frame in ``where`` (a file) when there is one."""
    text = f"{type(exc).__name__}: {one_line(str(exc))}" if str(exc) else type(exc).__name__
    code = getattr(exc, "code", None)
    if isinstance(code, str) and code.startswith("VYRE-"):
        text = f"{code} {text}"
    if where is not None:
        target = Path(where).resolve()
        frames = [f for f in traceback.extract_tb(exc.__traceback__) if Path(f.filename).resolve() == target]
        if frames:
            text += f" (at {where}:{frames[-1].lineno})"
    return text


def _from_wire(data: bytes, label: str) -> Program:
    from ..ir.program import Program  # why: import time (pydantic and the IR load only for a wire document)

    try:
        return Program.from_wire(data)
    except VyreError as exc:
        raise CliError(f"{label} is not a valid vyre wire document: {one_line(str(exc))}", USAGE) from None
    except Exception as exc:  # bytes that are not JSON/UTF-8 at all
        raise CliError(f"{label} is not a valid vyre wire document: {describe_exception(exc)}", USAGE) from None


def _run_file(path: Path) -> Any:
    name = "_vyre_cli_" + re.sub(r"\W", "_", path.stem)
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise CliError(f"cannot load {path} as a Python file", USAGE)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    sys.path.insert(0, str(path.resolve().parent))  # the script's own imports, as when it runs directly
    try:
        spec.loader.exec_module(module)
    except SystemExit as exc:
        raise CliError(f"{path} called sys.exit({exc.code!r}) while being loaded", RUNTIME) from None
    except Exception as exc:
        raise CliError(f"{path} raised while being loaded: {describe_exception(exc, str(path))}", RUNTIME) from None
    return module


def _import(name: str) -> Any:
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name and (name == exc.name or name.startswith(exc.name + ".")):
            raise CliError(f"no such file or module: {name}", USAGE) from None
        raise CliError(f"module {name} failed to import: {describe_exception(exc)}", RUNTIME) from None
    except Exception as exc:
        raise CliError(f"module {name} failed to import: {describe_exception(exc)}", RUNTIME) from None


def _is_program(obj: Any) -> bool:
    from ..ir.program import Program  # why: import time (pydantic and the IR load only to find a program)

    return isinstance(obj, Program)


def _holds_program(obj: Any) -> bool:
    try:
        return _is_program(obj) or (not inspect.isclass(obj) and _is_program(getattr(obj, "program", None)))
    except Exception:
        return False


def _to_program(obj: Any, label: str, depth: int = 0) -> Program:
    if _is_program(obj):
        return obj
    if not inspect.isclass(obj) and _is_program(getattr(obj, "program", None)):
        return obj.program
    if callable(obj) and depth == 0:
        try:
            sig = inspect.signature(obj)
        except (TypeError, ValueError):
            sig = None
        if sig is not None:
            required = [p.name for p in sig.parameters.values()
                        if p.default is p.empty and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
            if required:
                raise CliError(f"{label} needs arguments ({', '.join(required)}); name a Program or a function "
                               "without required arguments", USAGE)
        try:
            built = obj()
        except Exception as exc:
            raise CliError(f"{label}() raised: {describe_exception(exc)}", RUNTIME) from None
        return _to_program(built, f"{label}()", depth + 1)
    raise CliError(f"{label} is a {type(obj).__name__}, not a vyre Program (nor builds one)", USAGE)


def load_program(spec: str) -> Program:
    """The Program a PROGRAM argument names (see the module docstring); raises CliError."""
    if spec == "-":
        return _from_wire(sys.stdin.buffer.read(), "standard input")
    m = _SPEC.fullmatch(spec)
    target, attr = (m["target"], m["attr"]) if m and not Path(spec).exists() else (spec, None)
    path = Path(target)
    if path.is_dir():
        raise CliError(f"{target} is a directory, not a wire JSON file, Python file or module", USAGE)
    if path.is_file() and path.suffix != ".py":
        if attr is not None:
            raise CliError(f"{target} is not a Python file: ':{attr}' applies to .py files and modules", USAGE)
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise CliError(f"cannot read {target}: {exc.strerror or exc}", USAGE) from None
        return _from_wire(data, target)
    if path.suffix == ".py" or path.is_file():
        if not path.is_file():
            raise CliError(f"no such file: {target}", USAGE)
        module, label = _run_file(path), str(path)
    elif _MODULE.fullmatch(target) and not path.suffix == ".json":
        module, label = _import(target), target
    else:
        raise CliError(f"no such file: {target}", USAGE)
    if attr is None:
        found = [k for k, v in vars(module).items() if not k.startswith("_") and _holds_program(v)]
        if len(found) != 1:
            what = f"{len(found)} Programs ({', '.join(found)})" if found else "no Program at its top level"
            raise CliError(f"{label} holds {what}: name one as {label}:NAME", USAGE)
        attr = found[0]
    obj: Any = module
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise CliError(f"{label} has no attribute {attr!r}", USAGE)
        obj = getattr(obj, part)
    return _to_program(obj, f"{label}:{attr}")
