"""``python -m bench docs``: regenerate the tables of docs/benchmarks.md and docs/reliability.md.

Each ``make bench-*`` target (and ``make chaos`` / ``make fuzz``) writes
``bench-results/<name>.json``; this renders each saved report with its benchmark's own
``render`` and replaces the region between ``<!-- bench:<name> -->`` and
``<!-- /bench:<name> -->`` of the document that holds it. No table is typed by hand. A report's
charts (``bench.figures``) are written to docs/charts/ and linked at the top of its region, so a
link is regenerated with its table.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.figures import figures

#: The document that holds each benchmark's table, relative to the repository root.
DOCUMENTS: dict[str, str] = {
    "embed": "docs/benchmarks.md",
    "ingest": "docs/benchmarks.md",
    "quality": "docs/benchmarks.md",
    "paraphrase": "docs/benchmarks.md",
    "temporal": "docs/benchmarks.md",
    "dense-context": "docs/benchmarks.md",
    "embed-quality": "docs/benchmarks.md",
    "vector-quantization": "docs/benchmarks.md",
    "latency": "docs/benchmarks.md",
    "sleep": "docs/benchmarks.md",
    "gateway": "docs/benchmarks.md",
    "peers": "docs/benchmarks.md",
    "keyword-pruning": "docs/benchmarks.md",
    "tracing": "docs/deploy.md",
    "chaos": "docs/reliability.md",
    "chaos-cluster": "docs/reliability.md",
    "fuzz": "docs/reliability.md",
}
#: Reports written by test harnesses (``make chaos``, ``make chaos-cluster``, ``make fuzz``) carry their own table.
PRERENDERED = ("chaos", "chaos-cluster", "fuzz")
#: Where the charts are written, relative to the repository root.
CHARTS = "docs/charts"


def renderer(name: str) -> Callable[[dict[str, Any]], str]:
    from bench import (
        dense_context_logic,
        embed,
        embed_quality,
        gateway,
        ingest,
        keyword_pruning,
        latency,
        paraphrase,
        peers,
        quality,
        sleep,
        temporal,
        tracing,
        vector_quantization,
    )

    if name in PRERENDERED:
        return lambda report: str(report["markdown"])
    return {
        "embed": embed.render,
        "ingest": ingest.render,
        "quality": quality.render,
        "paraphrase": paraphrase.render,
        "temporal": temporal.render,
        "dense-context": dense_context_logic.render,
        "embed-quality": embed_quality.render,
        "vector-quantization": vector_quantization.render,
        "latency": latency.render,
        "sleep": sleep.render,
        "gateway": gateway.render,
        "peers": peers.render,
        "keyword-pruning": keyword_pruning.render,
        "tracing": tracing.render,
    }[name]


def replace_region(text: str, name: str, body: str, document: str = "the document") -> str:
    pattern = re.compile(rf"(<!-- bench:{name} -->\n).*?(<!-- /bench:{name} -->)", re.S)
    if not pattern.search(text):
        raise ValueError(f"{document} has no <!-- bench:{name} --> region")
    return pattern.sub(lambda m: m.group(1) + body.rstrip() + "\n" + m.group(2), text)


def write_charts(root: Path, document: str, name: str, report: dict[str, Any]) -> str:
    """Write the report's charts under ``CHARTS``; return their markdown image paragraphs (empty if none)."""
    links = []
    for figure in figures(name, report):
        path = root / CHARTS / f"{figure.name}.svg"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(figure.svg, encoding="utf-8")
        link = Path(os.path.relpath(path, (root / document).parent)).as_posix()
        links.append(f"![{figure.alt}]({link})\n\n")
    return "".join(links)


def update_docs(root: Path, results: Path) -> list[str]:
    """Re-render every region (and its charts) whose results file exists; return the names updated."""
    texts: dict[str, str] = {}
    done = []
    for name, document in DOCUMENTS.items():
        path = results / f"{name}.json"
        if not path.exists():
            continue
        report = json.loads(path.read_text())
        body = write_charts(root, document, name, report) + renderer(name)(report)
        text = texts.get(document) or (root / document).read_text(encoding="utf-8")
        texts[document] = replace_region(text, name, body, document)
        done.append(name)
    for document, text in texts.items():
        (root / document).write_text(text, encoding="utf-8")
    return done
