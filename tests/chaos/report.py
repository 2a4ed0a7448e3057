"""What a chaos run found, counted per turn and per fact, and its markdown tables.

An event counts by its turns: a turn is lost when no ``chat_turn`` memory of its event has
its text, and duplicated for every extra one; a fact (each event's user turn states one
preference) is lost when its key is missing for the owner, duplicated for every extra row.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import asyncpg
import msgspec
import nats

from memoryd.schemas import ChatEvent
from memoryd.schemas.events import DeadLetter
from memoryd.subjects import (
    DLQ_STREAM,
    EMBED_CONSUMER,
    EVENTS_STREAM,
    EXTRACT_CONSUMER,
    INGEST_CONSUMER,
    JOBS_STREAM,
    SLEEP_CONSUMER,
    SLEEP_STREAM,
)

#: A sleep run that finished: ``noop`` is one that wrote nothing (the scripted LLM keeps every pair).
SLEEP_DONE = ("ok", "noop")
CONSUMERS = (
    (EVENTS_STREAM, INGEST_CONSUMER),
    (JOBS_STREAM, EXTRACT_CONSUMER),
    (JOBS_STREAM, EMBED_CONSUMER),
    (SLEEP_STREAM, SLEEP_CONSUMER),
)


@dataclass
class FaultRecord:
    fault: str
    at_s: float  # since the run started
    outage_s: float = 0.0  # how long the killed piece stayed down before it was started again
    recovery_s: float | None = None  # from its restart until every service answered health ok
    search: dict[str, Any] = field(default_factory=dict)  # searches during [injected, recovered)


@dataclass
class ChaosReport:
    mode: str  # "single" or "cluster"
    events_published: int
    poison_published: int
    nats_nodes: int = 1
    replicas: int = 1
    embed_workers: int = 1
    events_stored: int = 0
    turns_expected: int = 0
    turns_lost: int = 0
    turns_duplicated: int = 0
    facts_expected: int = 0
    facts_lost: int = 0
    facts_duplicated: int = 0
    memories: int = 0
    memories_without_vector: int = 0
    unacked: dict[str, int] = field(default_factory=dict)
    dlq: int = 0
    dlq_not_poison: int = 0
    faults: list[FaultRecord] = field(default_factory=list)
    search_calm: dict[str, Any] = field(default_factory=dict)  # searches outside every fault window
    search_total: dict[str, Any] = field(default_factory=dict)
    search_errors: dict[str, int] = field(default_factory=dict)  # by outcome and exception type
    sleep_runs: dict[str, int] = field(default_factory=dict)  # final status of each run asked for
    sleep_final: str = ""  # the status of one more run after the faults
    sleep_llm_calls: int = 0  # chat completions the sleep runs asked the scripted LLM for
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        windows = [f.search for f in self.faults] + [self.search_total]
        return (
            (self.turns_lost, self.turns_duplicated, self.facts_lost, self.facts_duplicated) == (0, 0, 0, 0)
            and self.events_stored == self.events_published
            and self.memories_without_vector == 0
            and not any(self.unacked.values())
            and self.dlq == self.poison_published
            and self.dlq_not_poison == 0
            and all(w.get("server_errors", 0) == 0 and w.get("leaks", 0) == 0 for w in windows)
            and all(f.recovery_s is not None for f in self.faults)
            and self.sleep_final in SLEEP_DONE
        )

    def table(self) -> str:
        where = (
            f"{self.nats_nodes} NATS nodes, R{self.replicas} streams"
            if self.mode == "cluster"
            else "one NATS server, PostgreSQL fsync on"
        )
        rows = [
            f"{self.events_published:,} chat events from five owners ({where}, {self.embed_workers} embed "
            f"process{'es' if self.embed_workers > 1 else ''}), every fault a SIGKILL.",
            "",
            "| events stored | turns lost | turns duplicated | facts lost | facts duplicated | memories "
            "| without vector | unacked | DLQ (poison sent) |",
            "|---|---|---|---|---|---|---|---|---|",
            f"| {self.events_stored}/{self.events_published} | {self.turns_lost} of {self.turns_expected} "
            f"| {self.turns_duplicated} | {self.facts_lost} of {self.facts_expected} | {self.facts_duplicated} "
            f"| {self.memories} | {self.memories_without_vector} | {sum(self.unacked.values())} "
            f"| {self.dlq} ({self.poison_published}) |",
            "",
            "| fault | at (s) | down (s) | recovery (s) | searches | answered | unavailable | 5xx | other "
            "owner's data | p99 answered (ms) |",
            "|---|---|---|---|---|---|---|---|---|---|",
        ]
        for f in self.faults:
            rec = "n/a" if f.recovery_s is None else f"{f.recovery_s:.2f}"
            rows.append(f"| {f.fault} | {f.at_s:.1f} | {f.outage_s:.1f} | {rec} | " + _search_cells(f.search))
        rows.append("| no fault (the rest of the run) | | | | " + _search_cells(self.search_calm))
        runs = ", ".join(f"{n} {s}" for s, n in sorted(self.sleep_runs.items())) or "none"
        rows += [
            "",
            f"Sleep runs asked for during the faults: {runs} ({self.sleep_llm_calls} LLM calls in all); "
            f"one more run afterwards: {self.sleep_final} (noop: finished, nothing to change).",
        ]
        return "\n".join(rows)

    def markdown(self, cpus: int | None) -> str:
        verdict = "PASS" if self.ok else "FAIL"
        return f"{self.table()}\n\n{verdict} in {self.seconds:.0f} s ({cpus} CPUs)"


def _search_cells(w: dict[str, Any]) -> str:
    p99 = "—" if w.get("p99_ms") is None else f"{w['p99_ms']:.0f}"
    return (
        f"{w.get('searches', 0)} | {w.get('ok', 0)} | {w.get('unavailable', 0)} | {w.get('server_errors', 0)} "
        f"| {w.get('leaks', 0)} | {p99} |"
    )


def fact_key(i: int) -> str:
    return f"preference:chaos_tool_{i}"


async def count_store(dsn: str, events: list[ChatEvent], report: ChaosReport) -> None:
    """Turns and facts lost or duplicated, memories without a vector (PostgreSQL)."""
    conn = await asyncpg.connect(dsn)
    try:
        report.events_stored = int(
            await conn.fetchval("SELECT count(*) FROM events WHERE event_id = ANY($1)", [e.event_id for e in events])
        )
        rows = await conn.fetch(
            "SELECT metadata->>'event_id' AS e, content, count(*) AS n FROM memories"
            " WHERE source = 'chat_turn' GROUP BY 1, 2"
        )
        turns = {(r["e"], r["content"]): int(r["n"]) for r in rows}
        expected = [(e.event_id, m.content) for e in events for m in e.messages]
        report.turns_expected = len(expected)
        report.turns_lost = sum(1 for t in expected if t not in turns)
        report.turns_duplicated = sum(turns.get(t, 0) - 1 for t in expected if turns.get(t, 0) > 1)
        facts = await conn.fetch("SELECT owner, key, count(*) AS n FROM memories WHERE source = 'rule' GROUP BY 1, 2")
        have = {(r["owner"], r["key"]): int(r["n"]) for r in facts}
        wanted = [(e.owner, fact_key(i)) for i, e in enumerate(events)]
        report.facts_expected = len(wanted)
        report.facts_lost = sum(1 for f in wanted if f not in have)
        report.facts_duplicated = sum(n - 1 for n in have.values() if n > 1)
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


async def count_bus(url: str, report: ChaosReport) -> None:
    """Messages left unacked per durable consumer; DLQ entries and which are not the poison."""
    nc = await nats.connect(servers=url.split(","))
    try:
        js = nc.jetstream(timeout=10)
        for stream, durable in CONSUMERS:
            info = await js.consumer_info(stream, durable)
            report.unacked[durable] = (info.num_pending or 0) + (info.num_ack_pending or 0)
        state = (await js.stream_info(DLQ_STREAM)).state
        report.dlq = int(state.messages)
        if report.dlq:
            for seq in range(state.first_seq, state.last_seq + 1):
                raw = await js.get_msg(DLQ_STREAM, seq)
                letter = msgspec.json.decode(raw.data or b"", type=DeadLetter)
                if not letter.payload.startswith(b"\x00not json"):
                    report.dlq_not_poison += 1
    finally:
        await nc.close()
