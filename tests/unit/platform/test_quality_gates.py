"""ruff and mypy run as part of the tests, on the same configuration as `make lint`."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
BIN = Path(sys.executable).parent


def _run(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=600, check=False)


@pytest.mark.slow
def test_ruff_lint_and_format() -> None:
    lint = _run(str(BIN / "ruff"), "check", "shared", "services", "tests")
    assert lint.returncode == 0, lint.stdout + lint.stderr
    fmt = _run(str(BIN / "ruff"), "format", "--check", "shared", "services")
    assert fmt.returncode == 0, fmt.stdout + fmt.stderr


@pytest.mark.slow
def test_mypy_services_and_shared() -> None:
    result = _run(str(BIN / "mypy"), "shared", "services")
    assert result.returncode == 0, result.stdout + result.stderr
