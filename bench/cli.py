"""The benchmark commands (``python -m bench quality|latency|embed|sleep|gateway|tracing|peers``,
``keyword-pruning``); ``cli_ingest``
adds ``ingest`` and ``docs``. Each benchmark starts its own embedded stack.

Options are parsed by click like the ``memoryd`` commands; while a benchmark runs, its
progress messages scroll above a spinner with the elapsed time (plain lines on stderr when
stderr is not a terminal); the tables go to stdout.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import click

from bench.latency import STRATEGIES as LATENCY_STRATEGIES
from bench.quality import BUILTIN_VARIANTS, PUBLISH_MODES, STRATEGIES
from memoryd.cli.common import CONTEXT_SETTINGS, activity
from memoryd.errors import ConfigError, ValidationFailed


class IntList(click.ParamType):
    """``10_000,100000``: comma-separated integers >= ``minimum`` (else ``message``)."""

    name = "N,N,..."

    def __init__(self, minimum: int = 1, message: str = "every value must be >= 1", *, allow_empty: bool = False):
        self.minimum, self.message, self.allow_empty = minimum, message, allow_empty

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> list[int]:
        if isinstance(value, list | tuple):
            return list(value)
        try:
            values = [int(x.replace("_", "")) for x in str(value).split(",") if x.strip()]
        except ValueError:
            self.fail(f"{value!r} is not a comma-separated list of integers", param, ctx)
        if (not values and not self.allow_empty) or any(v < self.minimum for v in values):
            self.fail(self.message, param, ctx)
        return values


def _repo_root() -> Path:
    return Path(__file__).resolve().parents[1]


def locomo_data(name: str, given: str | None) -> Path | None:
    """The LoCoMo file a benchmark reads (``--data``, else the dev split beside the checkout); None,
    said on stdout, when it is absent: the benchmark then skips cleanly."""
    from bench import quality as q

    path = Path(given) if given else q.default_data_path(_repo_root())
    if path.exists():
        return path
    print(f"bench {name}: skipped: no data file at {path} (pass --data PATH)", flush=True)
    return None


def running(name: str) -> AbstractContextManager[Callable[[str], None]]:
    """The benchmark's ``log``: messages above a spinner on a terminal, else plain stderr lines."""
    return activity(f"bench {name}")


def emit(text: str, report: dict[str, Any], json_path: str | None) -> None:
    """Print a benchmark's tables; with ``--json``, also write the report there."""
    from bench.report import write_json

    print(text, flush=True)
    if json_path:
        write_json(Path(json_path), report)
        print(f"wrote {json_path}", file=sys.stderr, flush=True)


json_option = click.option("--json", "json_path", metavar="FILE", help="also write the report as JSON to this file")
log_dir_option = click.option("--log-dir", type=click.Path(path_type=Path), help="keep the services' logs here")
#: how the benchmarks publish chat turns (``bench.quality.build_events``)
publish_option = click.option(
    "--publish",
    type=click.Choice(PUBLISH_MODES),
    default="plain",
    show_default=True,
    help="turns as '[<date>] <speaker>: <text>' (the LoCoMo protocol) or plain text with name and occurred_at",
)


@click.command("quality", context_settings=CONTEXT_SETTINGS)
@click.option("--data", metavar="FILE", help="LoCoMo JSON (default: the dev split next to the repository)")
@json_option
@click.option("--strategy", multiple=True, type=click.Choice(sorted(STRATEGIES)), help="repeatable; default all")
@click.option(
    "--variant",
    multiple=True,
    help=f"repeatable: {', '.join(BUILTIN_VARIANTS)}, or name:key=value,... (settings, MEMORYD_RETRIEVE_*, types)",
)
@click.option("--all-variants", is_flag=True, help="run every built-in variant")
@click.option("--conversations", type=int, default=0, show_default=True, help="only the first N (0 = all)")
@click.option("--mode", type=click.Choice(("processes", "inprocess")), default="processes", show_default=True)
@click.option(
    "--protocol/--no-protocol",
    default=True,
    show_default=True,
    help="also leave-one-conversation-out over a grid of hybrid settings (in-process, same engine code)",
)
@click.option(
    "--scripted-rerank/--no-scripted-rerank",
    default=True,
    show_default=True,
    help="also the LLM rerank against a scripted model on loopback (its latency and token cost)",
)
@publish_option
@log_dir_option
def quality(**o: Any) -> int:
    """LoCoMo retrieval quality through the services (R@k, All@k)."""
    from bench import locomo
    from bench import quality as q
    from bench.harness import servers_and_stack

    data = locomo_data("quality", o["data"])
    if data is None:
        return 0
    convs = locomo.load(data)[: o["conversations"] or None]
    variants = [q.parse_variant(v) for v in (o["variant"] or ["default"])]
    if o["all_variants"]:
        variants = list(q.BUILTIN_VARIANTS.values())

    async def go(log: Callable[[str], None]) -> dict[str, Any]:
        from tests.support.fake_llm import FakeLlm

        async with (
            FakeLlm() as llm,
            servers_and_stack(mode=o["mode"], log_dir=o["log_dir"]) as (_servers, stack),
        ):
            llm.handler = q.keep_order
            strategies = list(o["strategy"]) or q.DEFAULT_STRATEGIES
            return await q.run_quality(
                stack,
                convs,
                strategies,
                variants,
                data_name=data.name,
                log=log,
                with_protocol=o["protocol"],
                rerank_llm=llm if o["scripted_rerank"] else None,
                publish=o["publish"],
            )

    with running("quality") as log:
        report = asyncio.run(go(log))
    emit(q.render(report), report, o["json_path"])
    return 0


@click.command("latency", context_settings=CONTEXT_SETTINGS)
@click.option(
    "--sizes", type=IntList(allow_empty=True), default="10000,100000", show_default=True, help="one-owner sizes"
)
@click.option("--owners", type=int, default=100, show_default=True, help="many-owner scenario: owners (0 = skip)")
@click.option("--owner-size", type=int, default=1_000, show_default=True, help="many-owner scenario: memories each")
@click.option("--concurrency", type=IntList(allow_empty=True), default="1,16,64", show_default=True)
@click.option("--strategy", multiple=True, type=click.Choice(LATENCY_STRATEGIES), help="repeatable; default all")
@click.option("--questions", type=int, default=200, show_default=True, help="distinct synthetic questions")
@click.option(
    "--requests-per-client", type=int, default=25, show_default=True, help="max(questions, this x c) requests"
)
@click.option(
    "--keyword-index",
    multiple=True,
    type=click.Choice(["statement", "memory"]),
    help="repeatable: each strategy once per keyword tier (the runtime setting keywordIndex); default: as set",
)
@click.option(
    "--rows-in-memory",
    multiple=True,
    type=click.Choice(["on", "off"]),
    help="repeatable: each strategy once per MEMORYD_RETRIEVE_ROWS_IN_MEMORY (the service restarted); default: as set",
)
@click.option(
    "--vectors-in-memory",
    multiple=True,
    type=click.Choice(["on", "off"]),
    help="repeatable: each strategy once per MEMORYD_RETRIEVE_VECTORS_IN_MEMORY (the service restarted); "
    "default: as set",
)
@json_option
@log_dir_option
def latency(**o: Any) -> int:
    """Retrieve latency and throughput vs the in-process floor."""
    from bench import latency as lat
    from bench.harness import servers_and_stack

    async def go(log: Callable[[str], None]) -> dict[str, Any]:
        async with servers_and_stack(services=("embed", "retrieve"), log_dir=o["log_dir"]) as (_servers, stack):
            return await lat.run_latency(
                stack,
                o["sizes"],
                o["owners"],
                o["owner_size"],
                concurrency=o["concurrency"],
                strategies=list(o["strategy"]) or lat.STRATEGIES,
                requests_per_client=o["requests_per_client"],
                n_questions=o["questions"],
                keyword_indexes=list(o["keyword_index"]),
                rows_in_memory=list(o["rows_in_memory"]),
                vectors_in_memory=list(o["vectors_in_memory"]),
                log=log,
            )

    with running("latency") as log:
        report = asyncio.run(go(log))
    emit(lat.render(report), report, o["json_path"])
    return 0


@click.command("embed", context_settings=CONTEXT_SETTINGS)
@click.option("--texts", type=int, default=3000, show_default=True, help="texts embedded per measurement")
@click.option("--batch", type=int, default=16, show_default=True, help="inference batch size (MEMORYD_EMBED_BATCH_MAX)")
@click.option("--workers", type=IntList(), default="1,2", show_default=True, help="worker process counts")
@click.option("--queries", type=int, default=400, show_default=True, help="query RPCs per concurrency level")
@click.option("--concurrency", type=IntList(), default="1,32", show_default=True, help="query concurrency levels")
@click.option("--quantization", type=click.Choice(("none", "dynamic-int8")), default="none", show_default=True)
@json_option
@log_dir_option
def embed(**o: Any) -> int:
    """Embed service throughput vs the raw ONNX Runtime ceiling."""
    from bench.embed import EmbedBenchOptions, render, run_embed_bench

    if o["texts"] < 200:
        raise ValidationFailed("--texts: at least 200, so throughput is not dominated by start-up")
    opts = EmbedBenchOptions(
        texts=o["texts"],
        batch=o["batch"],
        workers=tuple(o["workers"]),
        queries=o["queries"],
        concurrency=tuple(o["concurrency"]),
        quantization=o["quantization"],
        log_dir=o["log_dir"],
    )
    with running("embed") as log:
        report = asyncio.run(run_embed_bench(opts, log))
    emit(render(report), report, o["json_path"])
    return 0


@click.command("sleep", context_settings=CONTEXT_SETTINGS)
@click.option(
    "--sizes",
    type=IntList(10, "sizes must be integers >= 10"),
    default="10000,100000",
    show_default=True,
    help="memories of the one owner",
)
@click.option("--owners", type=int, default=50, show_default=True, help="owners per limit in the many-owners part")
@click.option("--owner-memories", type=int, default=30, show_default=True, help="memories of each of those owners")
@click.option("--llm-latency-ms", type=float, default=500.0, show_default=True, help="scripted LLM latency there")
@click.option(
    "--limits", type=IntList(1, "limits must be integers >= 1"), default="1,4", show_default=True,
    help="sleepMaxConcurrentRuns values to compare",
)  # fmt: skip
@click.option("--owners-only", is_flag=True, help="only the many-owners part")
@json_option
def sleep(
    sizes: list[int],
    owners: int,
    owner_memories: int,
    llm_latency_ms: float,
    limits: list[int],
    owners_only: bool,
    json_path: str | None,
) -> int:
    """A full sleep run's time and LLM tokens (scripted LLM), and runs per hour across many owners."""
    from bench.sleep import render, run_sleep_bench

    with running("sleep") as log:
        report = asyncio.run(
            run_sleep_bench(
                [] if owners_only else sizes,
                log=log,
                owners=owners,
                owner_memories=owner_memories,
                llm_latency_s=llm_latency_ms / 1000,
                limits=limits,
            )
        )
    emit(render(report), report, json_path)
    return 0


@click.command("gateway", context_settings=CONTEXT_SETTINGS)
@click.option("--memories", type=int, default=1000, show_default=True, help="memories of the one owner searched")
@click.option("--concurrency", type=IntList(), default="1,16", show_default=True, help="concurrency levels")
@click.option("--requests", type=int, default=300, show_default=True, help="requests per path and level (>= 25 x c)")
@click.option("--rounds", type=int, default=2, show_default=True, help="alternating rounds per level; best p50 counts")
@json_option
def gateway(memories: int, concurrency: list[int], requests: int, rounds: int, json_path: str | None) -> int:
    """Search over HTTP vs NATS; the chat proxy vs the upstream directly."""
    from bench.gateway import render, run_gateway_bench

    with running("gateway") as log:
        report = asyncio.run(
            run_gateway_bench(memories=memories, concurrency=concurrency, requests=requests, rounds=rounds, log=log)
        )
    emit(render(report), report, json_path)
    return 0


@click.command("tracing", context_settings=CONTEXT_SETTINGS)
@click.option("--size", type=int, default=10_000, show_default=True, help="memories of the one owner searched")
@click.option("--concurrency", type=IntList(), default="1,16", show_default=True, help="concurrency levels")
@click.option("--requests", type=int, default=400, show_default=True, help="requests per mode, round and level")
@click.option("--rounds", type=int, default=2, show_default=True, help="interleaved rounds per mode; the median counts")
@json_option
@log_dir_option
def tracing(**o: Any) -> int:
    """Retrieve latency with trace export off and on (OTLP/HTTP to a local collector), in one run."""
    from bench.harness import servers_and_stack
    from bench.tracing import render, run_tracing

    async def go(log: Callable[[str], None]) -> dict[str, Any]:
        async with servers_and_stack(services=("embed", "retrieve"), log_dir=o["log_dir"]) as (_servers, stack):
            return await run_tracing(
                stack, size=o["size"], rounds=o["rounds"], concurrency=o["concurrency"], requests=o["requests"], log=log
            )

    with running("tracing") as log:
        report = asyncio.run(go(log))
    emit(render(report), report, o["json_path"])
    return 0


@click.command("peers", context_settings=CONTEXT_SETTINGS)
@click.option("--memories", type=IntList(100, "sizes must be integers >= 100"), default="10000", show_default=True)
@click.option("--concurrency", type=IntList(), default="1,16", show_default=True, help="search concurrency levels")
@click.option("--add-concurrency", type=int, default=16, show_default=True, help="adds in flight (both engines)")
@click.option("--questions", type=int, default=200, show_default=True, help="synthetic questions (latency bench's)")
@click.option("--requests-per-client", type=int, default=25, show_default=True, help="max(questions, this x c)")
@click.option("--hit-queries", type=int, default=200, show_default=True, help="keyword queries for the hit rate")
@json_option
@log_dir_option
def peers(**o: Any) -> int:
    """memoryd against mem0 (optional extra: pip install -e '.[peers]'), same corpus and queries."""
    from bench.harness import servers_and_stack
    from bench.peers import mem0_factory, render, run_peers
    from bench.peers_mem0 import installed_version

    if installed_version() is None:
        raise ConfigError("mem0ai", "not installed: pip install -e '.[peers]' (or make bench-peers)")

    async def go(log: Callable[[str], None]) -> dict[str, Any]:
        services = ("ingest", "embed", "retrieve")
        async with servers_and_stack(services=services, log_dir=o["log_dir"]) as (servers, stack):
            factory = await mem0_factory(stack, servers.data_dir / "mem0")
            return await run_peers(
                stack,
                factory,
                o["memories"],
                concurrency=o["concurrency"],
                add_concurrency=o["add_concurrency"],
                n_questions=o["questions"],
                requests_per_client=o["requests_per_client"],
                hit_queries=o["hit_queries"],
                log=log,
            )

    with running("peers") as log:
        report = asyncio.run(go(log))
    emit(render(report), report, o["json_path"])
    return 0


@click.command("keyword-pruning", context_settings=CONTEXT_SETTINGS)
@click.option("--sizes", type=IntList(), default="10000,100000", show_default=True, help="one-owner corpus sizes")
@click.option("--questions", type=int, default=200, show_default=True, help="synthetic questions (latency bench's)")
@click.option("--rounds", type=int, default=2, show_default=True, help="alternating rounds per design")
@click.option("--write", type=int, default=500, show_default=True, help="single inserts for the write cost (0 = skip)")
@json_option
def keyword_pruning(sizes: list[int], questions: int, rounds: int, write: int, json_path: str | None) -> int:
    """The keyword tier's designs side by side: PostgreSQL CPU, latency, postings read, recall vs exact BM25."""
    from bench.keyword_pruning import render, run_keyword_pruning

    with running("keyword-pruning") as log:
        report = asyncio.run(run_keyword_pruning(sizes, questions, max(1, rounds), write, log))
    emit(render(report), report, json_path)
    return 0


COMMANDS = (quality, latency, embed, sleep, gateway, tracing, peers, keyword_pruning)
