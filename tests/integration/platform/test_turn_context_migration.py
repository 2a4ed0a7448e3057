"""Migration 0015 on a database holding memories written before it: raw turns get their context
head (``turn_context_head``, migration 0016, gives the same), other memories none, ``tsv`` indexes the head
with the content behind its two GIN indexes as before, and running it again changes nothing."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime
from typing import Any

import asyncpg
import pytest

from memoryd.local.postgres import EmbeddedPostgres
from shared.db.memories import content_hash
from shared.db.migrate import migrate, migration_files
from tests.support.stack import base_dsn

pytestmark = pytest.mark.integration

VERSION = "0015_turn_context"
WHEN = datetime(2023, 5, 8, 13, 56, 7, tzinfo=UTC)
#: (content, source, metadata, created_at) of rows written before the migration
OLD_ROWS: list[tuple[str, str, dict[str, Any], datetime]] = [
    ("I went to the adoption meeting last week", "chat_turn", {"role": "user", "speaker": "Caroline"}, WHEN),
    ("That sounds wonderful", "chat_turn", {"role": "assistant"}, datetime(2023, 1, 1, 0, 5, tzinfo=UTC)),
    ("weird   spacing", "chat_turn", {"role": "user", "speaker": "  Mel   Ann  "}, datetime(2022, 12, 31, 23, 59, tzinfo=UTC)),  # noqa: E501
    ("[1:56 pm on 8 May, 2023] Caroline: already prefixed", "chat_turn", {"role": "user", "speaker": "Caroline"}, WHEN),
    ("Caroline likes pottery", "llm", {"speaker": "Caroline"}, WHEN),
    ("a memory added directly", "api", {}, WHEN),
]  # fmt: skip


async def _new_database(admin_dsn: str, name: str) -> str:
    """An empty new database on the test server."""
    admin = await asyncpg.connect(admin_dsn)
    try:
        await admin.execute(f'CREATE DATABASE "{name}"')
    finally:
        await admin.close()
    return base_dsn(admin_dsn, name)


async def test_old_rows_get_their_context_and_stay_searchable(pg_server: EmbeddedPostgres) -> None:
    name = f"mig_{uuid.uuid4().hex[:10]}"
    dsn = await _new_database(pg_server.dsn(), name)
    conn = await asyncpg.connect(dsn)
    try:
        await conn.execute(
            "CREATE TABLE schema_migrations (version text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())"
        )
        before = [(v, sql) for v, sql in migration_files() if v < VERSION]
        assert [v for v, _ in migration_files()].index(VERSION) == len(before)
        for version, sql in before:
            async with conn.transaction():
                await conn.execute(sql)
                await conn.execute("INSERT INTO schema_migrations (version) VALUES ($1)", version)
        ids = []
        for content, source, meta, created in OLD_ROWS:
            ids.append(uuid.uuid4())
            await conn.execute(
                "INSERT INTO memories (id, owner, type, content, metadata, source, created_at, content_hash)"
                " VALUES ($1, 'o1', 'episodic', $2, $3::jsonb, $4, $5, $6)",
                ids[-1], content, json.dumps(meta), source, created, content_hash(content),
            )  # fmt: skip
        # before: neither the speaker nor the month is a word of the plain turn (the prefixed one has both)
        assert await _found(conn, "Caroline May") == [ids[3]]

        assert await migrate(conn) == [v for v, _ in migration_files() if v >= VERSION]  # it and any after it

        got = {r["id"]: r["context"] for r in await conn.fetch("SELECT id, context FROM memories")}
        assert [got[i] for i in ids] == [
            "[1:56 pm on 8 May, 2023] Caroline:",
            "[12:05 am on 1 January, 2023] Assistant:",
            "[11:59 pm on 31 December, 2022] Mel Ann:",
            None,
            None,
            None,
        ]
        # the plain turn is found by its speaker and month; the prefixed one by its own text as before
        assert await _found(conn, "Caroline May adoption") == [ids[0]]
        assert set(await _found(conn, "Caroline May")) == {ids[0], ids[3]}
        assert await _found(conn, "December") == [ids[2]]
        # the other memories' vectors are their content's alone
        assert await conn.fetchval("SELECT tsv = to_tsvector('english', content) FROM memories WHERE id = $1", ids[5])
        indexes = {
            r["indexname"]: r["indexdef"]
            for r in await conn.fetch("SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'memories'")
        }
        assert "USING gin (tsv) WITH (gin_pending_list_limit='64')" in indexes["memories_tsv"]
        assert "USING gin (owner, tsv) WITH (gin_pending_list_limit='64')" in indexes["memories_owner_tsv"]

        # idempotent: the file again keeps the column (no rewrite) and every value
        attnum = await conn.fetchval(
            "SELECT attnum FROM pg_attribute WHERE attrelid = 'memories'::regclass AND attname = 'tsv'"
        )
        tsvs = await conn.fetch("SELECT id, tsv::text FROM memories ORDER BY id")
        await conn.execute(dict(migration_files())[VERSION])
        assert await migrate(conn) == []
        assert (
            await conn.fetchval(
                "SELECT attnum FROM pg_attribute WHERE attrelid = 'memories'::regclass AND attname = 'tsv'"
            )
            == attnum
        )
        assert await conn.fetch("SELECT id, tsv::text FROM memories ORDER BY id") == tsvs
    finally:
        await conn.close()
        admin = await asyncpg.connect(pg_server.dsn())
        try:
            await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        finally:
            await admin.close()


async def _found(conn: asyncpg.Connection, question: str) -> list[uuid.UUID]:
    rows = await conn.fetch(
        "SELECT id FROM memories WHERE owner = 'o1' AND tsv @@ websearch_to_tsquery('english', $1)"
        " ORDER BY created_at, id",
        question,
    )
    return [r["id"] for r in rows]
