"""Generated results and the documents they feed carry no absolute path of the machine they ran on."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
#: Home, scratch and work directories: what a path of the measuring machine starts with.
ABSOLUTE = re.compile(r"(?<![\w.])/(?:work|tmp|root|home)/")
CHECKED = sorted([*(ROOT / "bench-results").glob("*.json"), *(ROOT / "docs").glob("*.md"), ROOT / "README.md"])


@pytest.mark.parametrize("path", CHECKED, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_absolute_machine_path(path: Path) -> None:
    hits = [
        f"{path.name}:{n}: {line.strip()[:120]}"
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if ABSOLUTE.search(line)
    ]
    assert hits == []


def test_the_check_sees_the_results_and_the_docs() -> None:
    names = {p.relative_to(ROOT).as_posix() for p in CHECKED}
    assert {"bench-results/quality.json", "docs/benchmarks.md", "docs/reliability.md"} <= names
    assert ABSOLUTE.search('"data": "/work/shared/data/locomo/locomo_dev.json"')
    assert not ABSOLUTE.search('"data": "locomo_dev.json", "url": "http://127.0.0.1:9464/metrics"')
