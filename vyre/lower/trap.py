"""The loop trap: a run-time check for adapters that end loops silently (llvmpipe ends an invocation's
loops after 65,535 iterations in all, and the static count of vyre/ir/trips.py cannot see loops bounded by
data: ``range(n)`` with ``n`` a parameter, ``len(x)`` moved into a ``let``, ``while``).

What llvmpipe counts, measured on lavapipe 22.3: every execution of a loop's header (its test) in the
invocation, over all loops (a loop of n iterations tests n + 1 times); the 65,536th test is forced false,
so an iteration runs only while its test is at most the 65,535th. A loop of 65,535 iterations runs whole; a
loop after one of 65,000 gets 534 more, not 535. Small literal loops Mesa unrolls are not counted.

Lowered with ``loop_cap`` (65,535), every loop llvmpipe counts keeps that count in ``_vyre_trips`` (one per
iteration at the start of its body, one after the loop for its final test) and reports, with an atomic max
of a code into the hidden ``_vyre_trap`` buffer (``@group(1) @binding(1)``), the moment llvmpipe would cut
it: the cap is reached and the loop wants another iteration (a ``for``'s next counter value is below its
bound; for ``while``, whose condition comes after the body, reaching the cap is reported), or the cap was
reached before the loop and it would start. A ``break`` makes the count one high (reported early, never
late). The code names the program (20 bits of its fingerprint) and the loop (its number in the program);
the backend reads the buffer with the results of every submission that reads anything and turns a code
into a DispatchError naming the program and the loop. Without ``loop_cap`` no line of it is emitted: other
adapters pay nothing.
"""

from __future__ import annotations

TRAP_GROUP = 1
TRAP_BINDING = 1
TRAP_NAME = "_vyre_trap"
#: Bytes of the trap buffer (one u32 is used; 16 keeps it a whole storage row).
TRAP_NBYTES = 16
#: Loops per program a code can tell apart (the low bits); more share the last number.
_LOOP_BITS = 12
_TAG_BITS = 20

DECLARATION = (f"@group({TRAP_GROUP}) @binding({TRAP_BINDING}) "
               f"var<storage, read_write> {TRAP_NAME}: array<atomic<u32>, 4>;")
COUNTER = "var _vyre_trips: u32 = 0u;"
#: After an instrumented loop: its final (false) test.
EXIT_LINE = "_vyre_trips = _vyre_trips + 1u;"


def program_tag(fingerprint: str) -> int:
    """The 20-bit tag of a program in its trap codes (from its fingerprint, so cached lowerings agree)."""
    return int(fingerprint[:5], 16) & ((1 << _TAG_BITS) - 1)


def trap_code(fingerprint: str, loop: int) -> int:
    """The code loop ``loop`` (1-based) of the program writes; never 0 (0 means no trap)."""
    return (program_tag(fingerprint) << _LOOP_BITS) | min(loop, (1 << _LOOP_BITS) - 1)


def decode(code: int) -> tuple[int, int]:
    """(program tag, loop number) of a trap code."""
    return code >> _LOOP_BITS, code & ((1 << _LOOP_BITS) - 1)


def entry_line(cap: int, code: int, first: str) -> str:
    """The WGSL before an instrumented loop: the cap was reached by the loops before it and this loop would
    run (``first``: the condition of its first iteration), so llvmpipe would skip it."""
    return f"if (_vyre_trips >= {cap}u && {first}) {{ atomicMax(&{TRAP_NAME}[0], {code}u); }}"


def count_lines(cap: int, code: int, more: str | None = None) -> list[str]:
    """The WGSL that starts the body of an instrumented loop. ``more``: the condition that the loop wants
    another iteration after this one (a ``for``'s next counter value against its bound): with it, a loop
    that needs exactly ``cap`` iterations in all (which llvmpipe runs whole) is not reported; without it
    (``while``), reaching the cap is."""
    cond = f"_vyre_trips >= {cap}u" if more is None else f"_vyre_trips >= {cap}u && {more}"
    return ["_vyre_trips = _vyre_trips + 1u;", f"if ({cond}) {{ atomicMax(&{TRAP_NAME}[0], {code}u); }}"]


__all__ = ["TRAP_GROUP", "TRAP_BINDING", "TRAP_NAME", "TRAP_NBYTES", "DECLARATION", "COUNTER", "EXIT_LINE",
           "program_tag",
           "trap_code", "decode", "count_lines", "entry_line"]
