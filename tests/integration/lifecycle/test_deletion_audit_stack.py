"""Deletion audit on the running services: after every kind of derived processing, deleting an
owner's memories leaves nothing of them anywhere.

ingest, extract, embed and sleep run in-process with a scripted LLM (``tests.support.fake_llm``)
and the real embedding model, into pgvector and Qdrant (qdrant-client local mode). One owner
tells a secret in chat (rule and LLM extraction: facts and entities), writes memories quoting
it through the API, sends an event that is dead-lettered (metadata over the cap) quoting it;
everything is embedded in both stores; a sleep run derives a pattern from it (and entity
relations, conflict verdicts); ``summarize`` folds memories into an LLM summary quoting it;
the owner exports everything. Then one memory is deleted and the rest cleared, and every
text, json, jsonb and uuid column of every table, both vector stores, the dead-letter stream
and every log line the services wrote are searched for the memories' ids and the secret: none
is found. Another owner's memories stay as they were. ``MEMORYD_DELETION_AUDIT_REPORT=<file>``
(``make deletion-audit``) writes what was searched and what was found as JSON, which
``make security-docs`` renders.
"""

from __future__ import annotations

import json
import os
import re
import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import asyncpg
import pytest
from nats.aio.client import Client
from nats.js.errors import NotFoundError

from memoryd.codec import encode
from memoryd.local.nats import EmbeddedNats
from memoryd.rpc import call
from memoryd.schemas import ChatEvent, ChatMessage
from memoryd.schemas.memory import (
    MemoryClearRequest,
    MemoryCreateRequest,
    MemoryDeleteRequest,
    MemoryExportRequest,
)
from memoryd.schemas.ops import SleepRunRequest, SummarizeRequest
from memoryd.subjects import CHAT_EVENTS, DLQ_STREAM, MSG_ID_HEADER, chat_msg_id
from shared.bus.provision import ensure_streams
from shared.observability.logging import configure
from shared.settings.env import LogConfig, NatsConfig, ServiceConfig
from shared.vectors.registry import open_stores
from tests.support.eventually import eventually
from tests.support.fake_llm import FakeLlm
from tests.support.stack import run_services, service_config

TOKEN = "4471-zebra"
SECRET = f"My locker code at the gym is {TOKEN} and I keep my Postgres notes there."
KEPT = "I like green tea in the morning."
FACT = f"User's gym locker code is {TOKEN}"
PATTERN = f"Keeps returning to locker {TOKEN}"
SUMMARY = f"The user keeps the gym locker code {TOKEN} and runs at 6am."


def llm_reply(request: dict[str, Any]) -> str:
    """The scripted model: each prompt gets text derived from the secret it was shown."""
    prompt = "\n".join(str(m.get("content", "")) for m in request["messages"])
    if "recurring patterns" in prompt:
        ids = re.findall(r"\[([0-9a-f-]{36})\]", prompt)
        return json.dumps({"patterns": [{"title": "Locker", "content": PATTERN, "evidence": ids[:3]}]})
    if "emotions a person shows" in prompt:
        return json.dumps({"candidates": []})
    if "Pairs of memories" in prompt:
        pairs = len(re.findall(r"^Pair \d+:$", prompt, flags=re.M))
        return json.dumps({"decisions": [{"pair": i, "action": "keep"} for i in range(pairs)]})
    if "Summarize these stored memories" in prompt:
        return SUMMARY
    facts = [{"category": "personal", "content": FACT, "memory_type": "factual"}] if TOKEN in prompt else []
    return json.dumps({"facts": facts})


@pytest.fixture
async def llm() -> AsyncIterator[FakeLlm]:
    async with FakeLlm() as fake:
        fake.handler = llm_reply
        yield fake


@pytest.fixture
def stack_config(
    monkeypatch: pytest.MonkeyPatch, nats_server: EmbeddedNats, pg_dsn: str, llm: FakeLlm
) -> ServiceConfig:
    monkeypatch.setenv("MEMORYD_EMBED_SOURCE", "local")
    monkeypatch.setenv("MEMORYD_SLEEP_SCHEDULER", "false")
    monkeypatch.setenv("MEMORYD_INGEST_CLEANUP_INTERVAL_S", "0")
    extra = {
        "MEMORYD_LLM_BASE_URL": llm.base_url,
        "MEMORYD_LLM_MODEL": "fake",
        "MEMORYD_QDRANT_URL": ":memory:",
        "MEMORYD_QDRANT_COLLECTION": f"audit{uuid.uuid4().hex[:8]}",
    }
    return service_config(nats_server.url, pg_dsn, extra)


async def publish(nc: Client, event: ChatEvent) -> None:
    data = encode(event)
    await nc.jetstream().publish(
        CHAT_EVENTS, data, headers={MSG_ID_HEADER: chat_msg_id(event.owner, event.event_id, data)}
    )


def event(owner: str, text: str, **fields: Any) -> ChatEvent:
    return ChatEvent(
        event_id=uuid.uuid4().hex,
        owner=owner,
        session_id="s1",
        occurred_at=datetime.now(UTC),
        messages=[ChatMessage(role="user", content=text), ChatMessage(role="assistant", content="Noted.")],
        **fields,
    )


async def owner_ids(pool: asyncpg.Pool, owner: str) -> set[str]:
    return {str(r["id"]) for r in await pool.fetch("SELECT id FROM memories WHERE owner = $1", owner)}


async def searchable_columns(pool: asyncpg.Pool) -> list[tuple[str, str]]:
    """Every text-like column (text, varchar, json, jsonb, uuid, arrays of them) of every table."""
    rows = await pool.fetch(
        "SELECT c.table_name, c.column_name FROM information_schema.columns c"
        " JOIN information_schema.tables t ON t.table_schema = c.table_schema AND t.table_name = c.table_name"
        " WHERE c.table_schema = 'public' AND t.table_type = 'BASE TABLE'"
        " AND (c.data_type IN ('text', 'character varying', 'json', 'jsonb', 'uuid')"
        "      OR (c.data_type = 'ARRAY' AND c.udt_name IN ('_text', '_varchar', '_uuid', '_jsonb')))"
        " ORDER BY 1, 2"
    )
    return [(r["table_name"], r["column_name"]) for r in rows]


async def residues(pool: asyncpg.Pool, needles: list[str]) -> dict[str, int]:
    """``table.column`` -> rows whose value holds any needle."""
    patterns = [f"%{n}%" for n in needles]
    found: dict[str, int] = {}
    for table, column in await searchable_columns(pool):
        n = await pool.fetchval(f'SELECT count(*) FROM "{table}" WHERE "{column}"::text LIKE ANY($1::text[])', patterns)
        if n:
            found[f"{table}.{column}"] = int(n)
    return found


async def dead_letters(nc: Client) -> list[bytes]:
    js = nc.jetstream()
    info = await js.stream_info(DLQ_STREAM)
    out: list[bytes] = []
    for seq in range(info.state.first_seq, info.state.last_seq + 1):
        try:
            out.append((await js.get_msg(DLQ_STREAM, seq)).data or b"")
        except NotFoundError:  # a deleted sequence number
            continue
    return out


async def test_deleting_after_all_derived_processing_leaves_nothing(
    stack_config: ServiceConfig, nc: Client, pool: asyncpg.Pool, capfd: pytest.CaptureFixture[str]
) -> None:
    owner, other = f"audit-{uuid.uuid4().hex[:6]}", f"keep-{uuid.uuid4().hex[:6]}"
    # every info line is searched: another in-process user (the CLI logs errors only) may
    # have configured logging before this test
    configure("audit", LogConfig(level="info", format="console"))
    await ensure_streams(nc.jetstream(), NatsConfig())
    await pool.execute(
        "INSERT INTO settings (owner, \"values\") VALUES ('*', $1::jsonb)"
        ' ON CONFLICT (owner) DO UPDATE SET "values" = settings."values" || EXCLUDED."values"',
        {"sleepPatternMinMemories": 3},
    )
    stores = await open_stores(stack_config, pool)
    try:
        assert stores.qdrant is not None
        async with run_services(["ingest", "extract", "embed", "sleep"], stack_config):
            await publish(nc, event(owner, SECRET))
            await publish(nc, event(owner, SECRET, metadata={"pad": "x" * 9000}))  # over the cap: dead-lettered
            await publish(nc, event(other, KEPT))
            for day in range(4):
                req = MemoryCreateRequest(owner=owner, content=f"Went running at 6am, then locker {TOKEN}, day {day}")
                await call(nc, "memory.create", req)

            async def derived() -> bool:
                facts = await pool.fetchval("SELECT count(*) FROM memories WHERE owner = $1 AND source = 'llm'", owner)
                waiting = await pool.fetchval("SELECT count(*) FROM memories WHERE needs_reindex")
                return bool(facts) and waiting == 0 and len(await dead_letters(nc)) >= 1

            await eventually(derived, "extraction, embedding and the dead letter")
            run = await call(nc, "sleep.run", SleepRunRequest(owner=owner, wait=True, timeout_s=60), timeout=70)
            assert run.run is not None and run.run.status in ("ok", "refreshed"), run.run
            summary = await call(nc, "summarize", SummarizeRequest(older_than_days=0, owner=owner), timeout=60)
            assert summary.summary_ids, summary
            await eventually(
                lambda: _count(pool, "SELECT count(*) FROM memories WHERE needs_reindex", 0),
                "derived memories embedded",
            )
            exported = await call(nc, "memory.export", MemoryExportRequest(owner=owner))

            ids = await owner_ids(pool, owner)
            kinds = {r["type"] for r in await pool.fetch("SELECT type FROM memories WHERE owner = $1", owner)}
            assert {"pattern", "summary"} <= kinds, kinds
            entity_ids = {str(r["id"]) for r in await pool.fetch("SELECT id FROM entities WHERE owner = $1", owner)}
            assert entity_ids
            assert ids <= set(re.findall(r'"id":"([0-9a-f-]{36})"', exported.lines))
            qdrant_ids = {mid for page in [p async for p in stores.qdrant.point_refs()] for mid, _ in page}
            active = {
                str(r["id"])
                for r in await pool.fetch("SELECT id FROM memories WHERE owner = $1 AND state = 'active'", owner)
            }
            assert active and active <= qdrant_ids  # archived members of the summary have no vector of their own
            vectors = await pool.fetchval(
                "SELECT count(*) FROM memory_embeddings WHERE memory_id = ANY($1::uuid[])", [uuid.UUID(i) for i in ids]
            )
            assert vectors >= len(active)
            kept = await owner_ids(pool, other)

            first = sorted(ids)[0]
            await call(nc, "memory.delete", MemoryDeleteRequest(owner=owner, id=first))
            cleared = await call(nc, "memory.clear", MemoryClearRequest(owner=owner))
            assert cleared.count >= 1
            await eventually(
                lambda: _count(pool, "SELECT count(*) FROM memories WHERE owner = $1", 0, owner), "cleared"
            )

        needles = [*sorted(ids), *sorted(entity_ids), TOKEN, SECRET[:24]]
        found = await residues(pool, needles)
        points = [(mid, who) for page in [p async for p in stores.qdrant.point_refs()] for mid, who in page]
        left_points = [p for p in points if p[0] in ids or p[1] == owner]
        letters = await dead_letters(nc)
        left_letters = [d for d in letters if any(n.encode() in d for n in needles)]
        logs = capfd.readouterr()
        lines = (logs.out + logs.err).splitlines()
        left_lines = [ln for ln in lines if any(n in ln for n in needles)]
        if report := os.environ.get("MEMORYD_DELETION_AUDIT_REPORT"):
            left = len(found) + len(left_points) + len(left_letters) + len(left_lines)
            columns = len(await searchable_columns(pool))
            counts = (len(ids), len(needles), columns, len(points), len(letters), len(lines), left)
            write_audit_report(Path(report), *counts)
        assert found == {}
        assert not left_points
        assert not left_letters
        assert any("service.ready" in ln for ln in lines) and any("consumer.dead_letter" in ln for ln in lines)
        assert left_lines == []
        assert await owner_ids(pool, other) == kept
    finally:
        await stores.close()


def write_audit_report(
    path: Path, memories: int, needles: int, columns: int, points: int, letters: int, lines: int, residues: int
) -> None:
    summary = (
        f"**Deletion audit** (`make deletion-audit`): {memories} memories deleted after extraction, "
        f"embedding into pgvector and Qdrant, a sleep run, an LLM summary, an export and a dead letter; "
        f"then {needles} ids and texts searched in {columns} columns of every table, the {points} Qdrant "
        f"points and {letters} dead letters left, and {lines} log lines; residues: {residues}."
    )
    report = {"summary": summary, "memories": memories, "columns": columns, "residues": residues}
    path.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")


async def _count(pool: asyncpg.Pool, sql: str, expected: int, *args: Any) -> bool:
    return bool(await pool.fetchval(sql, *args) == expected)
