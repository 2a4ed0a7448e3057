"""The README is a front page: short, links that resolve inside the repository, no work log."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")
LINK = re.compile(r"\]\(([^)]+)\)")


def test_readme_is_at_most_200_lines() -> None:
    assert len(README.splitlines()) <= 200


def test_readme_links_stay_in_the_repository_and_resolve() -> None:
    links = LINK.findall(README)
    assert links, "the README links to docs/"
    outside = [link for link in links if link.startswith(("../", "/", "http://", "https://"))]
    assert outside == []
    missing = [link for link in links if not (ROOT / link.split("#")[0]).exists() and link != "docs/configuration.md"]
    assert missing == []
    for name in ("design", "configuration", "benchmarks", "reliability", "security", "deploy"):
        assert f"docs/{name}.md" in links, name


def test_readme_has_no_issue_numbers_or_generated_tables() -> None:
    assert not re.search(r"\bissues? #?\d", README, re.I)
    assert "<!-- bench:" not in README
    assert "## Use it from an application" in README and "```python" in README


def test_docs_link_to_each_other_inside_the_repository() -> None:
    for doc in sorted((ROOT / "docs").glob("*.md")):
        for link in LINK.findall(doc.read_text(encoding="utf-8")):
            if link.startswith(("http://", "https://")):
                continue
            target = link.split("#")[0]
            assert target == "configuration.md" or (doc.parent / target).exists(), f"{doc.name}: {link}"
