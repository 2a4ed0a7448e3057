"""Prints the fuzz run's summary line ("fuzz: N cases over M subjects, K crashes") at the end
of the pytest run, outside output capture."""

from __future__ import annotations

import pytest

from .harness import SUMMARY


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter, config: pytest.Config) -> None:
    if line := config.stash.get(SUMMARY, None):
        terminalreporter.write_line(line)
