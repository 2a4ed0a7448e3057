"""ruff and mypy run as part of the tests, over the packages the Makefile's ``LINTED`` names (as `make lint`)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
BIN = Path(sys.executable).parent


def linted() -> list[str]:
    """The packages `make lint` checks: one list, in the Makefile."""
    match = re.search(r"^LINTED\s*:=\s*(.+)$", (ROOT / "Makefile").read_text(), re.MULTILINE)
    assert match, "the Makefile defines LINTED"
    return match.group(1).split()


def _run(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=600, check=False)


def test_every_installed_package_and_the_benchmarks_are_linted() -> None:
    assert {"memoryd", "shared", "services", "bench"} <= set(linted())


@pytest.mark.slow
def test_ruff_lint_and_format() -> None:
    lint = _run(str(BIN / "ruff"), "check", *linted(), "tests")
    assert lint.returncode == 0, lint.stdout + lint.stderr
    fmt = _run(str(BIN / "ruff"), "format", "--check", *linted())
    assert fmt.returncode == 0, fmt.stdout + fmt.stderr


@pytest.mark.slow
def test_mypy() -> None:
    result = _run(str(BIN / "mypy"), *linted())
    assert result.returncode == 0, result.stdout + result.stderr
