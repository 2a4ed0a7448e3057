"""``python -m bench ingest [--events N] [--json OUT]`` (see ``bench/ingest.py``) and
``python -m bench docs`` (see ``bench/docs.py``)."""

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


@click.command("docs", context_settings=CONTEXT_SETTINGS)
@click.option("--root", default=".", show_default=True, metavar="DIR", help="the repository root (holds docs/)")
@click.option("--results", default="bench-results", show_default=True, metavar="DIR")
def docs(root: str, results: str) -> int:
    """Regenerate the tables in docs/ from bench-results/."""
    from bench.docs import update_docs

    done = update_docs(Path(root), Path(results))
    print(f"docs/ tables regenerated from {results}: {', '.join(done) or 'none found'}")
    return 0


COMMANDS = (ingest, docs)
