"""``python -m bench ingest [--events N] [--json OUT]`` (see ``bench/ingest.py``) and
``python -m bench readme`` (see ``bench/readme.py``)."""

from __future__ import annotations

import argparse
from pathlib import Path

from bench.cli import _log


async def _run(args: argparse.Namespace) -> int:
    from bench.ingest import render, run_ingest_bench
    from bench.report import write_json

    report = await run_ingest_bench(args.events, log=_log)
    print(render(report), flush=True)
    if args.json:
        write_json(Path(args.json), report)
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("ingest", help="chat events/s through ingest + extract (to committed rows)")
    parser.add_argument("--events", type=int, default=10_000)
    parser.add_argument("--json", help="also write the report as JSON here")
    parser.set_defaults(func=_run)
    register_readme(sub)


def _readme(args: argparse.Namespace) -> int:
    from bench.readme import update_readme

    done = update_readme(Path(args.readme), Path(args.results))
    print(f"README tables regenerated from {args.results}: {', '.join(done) or 'none found'}")
    return 0


def register_readme(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("readme", help="regenerate the README's tables from bench-results/")
    parser.add_argument("--readme", default="README.md")
    parser.add_argument("--results", default="bench-results")
    parser.set_defaults(func=_readme)
