"""The benchmark and reliability tables in docs/ are what ``python -m bench docs`` renders from bench-results/."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from bench.docs import DOCUMENTS, replace_region, update_docs

ROOT = Path(__file__).resolve().parents[3]


def test_docs_tables_are_current(tmp_path: Path) -> None:
    for document in set(DOCUMENTS.values()):
        (tmp_path / document).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / document, tmp_path / document)
    done = update_docs(tmp_path, ROOT / "bench-results")
    assert sorted(done) == sorted(DOCUMENTS)
    stale = [d for d in set(DOCUMENTS.values()) if (tmp_path / d).read_text() != (ROOT / d).read_text()]
    assert stale == [], "run `make bench-docs`"


def test_a_missing_region_names_the_document() -> None:
    with pytest.raises(ValueError, match=re.escape("docs/benchmarks.md has no <!-- bench:embed --> region")):
        replace_region("no markers here", "embed", "| table |", "docs/benchmarks.md")
    text = "a\n<!-- bench:embed -->\nold\n<!-- /bench:embed -->\nb"
    assert replace_region(text, "embed", "new\n") == "a\n<!-- bench:embed -->\nnew\n<!-- /bench:embed -->\nb"
