"""Chaos run on the real stack: traffic while services, NATS and PostgreSQL are killed, then checks.

Chat events from five owners, searches and sleep runs, while the fault plan SIGKILLs services,
NATS and PostgreSQL (``fsync=on``), one fault and two at once; afterwards every event's turns and
facts are stored exactly once, every memory has its vector, nothing is unacked, the DLQ holds only
the deliberately poisoned messages, and no search returned another owner's data or a 5xx.

    python -m tests.chaos.harness --events 10000 --json bench-results/chaos.json      # make chaos
    python -m tests.chaos.harness --cluster --events 10000 --json bench-results/chaos-cluster.json

``--cluster``: three ``nats-server`` nodes (R3) and two embed processes (tests/chaos/faults.py);
the pytest entries run reduced sizes. No Qdrant store takes part: its local mode allows one
process only, and embed and retrieve are separate processes.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import asyncpg
import nats
from nats.aio.client import Client

from bench.report import environment
from memoryd.codec import encode
from memoryd.rpc import call
from memoryd.schemas import HEALTH_OP, ChatEvent, ChatMessage
from memoryd.schemas.ops import HealthRequest
from memoryd.subjects import ALL_STREAM_SUBJECTS, CHAT_EVENTS, MSG_ID_HEADER

from .faults import Fault, cluster_plan, single_plan
from .load import SearchLoad, SleepLoad, window_stats
from .report import CONSUMERS, ChaosReport, FaultRecord, count_bus, count_store
from .stack import SERVICES, ChaosStack

POISON = 3
OWNERS = 5
#: each owner's pause between searches once the faults are over (the backlog drains meanwhile)
DRAIN_PACE_S = 1.0


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


async def connect(url: str) -> Client:
    return await nats.connect(servers=url.split(","), max_reconnect_attempts=-1, reconnect_time_wait=0.2)


async def publish_all(nc: Client, events: list[ChatEvent], poison: int, rate: float) -> None:
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
            except Exception:  # no ack (server down, no leader yet): publish it again
                await asyncio.sleep(0.2)
        if gap:
            await asyncio.sleep(gap)


async def all_healthy(url: str) -> bool:
    """Every service answers its health RPC with status ok (NATS and PostgreSQL reachable)."""
    try:
        nc = await nats.connect(servers=url.split(","), allow_reconnect=False, connect_timeout=1)
    except Exception:  # not healthy yet
        return False
    try:
        for name in SERVICES:
            result = await call(nc, HEALTH_OP, HealthRequest(), subject=f"mem.v1.rpc.health.{name}", timeout=1.0)
            if result.status != "ok":
                return False
        return True
    except Exception:  # not healthy yet
        return False
    finally:
        await nc.close()


async def wait_healthy(url: str, timeout: float) -> float | None:
    """time.monotonic() once every service is healthy again (None on timeout)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if await all_healthy(url):
            return time.monotonic()
        await asyncio.sleep(0.1)
    return None


async def wait_replicas_current(url: str, timeout: float = 120.0) -> None:
    """Until every replica of every stream is current (a restarted node has caught up)."""
    nc = await nats.connect(servers=url.split(","))
    try:
        js = nc.jetstream(timeout=5)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                infos = [await js.stream_info(name) for name in ALL_STREAM_SUBJECTS]
                if all(all(r.current for r in (i.cluster.replicas or [])) for i in infos if i.cluster):
                    return
            except Exception:  # no leader yet
                pass
            await asyncio.sleep(0.5)
    finally:
        await nc.close()


async def inject(stack: ChaosStack, plan: list[Fault], started: float, report: ChaosReport, gap_s: float) -> None:
    for fault in plan:
        await asyncio.sleep(gap_s)
        t0 = time.monotonic()
        restored = await fault.act()
        healthy = await wait_healthy(stack.url, timeout=180)
        record = FaultRecord(fault=fault.label, at_s=round(t0 - started, 2), outage_s=round(restored - t0, 2))
        record.recovery_s = None if healthy is None else round(healthy - restored, 2)
        record.search = {"window": [t0, healthy or time.monotonic()]}
        report.faults.append(record)
        if stack.cluster:
            await wait_replicas_current(stack.url)


async def wait_quiet(stack: ChaosStack, n_events: int, timeout: float) -> None:
    """Until every event is stored, no consumer has anything pending and every memory is embedded."""
    nc = await connect(stack.url)
    try:
        js = nc.jetstream(timeout=5)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            pending = 0
            for stream, durable in CONSUMERS:
                try:
                    info = await js.consumer_info(stream, durable)
                    pending += (info.num_pending or 0) + (info.num_ack_pending or 0)
                except Exception:  # not answering yet: not quiet
                    pending += 1
            conn = await asyncpg.connect(stack.dsn, timeout=5)
            try:
                stored = int(await conn.fetchval("SELECT count(*) FROM events") or 0)
                unembedded = int(await conn.fetchval("SELECT count(*) FROM memories WHERE needs_reindex") or 0)
            finally:
                await conn.close()
            if pending == 0 and stored >= n_events and unembedded == 0:
                return
            await asyncio.sleep(1.0)
    finally:
        await nc.close()


def search_summary(load: SearchLoad, report: ChaosReport, end: float) -> None:
    """Per-fault search windows, the calm rest of the run and the totals."""
    windows = []
    for f in report.faults:
        start, stop = f.search.pop("window")
        f.search = window_stats(load.samples, start, stop)
        windows.append((start, stop))
    calm = [s for s in load.samples if not any(a <= s.at < b for a, b in windows)]
    report.search_calm = window_stats(calm, 0.0, end)
    report.search_total = window_stats(load.samples, 0.0, end)
    report.search_errors = dict(load.errors)


async def run_chaos(
    n_events: int,
    *,
    cluster: bool = False,
    root: Path | None = None,
    rate: float = 0.0,
    down_s: float = 2.0,
    gap_s: float = 2.0,
    short: bool = False,
    settle_timeout: float = 3600.0,
) -> ChaosReport:
    root = root or Path(tempfile.mkdtemp(prefix="memoryd-chaos-"))
    stack = ChaosStack(root, cluster=cluster, embed_workers=2 if cluster else 1)
    events = [event(f"owner-{i % OWNERS}", i) for i in range(n_events)]
    report = ChaosReport(
        mode="cluster" if cluster else "single",
        events_published=n_events,
        poison_published=POISON,
        nats_nodes=3 if cluster else 1,
        replicas=stack.replicas,
        embed_workers=stack.embed_workers,
    )
    started = time.monotonic()
    await stack.start()
    try:
        nc = await connect(stack.url)
        searches, sleeps = SearchLoad(nc, OWNERS, n_events), SleepLoad(nc, OWNERS)
        stop_search, stop_sleep = asyncio.Event(), asyncio.Event()
        loads = [asyncio.create_task(searches.run(stop_search)), asyncio.create_task(sleeps.run(stop_sleep))]
        rate = rate or max(5.0, n_events / 90.0)  # spread publishing so the faults land during it
        publisher = asyncio.create_task(publish_all(nc, events, POISON, rate))
        plan = (cluster_plan if cluster else single_plan)(stack, down_s, short=short)
        await inject(stack, plan, started, report, gap_s)
        stop_sleep.set()
        searches.pace_s = DRAIN_PACE_S
        await publisher
        await wait_quiet(stack, n_events, settle_timeout)
        stop_search.set()
        await asyncio.gather(*loads)
        report.sleep_runs = dict(sleeps.statuses)
        report.sleep_final = await sleeps.run_once(0, timeout=300)
        report.sleep_llm_calls = len(stack.llm.requests)
        search_summary(searches, report, time.monotonic())
        await nc.close()
        await count_store(stack.dsn, events, report)
        await count_bus(stack.url, report)
    finally:
        report.seconds = round(time.monotonic() - started, 1)
        await stack.stop()
    return report


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=10_000)
    parser.add_argument("--cluster", action="store_true", help="three NATS nodes (R3), two embed processes")
    parser.add_argument("--json", help="write the report as JSON here")
    args = parser.parse_args()
    report = asyncio.run(run_chaos(args.events, cluster=args.cluster))
    env = environment()
    print(report.markdown(env["cpus"]))
    if report.search_errors:
        print("search failures:", json.dumps(report.search_errors, indent=1))
    if args.json:
        saved = {
            **json.loads(json.dumps(report.__dict__, default=lambda o: o.__dict__)),
            "ok": report.ok,
            "markdown": report.markdown(env["cpus"]),
            "environment": env,
        }
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(saved, indent=2) + "\n")
    return 0 if report.ok else 1


if __name__ == "__main__":
    sys.exit(main())
