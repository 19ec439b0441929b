"""tests/export: the browser check's line in the terminal summary (sent from xdist workers as a property)."""

from __future__ import annotations

_LINES: list[str] = []


def pytest_runtest_logreport(report):
    if report.when == "call":
        _LINES.extend(v for k, v in getattr(report, "user_properties", ()) if k == "vyre_browser")


def pytest_terminal_summary(terminalreporter):
    if _LINES:
        terminalreporter.section("vyre: browser check")
        for line in _LINES:
            terminalreporter.write_line(line)
