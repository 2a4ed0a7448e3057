"""``python -m bench ingest``: chat events per second through ingest + extract, to committed rows.

A backlog of N chat events (several owners, a user turn stating a preference and an
assistant reply each) is published to ``mem.v1.events.chat`` first; then ingest and extract
start as child processes and the clock runs until every event's turns are stored (the
``events`` table) and every extract job has committed its facts (the ``extract_runs``
table). Where the time goes: each stage's own finish time and the CPU seconds of ingest,
extract, PostgreSQL and nats-server over the run. Embedding is measured by
``python -m bench embed``; its jobs are left queued here.

The run is made twice, side by side in one invocation: with JetStream's
``sync_interval: always`` (an fsync before every ack, how ``memoryd up`` and the deploy
config run NATS) and with the server's default (an fsync every 2 minutes), so the cost of
durability on power loss is a ratio measured on the same machine at the same time.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import asyncpg
import nats

from bench.harness import SYNC_ALWAYS, ServiceStack, cpu_delta, embedded_servers, wait_until
from bench.report import environment, markdown_table, render_peak_rss
from memoryd.codec import encode
from memoryd.schemas import ChatEvent, ChatMessage
from memoryd.subjects import CHAT_EVENTS, MSG_ID_HEADER, chat_msg_id
from shared.bus.provision import ensure_streams
from shared.settings.env import NatsConfig


def bench_events(n: int, owners: int = 50) -> list[ChatEvent]:
    now = datetime.now(UTC)
    return [
        ChatEvent(
            event_id=f"bench-{i}",
            owner=f"owner-{i % owners}",
            session_id=f"s-{i % owners}-{i // 200}",
            occurred_at=now,
            messages=[
                ChatMessage(role="user", content=f"I prefer library number {i} for this project. Deadline is day {i}."),
                ChatMessage(role="assistant", content=f"Understood, library {i} it is; I will remember day {i}."),
            ],
        )
        for i in range(n)
    ]


#: The JetStream fsync policies compared: memoryd's default first, then the server's own default.
SYNC_MODES: tuple[str, ...] = (SYNC_ALWAYS, "2m")


async def run_ingest_bench(n: int, log: Callable[[str], None], modes: tuple[str, ...] = SYNC_MODES) -> dict[str, Any]:
    """One run per JetStream fsync policy in ``modes``; the first one's numbers are the headline."""
    runs = []
    for mode in modes:
        log(f"sync_interval {mode}:")
        runs.append(await run_one(n, log, mode))
    return {**runs[0], "runs": runs, "environment": environment()}


async def run_one(n: int, log: Callable[[str], None], nats_sync: str) -> dict[str, Any]:
    events = bench_events(n)
    async with embedded_servers(nats_sync=nats_sync) as servers:
        nc = await nats.connect(servers.nats_url)
        js = nc.jetstream()
        await ensure_streams(js, NatsConfig())
        t0 = time.monotonic()
        for e in events:
            data = encode(e)
            await js.publish(CHAT_EVENTS, data, headers={MSG_ID_HEADER: chat_msg_id(e.owner, e.event_id, data)})
        publish_s = time.monotonic() - t0
        await nc.close()
        log(f"published {n} events in {publish_s:.1f} s; starting ingest + extract")
        conn = await asyncpg.connect(servers.pg_dsn)
        finished: dict[str, float] = {}
        stack_cfg = ServiceStack(servers.nats_url, servers.pg_dsn, services=("ingest", "extract"), servers=servers)
        async with stack_cfg as stack:
            cpu0 = stack.cpu_seconds()
            start = time.monotonic()

            async def done() -> bool:
                stored = await conn.fetchval("SELECT count(*) FROM events")
                extracted = await conn.fetchval("SELECT count(*) FROM extract_runs")
                if stored >= n and "ingest" not in finished:
                    finished["ingest"] = time.monotonic() - start
                if extracted >= n and "extract" not in finished:
                    finished["extract"] = time.monotonic() - start
                return bool(stored >= n and extracted >= n)

            await wait_until(done, timeout=3600, interval=0.2, what="all events ingested and extracted")
            total = time.monotonic() - start
            cpu = cpu_delta(cpu0, stack.cpu_seconds())
            peak_rss = stack.peak_rss_mb()
        turns = await conn.fetchval("SELECT count(*) FROM memories WHERE source = 'chat_turn'")
        facts = await conn.fetchval("SELECT count(*) FROM memories WHERE source = 'rule'")
        await conn.close()
    return {
        "nats_sync_interval": nats_sync,
        "publish_events_per_s": n / publish_s,
        "events": n,
        "turns_stored": int(turns),
        "facts_stored": int(facts),
        "seconds": total,
        "events_per_s": n / total,
        "ingest_done_s": finished.get("ingest"),
        "extract_done_s": finished.get("extract"),
        "cpu_seconds": cpu,
        "peak_rss_mb": peak_rss,
    }


def render(r: dict[str, Any]) -> str:
    head = (
        f"Ingest + extract: {r['events']} chat events (2 turns each, 50 owners) from a backlog to committed rows: "
        f"{r['turns_stored']} turns, {r['facts_stored']} facts\n\n"
    )
    runs = r.get("runs") or [r]
    table = markdown_table(
        [
            "JetStream sync_interval",
            "events",
            "publish events/s",
            "seconds",
            "events/s",
            "ingest done (s)",
            "extract done (s)",
        ],
        [
            [
                run.get("nats_sync_interval", "2m"),
                run["events"],
                run.get("publish_events_per_s"),
                run["seconds"],
                run["events_per_s"],
                run["ingest_done_s"],
                run["extract_done_s"],
            ]
            for run in runs
        ],
        digits=1,
    )
    cpu = markdown_table(
        ["process", "CPU s", "CPU ms per event"],
        [[k, v, 1000 * v / r["events"]] for k, v in sorted(r["cpu_seconds"].items(), key=lambda kv: -kv[1])],
        digits=2,
    )
    if len(runs) > 1:
        base = runs[-1]
        table += (
            f"\n\n`sync_interval: always` runs at {runs[0]['events_per_s'] / base['events_per_s']:.2f}x "
            f"the end-to-end events/s and {ratio(runs[0], base, 'publish_events_per_s')} the publish rate "
            f"of `sync_interval: {base.get('nats_sync_interval')}`."
        )
    memory = "".join(
        f"\n\n`sync_interval: {run.get('nats_sync_interval', '2m')}`: {render_peak_rss(run['peak_rss_mb'])}"
        for run in runs
        if run.get("peak_rss_mb")
    )
    return head + table + "\n\nWhere the time goes (CPU over the run):\n\n" + cpu + memory


def ratio(a: dict[str, Any], b: dict[str, Any], key: str) -> str:
    if not a.get(key) or not b.get(key):
        return "n/a"
    return f"{a[key] / b[key]:.2f}x"
