"""``memoryd health [SERVICE] [--deep]`` and ``memoryd status [--owner O]`` (over NATS).

``health`` asks one service (or whichever answers first) for its health and lists its
checks; it exits 1 when the service reports ``degraded``. ``status`` shows the retrieval
engine: keyword tier, embedding, vector stores, pending re-embedding, fallbacks and lag.
"""

from __future__ import annotations

import json
from typing import Any

import click

from memoryd.cli.commands_server import SERVICES
from memoryd.cli.common import (
    CONTEXT_SETTINGS,
    cells,
    json_option,
    nats_options,
    owner_option,
    print_table,
    print_wire,
    table,
    timeout_option,
    with_client,
)
from memoryd.client import MemoryClient


@click.command("health", context_settings=CONTEXT_SETTINGS)
@click.argument("service", required=False, type=click.Choice(SERVICES), metavar="[SERVICE]")
@click.option("--deep", is_flag=True, help="also check the service's dependencies (Postgres, stores, model)")
@json_option("print the HealthResult as JSON")
@timeout_option()
@nats_options
@with_client
async def health(client: MemoryClient, *, service: str | None, deep: bool, as_json: bool, **_: Any) -> int:
    """Health of one service, or of whichever answers first.

    SERVICE is one of ingest, extract, embed, retrieve, sleep. Exits 1 when degraded.
    """
    result = await client.health(service, deep=deep)
    if as_json:
        print_wire(result)
    else:
        latency = f" in {result.latency_ms:.1f} ms" if result.latency_ms is not None else ""
        print(f"{result.service} {result.version}: {result.status}{latency}")
        if result.checks:
            rows = table("check", "result")
            for name in sorted(result.checks):
                rows.add_row(*cells(name, result.checks[name]))
            print_table(rows)
    return 0 if result.status == "ok" else 1


@click.command("status", context_settings=CONTEXT_SETTINGS)
@owner_option(required=False, help_text="this owner's effective engine (default: the global one)")
@json_option("print the EngineStatusResult as JSON")
@timeout_option()
@nats_options
@with_client
async def status(client: MemoryClient, *, owner: str | None, as_json: bool, **_: Any) -> int:
    """Show the retrieval engine's state.

    Keyword tier, embedding, vector stores, memories waiting to be re-embedded, fallbacks, lag.
    """
    result = await client.engine_status(owner)
    if as_json:
        print_wire(result)
        return 0
    rows = table("part", "state")
    rows.add_row(*cells("keyword tier", result.keyword_tier))
    for name, value in (("embedding", result.embedding), ("vector stores", result.vector_stores)):
        rows.add_row(*cells(name, json.dumps(value, ensure_ascii=False, default=str)))
    rows.add_row(*cells("pending reindex", result.pending_reindex))
    for name, counts in (("fallbacks", result.fallbacks), ("lag", result.lag)):
        if counts:
            rows.add_row(*cells(name, ", ".join(f"{k}={v}" for k, v in sorted(counts.items()))))
    print_table(rows)
    return 0


COMMANDS = (health, status)
