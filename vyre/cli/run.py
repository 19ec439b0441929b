"""``vyre run PROGRAM --input NAME=PATH.npy ...``: one dispatch on .npy inputs, .npy outputs."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from ..errors import DispatchError, InvalidArgumentError
from ._common import PROGRAM_HELP, USAGE, CliError, describe_exception, load_program

if TYPE_CHECKING:
    from ..backends.base import Backend


def _pairs(values: tuple[str, ...], option: str) -> list[tuple[str, str]]:
    out = []
    for v in values:
        name, sep, rest = v.partition("=")
        if not sep or not name or not rest:
            raise CliError(f"{option} {v!r}: expected NAME=VALUE", USAGE)
        out.append((name.strip(), rest))
    return out


def _number(text: str) -> int | float | None:
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return None


def _load_input(name: str, text: str) -> Any:
    import numpy as np  # why: import time (numpy loads for `vyre run` only, not for every command)

    path = Path(text)
    if path.is_file():
        try:
            return np.load(path, allow_pickle=False)
        except Exception as exc:
            raise CliError(f"--input {name}: cannot read {text} as a .npy array ({type(exc).__name__}: {exc})",
                           USAGE) from None
    value = _number(text)
    if value is None:
        raise CliError(f"--input {name}: no such file: {text}", USAGE)
    return value


def _output_path(name: str, text: str) -> Path:
    """Where ``--output NAME=TEXT`` writes: exactly TEXT, with ``.npy`` added only when TEXT has no suffix
    (``result`` -> ``result.npy``, ``y.out`` stays ``y.out``); a directory (existing, or written with a
    trailing slash) is a bad argument."""
    if text.endswith(("/", "\\")) or Path(text).is_dir():
        raise CliError(f"--output {name}={text}: {text} is a directory; name the file to write, e.g. "
                       f"{name}={Path(text) / (name + '.npy')} (or --out-dir {text})", USAGE)
    path = Path(text)
    return path if path.suffix else path.with_name(path.name + ".npy")


def _grid(text: str | None) -> tuple[int, ...] | None:
    if text is None:
        return None
    try:
        dims = tuple(int(t) for t in text.replace("x", ",").split(","))
    except ValueError:
        raise CliError(f"--grid {text!r}: expected X, X,Y or X,Y,Z (integers)", USAGE) from None
    return dims


@click.command("run", epilog=PROGRAM_HELP)
@click.argument("program", metavar="PROGRAM")
@click.option("-i", "--input", "inputs", multiple=True, metavar="NAME=PATH.npy",
              help="an input buffer's array (.npy); a number for a one-element buffer. Repeat for each input.")
@click.option("-o", "--output", "outputs", multiple=True, metavar="NAME=PATH.npy",
              help="the file to write an output buffer to, exactly (.npy is added only to a PATH without a "
                   "suffix; default: OUT_DIR/NAME.npy)")
@click.option("--out-dir", type=click.Path(file_okay=False, path_type=Path), default=Path("."), show_default=True,
              help="directory for the outputs not named by --output")
@click.option("--backend", type=click.Choice(["wgpu", "reference"]), default="wgpu", show_default=True,
              help="wgpu: the GPU adapter (VYRE_ADAPTER chooses); reference: the numpy interpreter")
@click.option("--grid", metavar="X[,Y[,Z]]", help="number of workgroups (default: from the first output's size)")
@click.option("--count", "counts", multiple=True, metavar="NAME=N",
              help="element count of a runtime-sized write buffer (default: the first input's)")
def run(program: str, inputs: tuple[str, ...], outputs: tuple[str, ...], out_dir: Path, backend: str,
        grid: str | None, counts: tuple[str, ...]) -> None:
    """Dispatch PROGRAM once on .npy inputs and write each output buffer as a .npy file.

    Every input buffer (access read, read_write or uniform) needs an --input; outputs (read_write and
    write buffers) go to OUT_DIR/NAME.npy unless --output names a file (written as given; .npy is added
    to a path without a suffix). Each line printed names the file written.
    """
    import numpy as np  # why: import time (as in _load_input)

    from ..backends.config import DispatchConfig  # why: import time (pydantic)

    prog = load_program(program)
    wanted = [b.name for b in prog.input_buffers]
    given: dict[str, Any] = {}
    for name, text in _pairs(inputs, "--input"):
        if name not in wanted:
            raise CliError(f"--input {name}: {prog.name!r} has no input buffer {name!r} "
                           f"(inputs: {', '.join(wanted) or 'none'})", USAGE)
        if name in given:
            raise CliError(f"--input {name} given twice", USAGE)
        given[name] = _load_input(name, text)
    missing = [n for n in wanted if n not in given]
    if missing:
        raise CliError(f"missing --input for {', '.join(missing)} (inputs of {prog.name!r}: {', '.join(wanted)})",
                       USAGE)
    out_names = [b.name for b in prog.output_buffers]
    paths = {n: out_dir / f"{n}.npy" for n in out_names}
    named: set[str] = set()
    for name, text in _pairs(outputs, "--output"):
        if name not in paths:
            raise CliError(f"--output {name}: {prog.name!r} has no output buffer {name!r} "
                           f"(outputs: {', '.join(out_names) or 'none'})", USAGE)
        if name in named:
            raise CliError(f"--output {name} given twice", USAGE)
        named.add(name)
        paths[name] = _output_path(name, text)
    for name in out_names:
        if paths[name].is_dir():  # OUT_DIR/NAME.npy that is a directory
            raise CliError(f"cannot write output {name} to {paths[name]}: it is a directory", USAGE)
    by_path: dict[Path, str] = {}
    for name in out_names:
        other = by_path.setdefault(paths[name].resolve(), name)
        if other != name:
            raise CliError(f"outputs {other} and {name} would both be written to {paths[name]}", USAGE)
    count_map: dict[str, int] = {}
    for name, text in _pairs(counts, "--count"):
        value = _number(text)
        if not isinstance(value, int):
            raise CliError(f"--count {name}={text}: expected an integer", USAGE)
        count_map[name] = value
    try:
        config = DispatchConfig(grid=_grid(grid), counts=count_map)
    except DispatchError as exc:
        raise CliError(str(exc).splitlines()[0], USAGE) from None

    if backend == "wgpu":
        from ..backends.wgpu import WgpuBackend  # why: import time (wgpu, for --backend wgpu only)

        runner: Backend = WgpuBackend.acquire()
    else:
        from ..backends.reference import ReferenceBackend  # why: import time (for --backend reference only)

        runner = ReferenceBackend()
    try:
        results = runner.dispatch(prog, given, config=config)
    except InvalidArgumentError as exc:  # an input of the wrong dtype or size: a bad argument
        raise CliError(describe_exception(exc), USAGE) from None
    for name, array in zip(out_names, results):
        path = paths[name]
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            with path.open("wb") as f:  # np.save(f) writes exactly this path (np.save(path) adds .npy)
                np.save(f, array, allow_pickle=False)
        except OSError as exc:
            raise CliError(f"cannot write {path}: {exc.strerror or exc}", USAGE) from None
        click.echo(f"{name}: {array.dtype} {tuple(array.shape)} -> {path}")


COMMANDS = [run]
