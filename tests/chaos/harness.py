"""Chaos run on the real embedded stack: publish chat events from several owners while, one
at a time, each service process is SIGKILLed (and restarted by the supervisor), NATS is
restarted and PostgreSQL is restarted; then check that every event's turns and facts are
stored exactly once, every memory has its vector, nothing is stuck unacked and the DLQ holds
only the deliberately poisoned messages.

    python -m tests.chaos.harness --events 10000      # the full run (make chaos)

The pytest entry (tests/chaos/test_chaos.py) runs a reduced size in CI.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import signal
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import asyncpg
import nats
from nats.aio.client import Client

from bench.report import environment
from memoryd.local.nats import EmbeddedNats
from memoryd.local.postgres import EmbeddedPostgres
from memoryd.local.supervisor import Supervisor, child_env
from memoryd.local.up import apply_migrations, ensure_database
from shared.bus.rpc_client import call
from shared.codec import encode
from shared.schemas import HEALTH_OP, ChatEvent, ChatMessage
from shared.schemas.ops import HealthRequest
from shared.subjects import CHAT_EVENTS, DLQ_STREAM, MSG_ID_HEADER

SERVICES = ("ingest", "extract", "embed", "retrieve", "sleep")
POISON = 3


@dataclass
class FaultRecord:
    fault: str
    at_s: float
    recovery_s: float | None = None


@dataclass
class ChaosReport:
    events_published: int
    poison_published: int
    events_stored: int = 0
    duplicates: int = 0
    lost: int = 0
    facts_missing: int = 0
    facts_duplicated: int = 0
    memories: int = 0
    memories_without_vector: int = 0
    unacked: dict[str, int] = field(default_factory=dict)
    dlq: int = 0
    faults: list[FaultRecord] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return (
            self.lost == 0
            and self.duplicates == 0
            and self.facts_missing == 0
            and self.facts_duplicated == 0
            and self.memories_without_vector == 0
            and not any(self.unacked.values())
            and self.dlq == self.poison_published
        )

    def table(self) -> str:
        rows = [
            "| faults injected | events published | stored | duplicates | lost | facts missing | "
            "memories without vector | unacked | DLQ (expected) |",
            "|---|---|---|---|---|---|---|---|---|",
            f"| {len(self.faults)} | {self.events_published} | {self.events_stored} | {self.duplicates} | {self.lost} "
            f"| {self.facts_missing} | {self.memories_without_vector} | {sum(self.unacked.values())} "
            f"| {self.dlq} ({self.poison_published}) |",
            "",
            "| fault | injected at (s) | recovery (s) |",
            "|---|---|---|",
        ]
        rows += [
            f"| {f.fault} | {f.at_s:.1f} | {'n/a' if f.recovery_s is None else f'{f.recovery_s:.2f}'} |"
            for f in self.faults
        ]
        return "\n".join(rows)


def event(owner: str, i: int) -> ChatEvent:
    return ChatEvent(
        event_id=f"chaos-{i}",
        owner=owner,
        session_id=f"s-{owner}",
        occurred_at=datetime.now(UTC),
        messages=[
            ChatMessage(role="user", content=f"I prefer chaos tool {i}. Event {i} of the chaos run."),
            ChatMessage(role="assistant", content=f"Noted: chaos tool {i} it is (reply {i})."),
        ],
    )


class Stack:
    """Embedded NATS + PostgreSQL + the five services as supervised child processes."""

    def __init__(self, root: Path) -> None:
        self.nats = EmbeddedNats(root / "nats")
        self.pg = EmbeddedPostgres(root / "pg")
        self.root = root
        self.sup: Supervisor | None = None
        self.dsn = ""

    async def start(self) -> None:
        self.nats.start()
        self.nats.requested_port = self.nats.port  # restarts keep the port
        admin = self.pg.start(fsync=False)
        self.pg.requested_port = self.pg.port
        await ensure_database(admin, "memoryd")
        self.dsn = self.pg.dsn("memoryd")
        await apply_migrations(self.dsn)
        env = child_env(
            {
                "MEMORYD_NATS_URL": self.nats.url,
                "MEMORYD_PG_DSN": self.dsn,
                "MEMORYD_METRICS_PORT": "0",
                "MEMORYD_NATS_ACK_WAIT_S": "10",
                "MEMORYD_LOG_LEVEL": "warning",
            }
        )
        self.sup = Supervisor(env)
        (self.root / "logs").mkdir(exist_ok=True)
        for name in SERVICES:
            self.sup.add(name, 0, log_path=self.root / "logs" / f"{name}.log")
        await self.sup.start_all(timeout=120)

    async def stop(self) -> None:
        if self.sup is not None:
            await self.sup.stop_all()
        self.nats.stop()
        self.pg.stop()

    def kill_service(self, name: str) -> None:
        assert self.sup is not None
        child = next(c for c in self.sup.children if c.name == name)
        assert child.proc is not None
        child.proc.send_signal(signal.SIGKILL)

    async def restart_nats(self) -> None:
        self.nats.stop()
        await asyncio.sleep(0.5)
        self.nats.start()

    async def restart_postgres(self) -> None:
        self.pg.stop()
        await asyncio.sleep(0.5)
        self.pg.start(fsync=False)


async def publish_all(nc: Client, events: list[ChatEvent], poison: int, done: asyncio.Event, rate: float) -> None:
    """Publish every event, retrying each (same Nats-Msg-Id) until JetStream acks it."""
    js = nc.jetstream()
    items: list[tuple[str, bytes]] = [(e.event_id, encode(e)) for e in events]
    items += [(f"poison-{i}", b"\x00not json " + str(i).encode()) for i in range(poison)]
    gap = 1.0 / rate if rate > 0 else 0.0
    for msg_id, data in items:
        while True:
            try:
                await js.publish(CHAT_EVENTS, data, headers={MSG_ID_HEADER: msg_id}, timeout=2.0)
                break
            except Exception:
                await asyncio.sleep(0.2)
        if gap:
            await asyncio.sleep(gap)
    done.set()


async def _count(pool_dsn: str, sql: str, *args: Any) -> int:
    conn = await asyncpg.connect(pool_dsn, timeout=5)
    try:
        return int(await conn.fetchval(sql, *args) or 0)
    finally:
        await conn.close()


async def all_healthy(nats_url: str) -> bool:
    """Every service answers its health RPC with status ok (NATS and Postgres reachable)."""
    try:
        nc = await nats.connect(nats_url, allow_reconnect=False, connect_timeout=1)
    except Exception:
        return False
    try:
        for name in SERVICES:
            result = await call(nc, HEALTH_OP, HealthRequest(), subject=f"mem.v1.rpc.health.{name}", timeout=1.0)
            if result.status != "ok":
                return False
        return True
    except Exception:
        return False
    finally:
        await nc.close()


async def wait_healthy(nats_url: str, timeout: float) -> float | None:
    """Seconds until every service is healthy again (None on timeout)."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        if await all_healthy(nats_url):
            return time.monotonic() - t0
        await asyncio.sleep(0.1)
    return None


async def inject_faults(stack: Stack, started: float, report: ChaosReport) -> None:
    """One fault at a time; each waits until every service is healthy again."""
    faults: list[tuple[str, Callable[[], Awaitable[None]]]] = []
    for name in SERVICES:

        async def kill(name: str = name) -> None:
            stack.kill_service(name)
            await asyncio.sleep(0.3)  # the supervisor notices and restarts it

        faults.append((f"SIGKILL {name}", kill))
    faults += [("restart NATS", stack.restart_nats), ("restart PostgreSQL", stack.restart_postgres)]
    for label, fault in faults:
        await asyncio.sleep(1.0)
        record = FaultRecord(fault=label, at_s=time.monotonic() - started)
        await fault()
        record.recovery_s = await wait_healthy(stack.nats.url, timeout=90)
        report.faults.append(record)


async def wait_quiet(stack: Stack, n_events: int, timeout: float) -> None:
    """Until every event is stored, nothing is pending and every memory has a vector."""
    nc = await nats.connect(stack.nats.url)
    try:
        js = nc.jetstream()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            pending = 0
            for stream, durable in (("MEM_EVENTS", "ingest"), ("MEM_JOBS", "extract"), ("MEM_JOBS", "embed")):
                try:
                    info = await js.consumer_info(stream, durable)
                    pending += (info.num_pending or 0) + (info.num_ack_pending or 0)
                except Exception:
                    pending += 1
            stored = await _count(stack.dsn, "SELECT count(*) FROM events")
            unembedded = await _count(stack.dsn, "SELECT count(*) FROM memories WHERE needs_reindex")
            if pending == 0 and stored >= n_events and unembedded == 0:
                return
            await asyncio.sleep(1.0)
    finally:
        await nc.close()


async def verify(stack: Stack, events: list[ChatEvent], report: ChaosReport) -> None:
    conn = await asyncpg.connect(stack.dsn)
    try:
        report.events_stored = int(await conn.fetchval("SELECT count(*) FROM events") or 0)
        rows = await conn.fetch(
            "SELECT metadata->>'event_id' AS e, count(*) AS n FROM memories WHERE source = 'chat_turn' GROUP BY 1"
        )
        turns = {r["e"]: r["n"] for r in rows}
        report.lost = sum(1 for e in events if turns.get(e.event_id, 0) == 0)
        report.duplicates = sum(1 for e in events if turns.get(e.event_id, 0) > len(e.messages))
        keys = await conn.fetch("SELECT key, owner FROM memories WHERE source = 'rule'")
        have = {(r["owner"], r["key"]) for r in keys}
        report.facts_missing = sum(
            1 for i, e in enumerate(events) if (e.owner, f"preference:chaos_tool_{i}") not in have
        )
        report.facts_duplicated = len(keys) - len(have)
        report.memories = int(await conn.fetchval("SELECT count(*) FROM memories") or 0)
        report.memories_without_vector = int(
            await conn.fetchval(
                "SELECT count(*) FROM memories m WHERE NOT EXISTS"
                " (SELECT 1 FROM memory_embeddings e WHERE e.memory_id = m.id)"
            )
            or 0
        )
    finally:
        await conn.close()
    nc = await nats.connect(stack.nats.url)
    try:
        js = nc.jetstream()
        for stream, durable in (("MEM_EVENTS", "ingest"), ("MEM_JOBS", "extract"), ("MEM_JOBS", "embed")):
            info = await js.consumer_info(stream, durable)
            report.unacked[durable] = (info.num_pending or 0) + (info.num_ack_pending or 0)
        report.dlq = int((await js.stream_info(DLQ_STREAM)).state.messages)
    finally:
        await nc.close()


async def run_chaos(
    n_events: int, owners: int = 5, rate: float = 0.0, root: Path | None = None, settle_timeout: float = 900.0
) -> ChaosReport:
    root = root or Path(tempfile.mkdtemp(prefix="memoryd-chaos-"))
    stack = Stack(root)
    events = [event(f"owner-{i % owners}", i) for i in range(n_events)]
    report = ChaosReport(events_published=n_events, poison_published=POISON)
    started = time.monotonic()
    await stack.start()
    try:
        nc = await nats.connect(stack.nats.url, max_reconnect_attempts=-1, reconnect_time_wait=0.2)
        done = asyncio.Event()
        rate = rate or max(5.0, n_events / 60.0)  # spread publishing over ~60 s so faults land during it
        publisher = asyncio.create_task(publish_all(nc, events, POISON, done, rate))
        await inject_faults(stack, started, report)
        await publisher
        await nc.close()
        await wait_quiet(stack, n_events, settle_timeout)
        await verify(stack, events, report)
    finally:
        report.seconds = time.monotonic() - started
        await stack.stop()
    return report


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=10_000)
    parser.add_argument("--owners", type=int, default=5)
    parser.add_argument("--json", help="write the report as JSON here")
    args = parser.parse_args()
    report = asyncio.run(run_chaos(args.events, args.owners))
    print(report.table())
    print(f"\n{'PASS' if report.ok else 'FAIL'} in {report.seconds:.0f} s")
    if args.json:
        env = environment()
        saved = {
            **json.loads(json.dumps(report.__dict__, default=lambda o: o.__dict__)),
            "ok": report.ok,
            "markdown": f"{report.table()}\n\n{'PASS' if report.ok else 'FAIL'} in {report.seconds:.0f} s "
            f"({args.events:,} events, {args.owners} owners, {env['cpus']} CPUs)",  # the time stays in the JSON
            "environment": env,
        }
        Path(args.json).write_text(json.dumps(saved, indent=2))
    return 0 if report.ok else 1


if __name__ == "__main__":
    sys.exit(main())
