"""The tables and charts in docs/ are what ``python -m bench docs`` renders from bench-results/."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from bench.__main__ import main
from bench.docs import CHARTS, DOCUMENTS, replace_region, update_docs

ROOT = Path(__file__).resolve().parents[3]


def test_docs_tables_are_current(tmp_path: Path) -> None:
    for document in set(DOCUMENTS.values()):
        (tmp_path / document).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / document, tmp_path / document)
    done = update_docs(tmp_path, ROOT / "bench-results")
    assert sorted(done) == sorted(DOCUMENTS)
    stale = [d for d in set(DOCUMENTS.values()) if (tmp_path / d).read_text() != (ROOT / d).read_text()]
    assert stale == [], "run `make bench-docs`"
    charts = sorted(p.name for p in (tmp_path / CHARTS).glob("*.svg"))
    assert charts == sorted(p.name for p in (ROOT / CHARTS).glob("*.svg"))
    stale = [c for c in charts if (tmp_path / CHARTS / c).read_bytes() != (ROOT / CHARTS / c).read_bytes()]
    assert stale == [], "run `make bench-docs`"


def region(text: str, name: str) -> str:
    match = re.search(rf"<!-- bench:{name} -->\n(.*?)<!-- /bench:{name} -->", text, re.S)
    assert match, name
    return match.group(1)


def test_bench_docs_writes_the_charts_and_links_them_inside_their_regions(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    for document in set(DOCUMENTS.values()):
        text = "".join(f"<!-- bench:{n} -->\nold\n<!-- /bench:{n} -->\n" for n, d in DOCUMENTS.items() if d == document)
        (tmp_path / document).write_text(text)
    assert main(["docs", "--root", str(tmp_path), "--results", str(ROOT / "bench-results")]) == 0
    written = sorted(p.name for p in (tmp_path / "docs" / "charts").glob("*.svg"))
    assert written == [
        "embed-throughput.svg",
        "ingest-cpu.svg",
        "latency-by-owner-size.svg",
        "latency-throughput.svg",
        "peers-ratios.svg",
        "quality-recall.svg",
    ]
    text = (tmp_path / "docs" / "benchmarks.md").read_text()
    links = {
        name: re.findall(r"^!\[([^\]]+)\]\(charts/([a-z0-9-]+)\.svg\)$", region(text, name), re.M)
        for name in ("embed", "ingest", "latency", "quality", "peers", "sleep", "gateway")
    }
    assert links == {
        "embed": [("Embedding throughput against worker processes", "embed-throughput")],
        "ingest": [("Ingest + extract: CPU time per chat event by process", "ingest-cpu")],
        "latency": [
            ("Retrieval latency against memories per owner", "latency-by-owner-size"),
            ("Hybrid retrieval throughput against concurrency", "latency-throughput"),
        ],
        "quality": [("LoCoMo recall@10 by question category and strategy", "quality-recall")],
        "peers": [("memoryd / mem0 2.2.1 per figure", "peers-ratios")],
        "sleep": [],
        "gateway": [],
    }
    # the chart as a paragraph of its own, then the tables
    chart = "![Embedding throughput against worker processes](charts/embed-throughput.svg)\n\n"
    assert region(text, "embed").startswith(chart + "Embedding throughput, 3000 texts")
    assert "| measurement | texts/s |" in region(text, "embed")


def test_a_missing_region_names_the_document() -> None:
    with pytest.raises(ValueError, match=re.escape("docs/benchmarks.md has no <!-- bench:embed --> region")):
        replace_region("no markers here", "embed", "| table |", "docs/benchmarks.md")
    text = "a\n<!-- bench:embed -->\nold\n<!-- /bench:embed -->\nb"
    assert replace_region(text, "embed", "new\n") == "a\n<!-- bench:embed -->\nnew\n<!-- /bench:embed -->\nb"
