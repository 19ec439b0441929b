"""``vyre wgsl PROGRAM`` (WGSL, IR text or wire JSON of a program) and ``vyre export PROGRAM --out DIR``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from ..errors import InvalidArgumentError, VyreError
from ._common import PROGRAM_HELP, RUNTIME, USAGE, CliError, describe_exception, load_program

# one reading of NAME=VALUE arguments for `vyre run` and `vyre export` (run.py imports only click at load)
from .run import _load_input, _number, _pairs


@click.command("wgsl", epilog=PROGRAM_HELP)
@click.argument("program", metavar="PROGRAM")
@click.option("--text", "form", flag_value="text", help="print the IR text form instead")
@click.option("--wire", "form", flag_value="wire", help="print the canonical wire JSON instead (for `vyre run`)")
def wgsl(program: str, form: str | None) -> None:
    """Print the WGSL that vyre generates for PROGRAM."""
    from ..lower import lower  # why: import time (pydantic, the IR and the lowering)

    prog = load_program(program)
    if form == "text":
        click.echo(prog.to_text())
    elif form == "wire":
        click.echo(prog.to_wire().decode("ascii"))
    else:
        try:
            click.echo(lower(prog).wgsl, nl=False)
        except VyreError as exc:
            raise CliError(f"cannot lower {prog.name!r}: {describe_exception(exc)}", RUNTIME) from None


EXPORT_HELP = PROGRAM_HELP + (". With --kernel, PROGRAM is 'script.py:NAME' or 'package.module:NAME' naming a "
                              "@vyre.kernel; with --op, PROGRAM is left out")


def _values(pairs: tuple[str, ...], option: str) -> dict[str, Any]:
    """``NAME=PATH.npy`` (an array) or ``NAME=NUMBER`` (a scalar) pairs, as ``vyre run --input`` reads them."""
    return {name: _load_input(name, text) for name, text in _pairs(pairs, option)}


def _param(text: str) -> Any:
    """An op keyword argument: an int, a float, true/false, else the text itself."""
    value = _number(text)
    if value is not None:
        return value
    return {"true": True, "false": False}.get(text.lower(), text)


def _load_kernel(spec: str) -> Any:
    """The @vyre.kernel that ``script.py:NAME`` or ``module:NAME`` names."""
    from ..frontend.decorator import Kernel  # why: import time (the frontend loads for --kernel only)
    from ._common import _SPEC, _import, _run_file

    m = _SPEC.fullmatch(spec)
    if m is None:
        raise CliError(f"--kernel: name the kernel as script.py:NAME or package.module:NAME, got {spec!r}", USAGE)
    target = m["target"]
    module = _run_file(Path(target)) if target.endswith(".py") else _import(target)
    obj: Any = module
    for part in m["attr"].split("."):
        if not hasattr(obj, part):
            raise CliError(f"{target} has no attribute {m['attr']!r}", USAGE)
        obj = getattr(obj, part)
    if not isinstance(obj, Kernel):
        raise CliError(f"{spec} is a {type(obj).__name__}, not a @vyre.kernel", USAGE)
    return obj


def _dims(text: str | None) -> tuple[int, ...]:
    try:
        dims = tuple(int(x) for x in (text or "").split(","))
    except ValueError:
        dims = ()
    if not 1 <= len(dims) <= 3:
        raise CliError(f"--dim {text!r}: expected N, H,W or D,H,W (the launch dims)", USAGE)
    return dims


@click.command("export", epilog=EXPORT_HELP)
@click.argument("program", metavar="[PROGRAM]", required=False)
@click.option("--out", "out", required=True, type=click.Path(file_okay=False, path_type=Path),
              help="directory to write into (created when missing)")
@click.option("--name", default=None, help="the export's name (default: the program's, kernel's or op's)")
@click.option("--kernel", "as_kernel", is_flag=True, help="PROGRAM is a @vyre.kernel: export its launch over --dim "
              "with the -i arguments, parameters by their Python names")
@click.option("--dim", default=None, metavar="N[,H[,W]]", help="the kernel's launch dims (with --kernel)")
@click.option("--op", "op_id", default=None, metavar="OP", help="export the call of op OP (e.g. reduce.sum) on the "
              "--array arrays: every program in order, with grids and shared buffers")
@click.option("--array", "arrays", multiple=True, type=click.Path(dir_okay=False, path_type=Path),
              metavar="PATH.npy", help="an array argument of the op call, in order (with --op)")
@click.option("--param", "params", multiple=True, metavar="NAME=VALUE", help="a keyword argument of the op call")
@click.option("-i", "--input", "inputs", multiple=True, metavar="NAME=PATH.npy|NUMBER",
              help="a kernel argument by parameter name (with --kernel): its dtype and shape")
def export(program: str | None, out: Path, name: str | None, as_kernel: bool, dim: str | None, op_id: str | None,
           arrays: tuple[Path, ...], params: tuple[str, ...], inputs: tuple[str, ...]) -> None:
    """Export for use without vyre: a PROGRAM (NAME.wgsl, NAME.json: the manifest, NAME.js: an ES module running
    it with WebGPU), a kernel launch (--kernel) or an op call (--op) as one unit (NAME.json, NAME.<k>.wgsl per
    program, NAME.js whose run() takes the inputs by name); prints the manifest's path."""
    from .. import export as ex  # why: import time (the lowering and jinja2)

    what = op_id or program or "?"
    try:
        if op_id is not None:
            if program is not None or as_kernel:
                raise CliError("--op exports an op call: leave PROGRAM and --kernel out", USAGE)
            import numpy as np  # why: import time (numpy for --op only)

            loaded = [_values((f"array{k}={p}",), "--array")[f"array{k}"] for k, p in enumerate(arrays)]
            kwargs = {k: _param(v) for k, v in _pairs(params, "--param")}
            manifest = ex.export_op(op_id, *(np.asarray(a) for a in loaded), out_dir=out, name=name, **kwargs)
        elif program is None:
            raise CliError("name a PROGRAM (or --op OP)", USAGE)
        elif as_kernel:
            kernel = _load_kernel(program)
            manifest = ex.export_kernel(kernel, dim=_dims(dim), out_dir=out, name=name,
                                        **_values(inputs, "--input"))
        else:
            if dim or inputs or arrays or params:
                raise CliError("--dim, -i, --array and --param go with --kernel or --op", USAGE)
            prog = load_program(program)
            what = prog.name
            manifest = ex.export_program(prog, out, name=name)
    except InvalidArgumentError as exc:  # --name, an input or a param the export refuses: a bad argument
        where = f"--name {name!r}" if exc.message.startswith("export name") else f"cannot export {what!r}"
        raise CliError(f"{where}: {exc.message}" + (f" ({exc.fix})" if exc.fix else ""),
                       USAGE) from None
    except KeyError as exc:  # an unknown op id
        raise CliError(str(exc.args[0]) if exc.args else str(exc), USAGE) from None
    except VyreError as exc:
        raise CliError(f"cannot export {what!r}: {describe_exception(exc)}", RUNTIME) from None
    except OSError as exc:
        raise CliError(f"cannot write to {out}: {exc.strerror or exc}", USAGE) from None
    click.echo(str(manifest))


COMMANDS = [wgsl, export]
