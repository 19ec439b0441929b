"""The fuzzer's summary lines (recorded by tests/fuzz/test_fuzz_gpu.py as the ``fuzz`` property) in the
terminal summary, also under pytest-xdist, where the workers' output is not shown."""

from __future__ import annotations


def pytest_terminal_summary(terminalreporter):
    lines = []
    for reports in terminalreporter.stats.values():
        for rep in reports:
            for key, value in getattr(rep, "user_properties", ()):
                if key == "fuzz" and getattr(rep, "when", "call") == "call":
                    lines.append(str(value))
    if lines:
        terminalreporter.section("vyre fuzzer")
        for line in sorted(lines):
            terminalreporter.write_line(line)
