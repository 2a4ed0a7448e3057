"""``python -m bench docs``: regenerate the tables of docs/benchmarks.md and docs/reliability.md.

Each ``make bench-*`` target (and ``make chaos`` / ``make fuzz``) writes
``bench-results/<name>.json``; this renders each saved report with its benchmark's own
``render`` and replaces the region between ``<!-- bench:<name> -->`` and
``<!-- /bench:<name> -->`` of the document that holds it. No table is typed by hand.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

#: The document that holds each benchmark's table, relative to the repository root.
DOCUMENTS: dict[str, str] = {
    "embed": "docs/benchmarks.md",
    "ingest": "docs/benchmarks.md",
    "quality": "docs/benchmarks.md",
    "paraphrase": "docs/benchmarks.md",
    "temporal": "docs/benchmarks.md",
    "dense-context": "docs/benchmarks.md",
    "latency": "docs/benchmarks.md",
    "sleep": "docs/benchmarks.md",
    "gateway": "docs/benchmarks.md",
    "peers": "docs/benchmarks.md",
    "tracing": "docs/deploy.md",
    "chaos": "docs/reliability.md",
    "chaos-cluster": "docs/reliability.md",
    "fuzz": "docs/reliability.md",
}
#: Reports written by test harnesses (``make chaos``, ``make chaos-cluster``, ``make fuzz``) carry their own table.
PRERENDERED = ("chaos", "chaos-cluster", "fuzz")


def renderer(name: str) -> Callable[[dict[str, Any]], str]:
    from bench import (
        dense_context_logic,
        embed,
        gateway,
        ingest,
        latency,
        paraphrase,
        peers,
        quality,
        sleep,
        temporal,
        tracing,
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
        "latency": latency.render,
        "sleep": sleep.render,
        "gateway": gateway.render,
        "peers": peers.render,
        "tracing": tracing.render,
    }[name]


def replace_region(text: str, name: str, body: str, document: str = "the document") -> str:
    pattern = re.compile(rf"(<!-- bench:{name} -->\n).*?(<!-- /bench:{name} -->)", re.S)
    if not pattern.search(text):
        raise ValueError(f"{document} has no <!-- bench:{name} --> region")
    return pattern.sub(lambda m: m.group(1) + body.rstrip() + "\n" + m.group(2), text)


def update_docs(root: Path, results: Path) -> list[str]:
    """Re-render every region whose results file exists; return the names updated."""
    texts: dict[str, str] = {}
    done = []
    for name, document in DOCUMENTS.items():
        path = results / f"{name}.json"
        if not path.exists():
            continue
        text = texts.get(document) or (root / document).read_text(encoding="utf-8")
        texts[document] = replace_region(text, name, renderer(name)(json.loads(path.read_text())), document)
        done.append(name)
    for document, text in texts.items():
        (root / document).write_text(text, encoding="utf-8")
    return done
