"""``python -m bench ingest [--events N] [--json OUT]`` (see ``bench/ingest.py``) and
``python -m bench readme`` (see ``bench/readme.py``)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import click

from bench.cli import emit, json_option, running
from memoryd.cli.common import CONTEXT_SETTINGS


@click.command("ingest", context_settings=CONTEXT_SETTINGS)
@click.option("--events", type=click.IntRange(min=1), default=10_000, show_default=True, help="chat events to publish")
@json_option
def ingest(events: int, json_path: str | None) -> int:
    """Chat events/s through ingest + extract (to committed rows)."""
    from bench.ingest import render, run_ingest_bench

    with running("ingest") as log:
        report = asyncio.run(run_ingest_bench(events, log=log))
    emit(render(report), report, json_path)
    return 0


@click.command("readme", context_settings=CONTEXT_SETTINGS)
@click.option("--readme", default="README.md", show_default=True, metavar="FILE")
@click.option("--results", default="bench-results", show_default=True, metavar="DIR")
def readme(readme: str, results: str) -> int:
    """Regenerate the README's tables from bench-results/."""
    from bench.readme import update_readme

    done = update_readme(Path(readme), Path(results))
    print(f"README tables regenerated from {results}: {', '.join(done) or 'none found'}")
    return 0


COMMANDS = (ingest, readme)
