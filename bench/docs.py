"""``python -m bench readme``: regenerate the README's benchmark tables from saved results.

Each ``make bench-*`` target writes ``bench-results/<name>.json``; this renders each saved
report with its benchmark's own ``render`` and replaces the README region between
``<!-- bench:<name> -->`` and ``<!-- /bench:<name> -->``. No table is typed by hand.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

BENCHES = ("embed", "ingest", "quality", "latency", "sleep", "chaos", "fuzz")
#: Reports written by test harnesses (``make chaos``, ``make fuzz``) carry their own table.
PRERENDERED = ("chaos", "fuzz")


def renderer(name: str) -> Callable[[dict[str, Any]], str]:
    from bench import embed, ingest, latency, quality, sleep

    if name in PRERENDERED:
        return lambda report: str(report["markdown"])
    return {
        "embed": embed.render,
        "ingest": ingest.render,
        "quality": quality.render,
        "latency": latency.render,
        "sleep": sleep.render,
    }[name]


def replace_region(text: str, name: str, body: str) -> str:
    pattern = re.compile(rf"(<!-- bench:{name} -->\n).*?(<!-- /bench:{name} -->)", re.S)
    if not pattern.search(text):
        raise ValueError(f"README has no <!-- bench:{name} --> region")
    return pattern.sub(lambda m: m.group(1) + body.rstrip() + "\n" + m.group(2), text)


def update_readme(readme: Path, results: Path) -> list[str]:
    """Re-render every region whose results file exists; return the names updated."""
    text = readme.read_text()
    done = []
    for name in BENCHES:
        path = results / f"{name}.json"
        if path.exists():
            text = replace_region(text, name, renderer(name)(json.loads(path.read_text())))
            done.append(name)
    readme.write_text(text)
    return done
