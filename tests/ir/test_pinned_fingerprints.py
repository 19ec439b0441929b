"""Every program of tests/programs.py keeps the fingerprint it had when the IR nodes were pydantic
models (pinned in pinned_fingerprints.json, recorded before they became dataclasses), and round-trips
through the wire to an equal program with that fingerprint: the wire bytes never changed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from vyre.ir.program import Program
from vyre.ir.wire import fingerprint, from_wire, to_wire

from programs import CASES, scale_program

PINNED = json.loads((Path(__file__).with_name("pinned_fingerprints.json")).read_text())


def _programs() -> dict:
    out = {case.name: case.build for case in CASES}
    out["scale_program"] = lambda: (scale_program(),)
    return out


PROGRAMS = _programs()


def test_every_program_is_pinned():
    assert set(PINNED) == set(PROGRAMS)


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_wire_round_trip_keeps_the_pinned_fingerprint(name):
    program = PROGRAMS[name]()[0]
    assert isinstance(program, Program)
    assert program.fingerprint == fingerprint(program) == PINNED[name]
    back = from_wire(to_wire(program))
    assert back == program
    assert back.fingerprint == PINNED[name] and to_wire(back) == to_wire(program)
