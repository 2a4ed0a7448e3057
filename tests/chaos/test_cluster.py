"""memoryd on a three-node JetStream cluster (R3 streams): acknowledged events survive SIGKILL of
one NATS node, then of another (never two at once), and are stored exactly once.

Ingest and extract run with every node's URL and ``MEMORYD_NATS_REPLICAS=3``. The publisher
keeps publishing through the kills (a publish that gets no ack is retried with the same
``Nats-Msg-Id``, so JetStream's duplicate window and ingest's idempotency keep it single).
``MEMORYD_CHAOS_CLUSTER_EVENTS`` sets the size (CI: 300; ``make chaos-cluster``: 10,000);
``MEMORYD_CHAOS_CLUSTER_REPORT`` names a JSON file for the results (recovery per fault = time
from the SIGKILL to the next acknowledged publish).
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from pathlib import Path
from typing import Any

import asyncpg
import nats
import pytest

from shared.codec import encode
from shared.schemas import ChatEvent, ChatMessage
from shared.subjects import CHAT_EVENTS, EVENTS_STREAM, MSG_ID_HEADER
from tests.support.stack import run_services, service_config

from .cluster import NatsCluster

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1800)]


def event(i: int) -> ChatEvent:
    from datetime import UTC, datetime

    return ChatEvent(
        event_id=f"cl-{i}",
        owner=f"owner-{i % 5}",
        session_id=f"s-{i % 5}",
        occurred_at=datetime(2026, 1, 1, tzinfo=UTC),
        messages=[
            ChatMessage(role="user", content=f"I prefer cluster library {i} for this."),
            ChatMessage(role="assistant", content=f"Noted: library {i}."),
        ],
    )


async def publish_reliably(js: nats.js.JetStreamContext, e: ChatEvent, deadline_s: float = 60.0) -> None:
    """Publish until JetStream acks (same message id every try)."""
    end = time.monotonic() + deadline_s
    while True:
        try:
            await js.publish(CHAT_EVENTS, encode(e), headers={MSG_ID_HEADER: e.event_id}, timeout=2.0)
            return
        except (nats.errors.Error, TimeoutError):  # no ack: no leader yet, node gone, reconnecting
            if time.monotonic() > end:
                raise
            await asyncio.sleep(0.2)


def render(r: dict[str, Any]) -> str:
    """The report as the markdown table ``docs/reliability.md`` shows."""
    head = (
        f"{r['events']} chat events on {r['nats_nodes']} NATS nodes, R{r['replicas']} streams, "
        f"published in {r['publish_s']} s while nodes were SIGKILLed one at a time and restarted.\n\n"
    )
    faults = "| fault | at event | until the next acked publish (s) |\n|---|---|---|\n" + "".join(
        f"| {f['fault']} | {f['at_event']} | {f.get('recovery_s')} |\n" for f in r["faults"]
    )
    totals = (
        "\n| events stored | turns expected | turns lost | turns duplicated | facts stored | facts duplicated |\n"
        "|---|---|---|---|---|---|\n"
        f"| {r['events_stored']} | {r['turns_expected']} | {r['turns_lost']} | {r['turns_duplicated']} "
        f"| {r['facts_stored']} | {r['facts_duplicated']} |\n"
    )
    return head + faults + totals


def write_report(path: Path, report: dict[str, Any]) -> None:
    report = {**report, "markdown": render(report)}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(report, indent=2) + "\n")


async def test_r3_cluster_survives_two_node_kills(tmp_path: Path, pg_dsn: str) -> None:
    n = int(os.environ.get("MEMORYD_CHAOS_CLUSTER_EVENTS", "300"))
    cluster = NatsCluster(tmp_path / "nats")
    url = cluster.start()
    try:
        nc = await nats.connect(servers=url.split(","), max_reconnect_attempts=-1, reconnect_time_wait=0.2)
        js = nc.jetstream(timeout=5.0)
        config = service_config(url, pg_dsn, {"MEMORYD_NATS_REPLICAS": "3", "MEMORYD_NATS_ACK_WAIT_S": "5"})
        # JetStream needs a meta leader before streams can be provisioned
        deadline = time.monotonic() + 30
        while True:
            try:
                await js.account_info()
                break
            except Exception:
                if time.monotonic() > deadline:
                    raise
                await asyncio.sleep(0.3)
        async with run_services(["ingest", "extract"], config, timeout=60):
            info = await js.stream_info(EVENTS_STREAM)
            assert info.config.num_replicas == 3
            kills = {n // 4: 0, (3 * n) // 5: 1}  # node 0 at 25 %, node 1 at 60 %
            restarts = {n // 4 + max(1, n // 10): 0, (3 * n) // 5 + max(1, n // 10): 1}
            down: set[int] = set()
            faults: list[dict[str, object]] = []
            started = time.monotonic()
            for i in range(n):
                if i in kills:
                    assert not down, "never two nodes down at once"
                    cluster.kill(kills[i])
                    down.add(kills[i])
                    faults.append({"fault": f"SIGKILL nats node n{kills[i]}", "at_event": i})
                    killed_at = time.monotonic()
                if i in restarts:
                    cluster.restart(restarts[i])
                    down.discard(restarts[i])
                await publish_reliably(js, event(i))
                if i in kills:
                    faults[-1]["recovery_s"] = round(time.monotonic() - killed_at, 3)
            publish_s = time.monotonic() - started
            conn = await asyncpg.connect(pg_dsn)
            try:
                deadline = time.monotonic() + 600
                while True:
                    stored = await conn.fetchval("SELECT count(*) FROM events WHERE event_id LIKE 'cl-%'")
                    facts = await conn.fetchval(
                        "SELECT count(*) FROM memories WHERE source = 'rule' AND content LIKE '%cluster library%'"
                    )
                    if (stored >= n and facts >= n) or time.monotonic() > deadline:
                        break
                    await asyncio.sleep(0.5)
                turns = await conn.fetch(
                    "SELECT content, count(*) AS c FROM memories WHERE source = 'chat_turn'"
                    " AND (content LIKE 'I prefer cluster library %' OR content LIKE 'Noted: library %')"
                    " GROUP BY content"
                )
                facts_rows = await conn.fetch(
                    "SELECT owner, key, count(*) AS c FROM memories WHERE source = 'rule'"
                    " AND content LIKE '%cluster library%' GROUP BY owner, key"
                )
            finally:
                await conn.close()
        await nc.close()
    finally:
        cluster.stop()
    lost_turns = 2 * n - len(turns)
    duplicated_turns = sum(r["c"] - 1 for r in turns)
    duplicated_facts = sum(r["c"] - 1 for r in facts_rows)
    print(
        f"\ncluster: {n} events, turns lost {lost_turns} duplicated {duplicated_turns}, "
        f"facts {len(facts_rows)} duplicated {duplicated_facts}"
    )
    if path := os.environ.get("MEMORYD_CHAOS_CLUSTER_REPORT"):
        report = {
            "events": n,
            "nats_nodes": 3,
            "replicas": 3,
            "faults": faults,
            "publish_s": round(publish_s, 2),
            "events_stored": stored,
            "turns_expected": 2 * n,
            "turns_lost": lost_turns,
            "turns_duplicated": duplicated_turns,
            "facts_stored": len(facts_rows),
            "facts_duplicated": duplicated_facts,
        }
        write_report(Path(path), report)
    assert stored == n
    assert (lost_turns, duplicated_turns) == (0, 0)
    assert (len(facts_rows), duplicated_facts) == (n, 0)
