"""``python -m bench ingest [--events N] [--json OUT]`` (see ``bench/ingest.py``) and
``python -m bench paraphrase`` (see ``bench/paraphrase.py``) and ``python -m bench docs`` (see ``bench/docs.py``)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

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


@click.command("paraphrase", context_settings=CONTEXT_SETTINGS)
@click.option("--memories", type=click.IntRange(min=20), default=2000, show_default=True, help="synthetic memories")
@click.option("--questions", type=click.IntRange(min=1), default=200, show_default=True, help="memories asked about")
@click.option("--seed", type=int, default=19, show_default=True)
@json_option
def paraphrase(memories: int, questions: int, seed: int, json_path: str | None) -> int:
    """Keyword-style vs paraphrased questions: hybrid, semantic-only, keyword-only (source in top 10)."""
    from bench.harness import ServiceStack, embedded_servers
    from bench.paraphrase import render, run_paraphrase

    async def go(log: Callable[[str], None]) -> dict[str, Any]:
        async with (
            embedded_servers() as servers,
            ServiceStack(servers.nats_url, servers.pg_dsn, servers=servers) as stack,
        ):
            return await run_paraphrase(stack, memories, questions, seed=seed, log=log)

    with running("paraphrase") as log:
        report = asyncio.run(go(log))
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


COMMANDS = (ingest, paraphrase, docs)
