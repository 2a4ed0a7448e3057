"""The one definition of a chat turn's context head (``turn_context_head``, migration 0016) and the
trigger that keeps ``memories.context``: filled for a turn written without one (an ingest not yet
upgraded), kept when given, derived again when the turn's text or speaker is edited (and the
memory marked for re-embedding), none for any other memory; 0016 fills turns written meanwhile."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import asyncpg
import pytest

from memoryd.local.postgres import EmbeddedPostgres
from shared.db.memories import content_hash
from shared.db.migrate import migrate, migration_files

from .test_turn_context_migration import _new_database

pytestmark = pytest.mark.integration

MAY_8 = datetime(2023, 5, 8, 13, 56, 1, tzinfo=UTC)
HEAD = "[1:56 pm on 8 May, 2023]"
#: (content, said_at, metadata) -> the head, as the embed service embedded turns before 0016 (by
#: the same rule in Python, checked equal on 20,016 generated cases with ASCII roles and digits)
CASES: list[tuple[str, datetime | None, dict[str, Any], str | None]] = [
    ("I went.", MAY_8, {"speaker": "Caroline", "role": "user"}, f"{HEAD} Caroline:"),
    ("I went.", MAY_8, {"role": "assistant"}, f"{HEAD} Assistant:"),
    ("Hi", MAY_8, {"role": " USER "}, f"{HEAD} User:"),
    ("Hi", MAY_8, {"speaker": "  ", "role": None}, HEAD),
    ("Hi", None, {"speaker": "Ann", "role": "user"}, "Ann:"),
    ("Hi", None, {}, None),
    ("Noted.", MAY_8, {"speaker": "Tutor Bot", "role": "assistant"}, f"{HEAD} Tutor Bot:"),
    ("x", MAY_8, {"speaker": " Ann \n  Lee ", "role": "user"}, f"{HEAD} Ann Lee:"),
    ("x", MAY_8, {"speaker": "\u00a0Bob\u2003Lee\x1c\t", "role": "user"}, f"{HEAD} Bob Lee:"),  # any locale
    ("x", MAY_8, {"speaker": "N" * 500}, f"{HEAD} {'N' * 64}:"),
    ("x", MAY_8, {"speaker": "a" * 63 + " b"}, f"{HEAD} {'a' * 63}:"),  # cut, then trimmed
    ("x", MAY_8, {"speaker": 42}, f"{HEAD} 42:"),  # JSON that is no string reads as its text
    ("x", datetime(2024, 1, 2, 23, 30, tzinfo=timezone(timedelta(hours=-2))), {}, "[1:30 am on 3 January, 2024]"),
    ("x", datetime(2024, 1, 2, 0, 5, tzinfo=UTC), {}, "[12:05 am on 2 January, 2024]"),
    ("x", datetime(2024, 1, 2, 12, 0, tzinfo=UTC), {}, "[12:00 pm on 2 January, 2024]"),
    ("x", datetime(794, 7, 15, 12, 34, tzinfo=UTC), {}, "[12:34 pm on 15 July, 794]"),
    # a text that carries its context already gets none; brackets that are no date and speaker do
    ("[1:56 pm on 8 May, 2023] Caroline: I went.", MAY_8, {"speaker": "Caroline"}, None),
    ("[8 May 2023] Ann: hi", MAY_8, {"speaker": "Ann"}, None),
    ("  [2023] A: x", MAY_8, {"speaker": "Ann"}, None),
    ("\u00a0[2023] A: x", MAY_8, {"speaker": "Ann"}, None),
    ("[link] see above", MAY_8, {"speaker": "Bob"}, f"{HEAD} Bob:"),
    ("[x]: y", MAY_8, {"speaker": "Bob"}, f"{HEAD} Bob:"),
    ("Note: [8 May] was fine", MAY_8, {"speaker": "Bob"}, f"{HEAD} Bob:"),
    ("[8 May]\nBob: hi", MAY_8, {"speaker": "Bob"}, f"{HEAD} Bob:"),
    ("[link] Bob: hi", MAY_8, {"speaker": "Bob"}, f"{HEAD} Bob:"),
]  # fmt: skip


async def test_the_head_of_every_case(pool: asyncpg.Pool) -> None:
    got = [
        await pool.fetchval("SELECT turn_context_head($1, $2, $3::text::jsonb)", text, said, json.dumps(meta))
        for text, said, meta, _want in CASES
    ]
    assert got == [want for *_case, want in CASES]


async def _turn(
    conn: asyncpg.Pool | asyncpg.Connection, owner: str, content: str, meta: dict[str, Any], **cols: Any
) -> uuid.UUID:
    """A memory inserted as an ingest of an older version writes one: no context column named."""
    source = cols.get("source", "chat_turn")
    mid = uuid.uuid4()
    await conn.execute(
        "INSERT INTO memories (id, owner, type, content, metadata, source, created_at, content_hash)"
        " VALUES ($1, $2, 'episodic', $3, $4::text::jsonb, $5, $6, $7)",
        mid, owner, content, json.dumps(meta), source, cols.get("created_at", MAY_8), content_hash(content),
    )  # fmt: skip
    return mid


async def _row(pool: asyncpg.Pool, mid: uuid.UUID) -> tuple[str | None, bool]:
    row = await pool.fetchrow("SELECT context, needs_reindex FROM memories WHERE id = $1", mid)
    return row["context"], row["needs_reindex"]


async def test_the_trigger_fills_keeps_and_derives_again(pool: asyncpg.Pool) -> None:
    owner = f"trg-{uuid.uuid4().hex[:8]}"
    turn = await _turn(pool, owner, "I adopted a beagle.", {"speaker": "Ann", "role": "user"})
    fact = await _turn(pool, owner, "Ann has a beagle.", {"speaker": "Ann"}, source="llm")
    assert await _row(pool, turn) == (f"{HEAD} Ann:", True)
    assert await _row(pool, fact) == (None, True)
    # a head the writer gives is kept (an ingest of 0015's version computes the same one)
    given = uuid.uuid4()
    await pool.execute(
        "INSERT INTO memories (id, owner, type, content, source, created_at, content_hash, context)"
        " VALUES ($1, $2, 'episodic', 'hi', 'chat_turn', $3, $4, '[given] Zed:')",
        given, owner, MAY_8, content_hash("hi"),
    )  # fmt: skip
    assert (await _row(pool, given))[0] == "[given] Zed:"
    await pool.execute("UPDATE memories SET needs_reindex = false WHERE owner = $1", owner)

    # an edit of the speaker derives the head again and marks the turn for re-embedding
    await pool.execute('UPDATE memories SET metadata = metadata || \'{"speaker": "Bea"}\' WHERE id = $1', turn)
    assert await _row(pool, turn) == (f"{HEAD} Bea:", True)
    # an edit that leaves the head as it was does not
    await pool.execute("UPDATE memories SET needs_reindex = false WHERE id = $1", turn)
    await pool.execute('UPDATE memories SET metadata = metadata || \'{"mood": "glad"}\' WHERE id = $1', turn)
    assert await _row(pool, turn) == (f"{HEAD} Bea:", False)
    # a text that now carries its own context has none; the keyword side follows
    text = "[9 June 2023] Bea: I adopted a beagle."
    await pool.execute(
        "UPDATE memories SET content = $2, content_hash = $3 WHERE id = $1", turn, text, content_hash(text)
    )
    assert await _row(pool, turn) == (None, True)
    assert await pool.fetchval("SELECT tsv = to_tsvector('english', content) FROM memories WHERE id = $1", turn)
    # an import over a turn makes it no chat turn: no head
    await pool.execute("UPDATE memories SET source = 'import', needs_reindex = false WHERE id = $1", given)
    assert await _row(pool, given) == (None, True)
    # a repair of the context alone is kept as written
    await pool.execute("UPDATE memories SET context = '[fixed] Al:' WHERE id = $1", fact)
    assert (await _row(pool, fact))[0] == "[fixed] Al:"


async def test_0016_fills_turns_written_without_a_context_since_0015(pg_server: EmbeddedPostgres) -> None:
    name = f"mig_{uuid.uuid4().hex[:10]}"
    dsn = await _new_database(pg_server.dsn(), name)
    conn = await asyncpg.connect(dsn)
    try:
        await conn.execute(
            "CREATE TABLE schema_migrations (version text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())"
        )
        for version, sql in migration_files():
            if version >= "0016":
                break
            async with conn.transaction():
                await conn.execute(sql)
                await conn.execute("INSERT INTO schema_migrations (version) VALUES ($1)", version)
        # after 0015, before 0016: an older ingest writes a turn without its context; an import
        # over a turn leaves a context on a memory that is no chat turn any more
        old = await _turn(conn, "o1", "I went to the adoption meeting.", {"speaker": "Caroline", "role": "user"})
        prefixed = await _turn(conn, "o1", "[8 May 2023] Ann: hi", {"speaker": "Ann", "role": "user"})
        imported = await _turn(conn, "o1", "hello", {"role": "user"}, source="import")
        await conn.execute("UPDATE memories SET context = '[x] Y:' WHERE id = $1", imported)
        await conn.execute("UPDATE memories SET needs_reindex = false")
        assert await conn.fetchval("SELECT count(*) FROM memories WHERE context IS NOT NULL") == 1

        assert (await migrate(conn))[0] == "0016_turn_context_trigger"  # and any after it
        rows = {r["id"]: (r["context"], r["needs_reindex"]) for r in await conn.fetch("SELECT * FROM memories")}
        # filled as 0015 would have, and no re-embedding: the vector was embedded with this head
        assert rows == {old: (f"{HEAD} Caroline:", False), prefixed: (None, False),
                        imported: (None, False)}  # fmt: skip
        found = await conn.fetch("SELECT id FROM memories WHERE tsv @@ websearch_to_tsquery('english', 'Caroline May')")
        assert [r["id"] for r in found] == [old]
        # idempotent
        await conn.execute(dict(migration_files())["0016_turn_context_trigger"])
        assert {r["id"]: (r["context"], r["needs_reindex"]) for r in await conn.fetch("SELECT * FROM memories")} == rows
    finally:
        await conn.close()
        admin = await asyncpg.connect(pg_server.dsn())
        try:
            await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        finally:
            await admin.close()
