"""``python -m bench ingest [--events N] [--json OUT]`` (see ``bench/ingest.py``),
``python -m bench paraphrase`` (see ``bench/paraphrase.py``), ``python -m bench temporal``
(see ``bench/temporal.py``), ``python -m bench dense-context`` (see ``bench/dense_context.py``),
``python -m bench embed-quality`` (see ``bench/embed_quality.py``), ``python -m bench
vector-quantization`` (see ``bench/vector_quantization.py``) and ``python -m bench docs`` (see
``bench/docs.py``)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

import click

from bench.cli import emit, json_option, locomo_data, publish_option, running
from bench.quality import Publish
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


@click.command("temporal", context_settings=CONTEXT_SETTINGS)
@click.option(
    "--conversations", type=click.IntRange(min=1), default=6, show_default=True, help="generated conversations"
)
@click.option("--seed", type=int, default=23, show_default=True)
@publish_option
@json_option
def temporal(conversations: int, seed: int, publish: str, json_path: str | None) -> int:
    """Questions about when, on generated dated conversations: R@k per question kind and temporal setting."""
    from bench.harness import ServiceStack, embedded_servers
    from bench.temporal import render, run_temporal

    async def go(log: Callable[[str], None]) -> dict[str, Any]:
        async with (
            embedded_servers() as servers,
            ServiceStack(servers.nats_url, servers.pg_dsn, servers=servers) as stack,
        ):
            return await run_temporal(stack, conversations, seed=seed, log=log, publish=cast(Publish, publish))

    with running("temporal") as log:
        report = asyncio.run(go(log))
    emit(render(report), report, json_path)
    return 0


@click.command("dense-context", context_settings=CONTEXT_SETTINGS)
@click.option("--data", metavar="FILE", help="LoCoMo JSON (default: the dev split next to the repository)")
@click.option(
    "--cache-dir",
    type=click.Path(path_type=Path),
    default="/tmp/memoryd-dense-context",
    show_default=True,
    help="collected candidates and vectors, reused by the next run (delete it to collect again)",
)
@json_option
def dense_context(data: str | None, cache_dir: Path, json_path: str | None) -> int:
    """Which text the dense tier embeds for a chat turn: dense-only and hybrid R@10, leave-one-conversation-out."""
    from bench import dense_context as study
    from bench import dense_context_logic, locomo

    path = locomo_data("dense-context", data)
    if path is None:
        return 0
    with running("dense-context") as log:
        report = study.run(locomo.load(path), cache_dir, log, data_name=path.name)
    emit(dense_context_logic.render(report), report, json_path)
    return 0


@click.command("embed-quality", context_settings=CONTEXT_SETTINGS)
@click.option("--data", metavar="FILE", help="LoCoMo JSON (default: the dev split next to the repository)")
@click.option(
    "--cache-dir",
    type=click.Path(path_type=Path),
    default="/tmp/memoryd-embed-quality",
    show_default=True,
    help="collected candidates and the built model variants, reused by the next run (delete it to collect again)",
)
@json_option
def embed_quality(data: str | None, cache_dir: Path, json_path: str | None) -> int:
    """Float vs dynamic-int8 embeddings: LoCoMo hybrid R@10, paraphrase top 10, CPU per text, in one run."""
    from bench import embed_quality as study
    from bench import locomo

    path = locomo_data("embed-quality", data)
    if path is None:
        return 0
    with running("embed-quality") as log:
        report = study.run(locomo.load(path), cache_dir, log, data_name=path.name)
    emit(study.render(report), report, json_path)
    return 0


@click.command("vector-quantization", context_settings=CONTEXT_SETTINGS)
@click.option("--data", metavar="FILE", help="LoCoMo JSON (default: the dev split next to the repository)")
@click.option("--conversations", type=int, default=0, show_default=True, help="only the first N (0 = all)")
@json_option
def vector_quantization(data: str | None, conversations: int, json_path: str | None) -> int:
    """Full vs half-precision pgvector storage (set, then reindexed): LoCoMo hybrid and semantic R@10, sizes."""
    from bench import locomo
    from bench import vector_quantization as study
    from bench.harness import servers_and_stack

    path = locomo_data("vector-quantization", data)
    if path is None:
        return 0
    convs = locomo.load(path)[: conversations or None]

    async def go(log: Callable[[str], None]) -> dict[str, Any]:
        async with servers_and_stack(env=dict(study.STACK_ENV)) as (_servers, stack):
            return await study.run(stack, convs, data_name=path.name, log=log)

    with running("vector-quantization") as log:
        report = asyncio.run(go(log))
    emit(study.render(report), report, json_path)
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


COMMANDS = (ingest, paraphrase, temporal, dense_context, embed_quality, vector_quantization, docs)
