"""The benchmark commands (``python -m bench quality|latency|embed|sleep``); ``cli_ingest`` adds
``ingest`` and ``readme``. Each benchmark starts its own embedded stack."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from shared.errors import ValidationFailed


def int_list(
    minimum: int = 1, message: str = "every value must be >= 1", *, allow_empty: bool = False
) -> Callable[[str], list[int]]:
    """An argparse ``type`` for ``10_000,100000``: integers >= ``minimum`` (else ``message``)."""

    def parse(text: str) -> list[int]:
        try:
            values = [int(x.replace("_", "")) for x in text.split(",") if x.strip()]
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a comma-separated list of integers") from None
        if (not values and not allow_empty) or any(v < minimum for v in values):
            raise argparse.ArgumentTypeError(message)
        return values

    return parse


_ints = int_list(allow_empty=True)


def _repo_root() -> Path:
    return Path(__file__).resolve().parents[2]


def _log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def emit(text: str, report: dict[str, Any], json_path: str | None) -> None:
    """Print a benchmark's tables; with ``--json``, also write the report there."""
    from bench.report import write_json

    print(text, flush=True)
    if json_path:
        write_json(Path(json_path), report)
        _log(f"wrote {json_path}")


async def cmd_quality(args: argparse.Namespace) -> int:
    from bench import locomo, quality
    from bench.harness import ServiceStack, embedded_servers

    data = Path(args.data) if args.data else quality.default_data_path(_repo_root())
    if not data.exists():
        print(f"bench quality: skipped: no data file at {data} (pass --data PATH)", flush=True)
        return 0
    convs = locomo.load(data)[: args.conversations or None]
    variants = [quality.parse_variant(v) for v in (args.variant or ["default"])]
    if args.all_variants:
        variants = list(quality.BUILTIN_VARIANTS.values())
    async with (
        embedded_servers() as servers,
        ServiceStack(servers.nats_url, servers.pg_dsn, mode=args.mode, servers=servers, log_dir=args.log_dir) as stack,
    ):
        report = await quality.run_quality(
            stack, convs, args.strategy or quality.DEFAULT_STRATEGIES, variants, data_path=str(data), log=_log
        )
    emit(quality.render(report), report, args.json)
    return 0


async def cmd_latency(args: argparse.Namespace) -> int:
    from bench import latency
    from bench.harness import ServiceStack, embedded_servers

    async with (
        embedded_servers() as servers,
        ServiceStack(
            servers.nats_url, servers.pg_dsn, services=("embed", "retrieve"), servers=servers, log_dir=args.log_dir
        ) as stack,
    ):
        report = await latency.run_latency(
            stack,
            args.sizes,
            args.owners,
            args.owner_size,
            concurrency=args.concurrency,
            strategies=args.strategy or latency.STRATEGIES,
            requests_per_client=args.requests_per_client,
            n_questions=args.questions,
            log=_log,
        )
    emit(latency.render(report), report, args.json)
    return 0


async def cmd_embed(args: argparse.Namespace) -> int:
    from bench.embed import EmbedBenchOptions, render, run_embed_bench

    if args.texts < 200:
        raise ValidationFailed("--texts: at least 200, so throughput is not dominated by start-up")
    opts = EmbedBenchOptions(
        texts=args.texts,
        batch=args.batch,
        workers=tuple(args.workers),
        queries=args.queries,
        concurrency=tuple(args.concurrency),
        quantization=args.quantization,
        log_dir=args.log_dir,
    )
    report = await run_embed_bench(opts, _log)
    emit(render(report), report, args.json)
    return 0


async def cmd_sleep(args: argparse.Namespace) -> int:
    from bench.report import write_json
    from bench.sleep import render, run_sleep_bench

    report = await run_sleep_bench(args.sizes, log=_log)
    print(render(report), flush=True)
    if args.json:
        write_json(Path(args.json), report)
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    from bench.latency import STRATEGIES as LATENCY_STRATEGIES
    from bench.quality import BUILTIN_VARIANTS, STRATEGIES

    bench = sub
    q = bench.add_parser("quality", help="LoCoMo retrieval quality through the services (R@k, All@k)")
    q.add_argument("--data", help="LoCoMo JSON (default ../shared/data/locomo/locomo_dev.json from the repo root)")
    q.add_argument("--json", help="also write the report as JSON to this file")
    q.add_argument("--strategy", action="append", choices=sorted(STRATEGIES), help="repeatable; default all three")
    q.add_argument(
        "--variant",
        action="append",
        help=f"repeatable: {', '.join(BUILTIN_VARIANTS)}, or name:key=value,... (settings, MEMORYD_RETRIEVE_*, types)",
    )
    q.add_argument("--all-variants", action="store_true", help="run every built-in variant")
    q.add_argument("--conversations", type=int, default=0, help="only the first N conversations (0 = all)")
    q.add_argument("--mode", choices=("processes", "inprocess"), default="processes", help="how services run")
    q.add_argument("--log-dir", type=Path, help="service logs (processes mode)")
    q.set_defaults(func=cmd_quality)

    lat = bench.add_parser("latency", help="retrieve latency and throughput vs the in-process floor")
    lat.add_argument("--sizes", type=_ints, default=[10_000, 100_000], help="single-owner sizes (default 10000,100000)")
    lat.add_argument("--owners", type=int, default=100, help="many-owner scenario: owners (0 = skip)")
    lat.add_argument("--owner-size", type=int, default=1_000, help="many-owner scenario: memories per owner")
    lat.add_argument("--concurrency", type=_ints, default=[1, 16, 64], help="default 1,16,64")
    lat.add_argument("--strategy", action="append", choices=LATENCY_STRATEGIES, help="repeatable; default all")
    lat.add_argument("--questions", type=int, default=200, help="distinct synthetic questions")
    lat.add_argument("--requests-per-client", type=int, default=25, help="requests = max(questions, this x c)")
    lat.add_argument("--json", help="also write the report as JSON to this file")
    lat.add_argument("--log-dir", type=Path, help="service logs")
    lat.set_defaults(func=cmd_latency)

    b = bench.add_parser("embed", help="embed service throughput vs the raw ONNX Runtime ceiling")
    b.add_argument("--texts", type=int, default=3000, help="texts embedded per measurement (default 3000)")
    b.add_argument("--batch", type=int, default=16, help="inference batch size (MEMORYD_EMBED_BATCH_MAX, default 16)")
    b.add_argument("--workers", type=int_list(), default=(1, 2), help="worker process counts (default 1,2)")
    b.add_argument("--queries", type=int, default=400, help="query RPCs per concurrency level")
    b.add_argument("--concurrency", type=int_list(), default=(1, 32), help="query concurrency levels (default 1,32)")
    b.add_argument("--quantization", choices=("none", "dynamic-int8"), default="none")
    b.add_argument("--json", help="also write the report as JSON to this file")
    b.add_argument("--log-dir", type=Path, help="keep the workers' logs here")
    b.set_defaults(func=cmd_embed)

    slp = bench.add_parser("sleep", help="a full sleep run's time and LLM tokens (scripted LLM)")
    slp.add_argument(
        "--sizes",
        type=int_list(10, "sizes must be integers >= 10"),
        default=[10_000, 100_000],
        help="memories of the one owner, e.g. 10000",
    )
    slp.add_argument("--json", help="also write the report as JSON to this file")
    slp.set_defaults(func=cmd_sleep)
