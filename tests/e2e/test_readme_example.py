"""The README's application example runs as it is against a real ``memoryd up``: the first
```python block under "Use it from an application", with only ``MEMORYD_DATA_DIR`` set."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.up import RunningUp, clean_env

pytestmark = pytest.mark.slow

README = Path(__file__).resolve().parents[2] / "README.md"
HEADING = "Use it from an application"


def application_example(text: str) -> str:
    """The first ```python block after the heading (and before the next heading of its level)."""
    match = re.search(rf"^(#+) {re.escape(HEADING)}\s*$", text, re.MULTILINE)
    assert match, f"README.md has no '{HEADING}' section"
    rest = text[match.end() :]
    following = re.search(rf"^#{{1,{len(match.group(1))}}} ", rest, re.MULTILINE)
    section = rest[: following.start()] if following else rest
    block = re.search(r"^```python\n(.*?)^```", section, re.MULTILINE | re.DOTALL)
    assert block, f"no ```python block under '{HEADING}'"
    return block.group(1)


def test_the_example_uses_the_documented_calls() -> None:
    code = application_example(README.read_text())
    for call in (
        "async with await MemoryClient.connect() as memory:",
        'memory.publish_chat("alice", [',
        'memory.wait_searchable("alice", question)',
        "memory.retrieve(",
        "memory.inject(",
    ):
        assert call in code, call


def test_the_readme_example_runs_against_memoryd_up(stack: RunningUp, tmp_path: Path) -> None:
    script = tmp_path / "example.py"
    script.write_text(application_example(README.read_text()))
    result = subprocess.run(
        [sys.executable, str(script)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,  # no .memoryd here: the data dir comes from the environment
        env=clean_env(MEMORYD_DATA_DIR=str(stack.data_dir)),
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "TypeScript" in result.stdout
