"""Fixtures of the sleep-worker tests: a scripted LLM routed by phase, seeding helpers, the service.

The scripted LLM (`SleepLlm`) answers each phase's prompt with a reply built by a
per-phase function of the prompt (or an HTTP status), and records which phases it saw.
Memories, vectors, entities and settings are written straight to Postgres; vectors are
8-dimensional under their own signature, active in `memory_vec_meta`.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import asyncpg
import numpy as np
import pytest

from memoryd.local.nats import EmbeddedNats
from memoryd.rpc import call
from memoryd.schemas.ops import SleepRunRecord, SleepRunRequest
from shared.db import memories
from shared.service import ServiceContext
from shared.settings.env import ServiceConfig
from tests.support.fake_llm import FakeLlm
from tests.support.stack import run_services, service_config

SIG = "test:fake:8"
DIM = 8
NOW = datetime.now(UTC)

Reply = Any  # a JSON-able object, or an int HTTP status
PhaseFn = Callable[[str], Reply | Awaitable[Reply]]


def phase_of(prompt: str) -> str:
    if prompt.startswith("Pairs of memories"):
        return "conflict"
    if "recurring patterns" in prompt:
        return "patterns"
    if "emotions a person shows" in prompt:
        return "affective"
    return "unknown"


def ids_in(prompt: str) -> list[str]:
    """Memory ids shown in a pool prompt (`- [<id>] ...`), in order."""
    return re.findall(r"^- \[([0-9a-f-]{36})\]", prompt, flags=re.M)


def pair_count(prompt: str) -> int:
    return len(re.findall(r"^Pair \d+:$", prompt, flags=re.M))


def keep_all(prompt: str) -> dict[str, Any]:
    return {"decisions": [{"pair": i, "action": "keep"} for i in range(pair_count(prompt))]}


@dataclass
class SleepLlm:
    """Routes chat completions to one function per phase; default: keep / no patterns / no candidates."""

    fake: FakeLlm
    phases: dict[str, PhaseFn] = field(default_factory=dict)
    seen: list[tuple[str, str]] = field(default_factory=list)  # (phase, prompt)

    def __post_init__(self) -> None:
        self.fake.handler = self._handle

    async def _handle(self, request: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        prompt = str(request["messages"][-1]["content"])
        phase = phase_of(prompt)
        self.seen.append((phase, prompt))
        default: PhaseFn = {
            "conflict": keep_all,
            "patterns": lambda p: {"patterns": []},
            "affective": lambda p: {"candidates": []},
        }.get(phase, lambda p: 500)
        reply = self.phases.get(phase, default)(prompt)
        if asyncio.iscoroutine(reply):
            reply = await reply
        if isinstance(reply, int):
            return reply, {"error": {"message": "scripted", "type": "server_error", "code": reply}}
        return 200, FakeLlm.completion(request, json.dumps(reply))

    def prompts(self, phase: str) -> list[str]:
        return [p for ph, p in self.seen if ph == phase]


@pytest.fixture
async def llm() -> AsyncIterator[SleepLlm]:
    async with FakeLlm() as fake:
        yield SleepLlm(fake)


@pytest.fixture(autouse=True)
def _no_scheduler(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tests queue runs by hand unless they start a scheduler themselves."""
    monkeypatch.setenv("MEMORYD_SLEEP_SCHEDULER", "false")


@pytest.fixture(autouse=True)
async def _clean(pool: asyncpg.Pool) -> None:
    """Each test starts from empty tables (the database is per module)."""
    await pool.execute(
        "TRUNCATE memories, memory_embeddings, memory_vec_meta, dream_runs, conflict_reviewed, differentiated_pairs,"
        " conflict_pending, entities, entity_relations, entity_mentions, content_history, llm_audit_logs, settings"
        " CASCADE"
    )


def sleep_config(nats: EmbeddedNats, dsn: str, llm: SleepLlm | None) -> ServiceConfig:
    extra = {"MEMORYD_LLM_BASE_URL": llm.fake.base_url, "MEMORYD_LLM_MODEL": "fake"} if llm else {}
    return service_config(nats.url, dsn, extra)


@contextlib.asynccontextmanager
async def sleep_service(nats: EmbeddedNats, dsn: str, llm: SleepLlm | None = None) -> AsyncIterator[ServiceContext]:
    async with run_services(["sleep"], sleep_config(nats, dsn, llm)) as ctxs:
        yield ctxs["sleep"]


async def run_sleep(nc: Any, owner: str, timeout: float = 60.0) -> SleepRunRecord:
    """Queue a manual run and wait for its record."""
    result = await call(
        nc, "sleep.run", SleepRunRequest(owner=owner, wait=True, timeout_s=timeout), timeout=timeout + 5
    )
    assert result.run is not None
    assert result.run.status not in ("queued", "running"), result.run
    return result.run  # type: ignore[no-any-return]


async def put_settings(pool: asyncpg.Pool, owner: str, values: dict[str, Any]) -> None:
    """Sleep settings straight into the settings row (merged with what is there)."""
    await pool.execute(
        'INSERT INTO settings (owner, "values") VALUES ($1, $2::jsonb) ON CONFLICT (owner) DO UPDATE'
        ' SET "values" = settings."values" || EXCLUDED."values"',
        owner,
        values,
    )


async def add_memory(
    pool: asyncpg.Pool,
    owner: str,
    content: str,
    *,
    vector: list[float] | None = None,
    session_id: str | None = None,
    scope: str = "apiKey",
    memory_type: str = "factual",
    created_days_ago: float = 1.0,
    accessed_days_ago: float | None = None,
    source: str = "api",
    agent_id: str | None = None,
) -> str:
    created = NOW - timedelta(days=created_days_ago)
    record = await memories.insert(
        pool,
        owner=owner,
        memory_type=memory_type,
        content=content,
        source=source,
        session_id=session_id,
        agent_id=agent_id,
        scope=scope,
        created_at=created,
    )
    if accessed_days_ago is not None:
        await pool.execute(
            "UPDATE memories SET last_accessed_at = $2 WHERE id = $1",
            uuid.UUID(record.id),
            NOW - timedelta(days=accessed_days_ago),
        )
    if vector is not None:
        await add_vector(pool, owner, record.id, vector)
    return record.id


async def add_vector(pool: asyncpg.Pool, owner: str, memory_id: str, vector: list[float]) -> None:
    v = np.asarray(vector, dtype=np.float32)
    v = v / np.linalg.norm(v)
    await pool.execute(
        "INSERT INTO memory_vec_meta (store, active_dim, embedding_signature) VALUES ('pgvector', $1, $2)"
        " ON CONFLICT (store) DO UPDATE SET active_dim = EXCLUDED.active_dim,"
        " embedding_signature = EXCLUDED.embedding_signature",
        DIM,
        SIG,
    )
    await pool.execute(
        "INSERT INTO memory_embeddings (memory_id, signature, owner, dim, embedding) VALUES ($1, $2, $3, $4, $5)",
        uuid.UUID(memory_id),
        SIG,
        owner,
        DIM,
        v,
    )


def basis(i: int, noise: float = 0.0, j: int | None = None) -> list[float]:
    """A unit direction `i`, tilted towards direction `j` (or the next one) by `noise`."""
    v = [0.0] * DIM
    v[i % DIM] = 1.0
    v[(j if j is not None else i + 1) % DIM] += noise
    return v


async def add_entity(pool: asyncpg.Pool, owner: str, name: str, kind: str = "thing") -> str:
    entity_id = uuid.uuid4()
    await pool.execute(
        "INSERT INTO entities (id, owner, name, normalized, kind) VALUES ($1, $2, $3, $4, $5)",
        entity_id,
        owner,
        name,
        " ".join(name.casefold().split()),
        kind,
    )
    return str(entity_id)


async def mention(pool: asyncpg.Pool, entity_id: str, memory_id: str) -> None:
    await pool.execute(
        "INSERT INTO entity_mentions (entity_id, memory_id) VALUES ($1, $2)", uuid.UUID(entity_id), uuid.UUID(memory_id)
    )


async def memory_row(pool: asyncpg.Pool, memory_id: str) -> asyncpg.Record:
    row = await pool.fetchrow("SELECT * FROM memories WHERE id = $1", uuid.UUID(memory_id))
    assert row is not None
    return row


async def states(pool: asyncpg.Pool, *memory_ids: str) -> list[str]:
    """The state of each memory, in the order given."""
    return [(await memory_row(pool, m))["state"] for m in memory_ids]
