"""Chat events through the ingest consumer on real NATS + PostgreSQL: raw turns, event and turn
dedupe, the opt-outs, per-owner settings, the jobs and the activity it publishes."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

import asyncpg
from nats.aio.client import Client

from memoryd.client import MemoryClient
from memoryd.codec import decode
from memoryd.schemas import Activity, ChatEvent, ChatMessage
from memoryd.subjects import ACTIVITY_BUCKET, activity_key, activity_subject
from shared.observability.metrics import EVENTS
from shared.service import ServiceContext
from shared.settings.cache import announce_change
from shared.settings.store import put_values
from tests.support.eventually import eventually

from .conftest import JobTap, chat, publish, turns, wait_event

WHEN = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)


async def test_chat_event_becomes_raw_turns_and_jobs(
    ingest: ServiceContext, nc: Client, pool: asyncpg.Pool, owner: str
) -> None:
    activity = await nc.subscribe(activity_subject(owner))
    event = ChatEvent(
        event_id="ev-1",
        owner=owner,
        session_id="s1",
        provider="openai",
        model="gpt-x",
        occurred_at=WHEN,
        messages=[
            ChatMessage(role="user", content="I prefer TypeScript.", name="ana"),
            ChatMessage(role="assistant", content="Noted: TypeScript it is."),
        ],
    )
    await publish(nc, event, "ev-1")
    row = await wait_event(pool, owner, "ev-1")
    assert (row["outcome"], row["turns_stored"], row["no_memory"], row["session_id"]) == ("stored", 2, False, "s1")

    stored = await turns(pool, owner)
    assert [(r["content"], r["type"], r["source"], r["session_id"]) for r in stored] == [
        ("I prefer TypeScript.", "episodic", "chat_turn", "s1"),
        ("Noted: TypeScript it is.", "episodic", "chat_turn", "s1"),
    ]
    assert stored[0]["created_at"] == WHEN and stored[1]["created_at"] == WHEN + timedelta(microseconds=1)
    assert stored[0]["metadata"] == {
        "role": "user",
        "speaker": "ana",
        "event_id": "ev-1",
        "occurred_at": WHEN.isoformat(),
        "provider": "openai",
        "model": "gpt-x",
        "turn_index": 0,
    }
    assert stored[1]["metadata"]["role"] == "assistant" and "speaker" not in stored[1]["metadata"]

    tap = await eventually(lambda: _jobs(nc, 1, 2), what="jobs")
    [job] = tap.extract
    assert (job.event_id, job.owner, job.session_id, job.occurred_at) == ("ev-1", owner, "s1", WHEN)
    assert [(t.role, t.content, t.memory_id, t.speaker) for t in job.turns] == [
        ("user", "I prefer TypeScript.", str(stored[0]["id"]), "ana"),
        ("assistant", "Noted: TypeScript it is.", str(stored[1]["id"]), None),
    ]
    assert sorted(j.memory_id for j in tap.embed) == sorted(str(r["id"]) for r in stored)
    assert all(j.owner == owner and j.reason == "new" and len(j.content_hash) == 64 for j in tap.embed)

    note = decode((await activity.next_msg(timeout=5)).data, Activity)
    assert (note.owner, note.kind, note.session_id) == (owner, "chat", "s1")
    kv = await nc.jetstream().key_value(ACTIVITY_BUCKET)
    entry = await kv.get(activity_key(owner))
    assert entry.value is not None
    assert datetime.fromisoformat(entry.value.decode()) == note.at


async def _jobs(nc: Client, n_extract: int, n_embed: int, tap: JobTap | None = None) -> JobTap | None:
    tap = await (tap or JobTap(nc)).poll()
    return tap if len(tap.extract) >= n_extract and len(tap.embed) >= n_embed else None


async def test_same_event_twice_is_stored_once(
    ingest: ServiceContext, nc: Client, pool: asyncpg.Pool, owner: str
) -> None:
    event = chat(owner, ("user", "I always commit before pushing."), ("assistant", "Good habit."), event_id="dup")
    dup_before = EVENTS.labels("duplicate")._value.get()
    await publish(nc, event, "first-msg-id")
    await wait_event(pool, owner, "dup")
    await publish(nc, event, "second-msg-id")  # a new stream message: not deduped by NATS
    await eventually(
        lambda: asyncio.sleep(0, EVENTS.labels("duplicate")._value.get() > dup_before), what="duplicate counted"
    )
    assert [r["content"] for r in await turns(pool, owner)] == ["I always commit before pushing.", "Good habit."]
    tap = await JobTap(nc).poll()
    assert len(tap.extract) == 1 and len(tap.embed) == 2


async def test_history_resent_stores_and_extracts_only_new_turns(
    ingest: ServiceContext, nc: Client, pool: asyncpg.Pool, owner: str
) -> None:
    history: list[tuple[str, str]] = []
    tap = JobTap(nc)
    for i in range(10):
        history += [("user", f"question {i}"), ("assistant", f"answer {i}")]
        await publish(nc, chat(owner, ("system", "You are helpful."), *history, event_id=f"h{i}", session_id="s"))
        await wait_event(pool, owner, f"h{i}")
    stored = await turns(pool, owner)
    assert len(stored) == 21  # the system prompt once, 10 questions, 10 answers
    assert sorted(r["content"] for r in stored) == sorted(
        ["You are helpful."] + [f"question {i}" for i in range(10)] + [f"answer {i}" for i in range(10)]
    )
    await eventually(lambda: _jobs(nc, 10, 21, tap), what="jobs")
    by_event = {j.event_id: [t.content for t in j.turns] for j in tap.extract}
    assert by_event["h0"] == ["You are helpful.", "question 0", "answer 0"]
    assert all(by_event[f"h{i}"] == [f"question {i}", f"answer {i}"] for i in range(1, 10))
    rows = await pool.fetch("SELECT event_id, turns_stored FROM events WHERE owner = $1 ORDER BY event_id", owner)
    assert [r["turns_stored"] for r in rows] == [3] + [2] * 9

    # the same history in another session is a different conversation: stored again
    await publish(nc, chat(owner, ("user", "question 0"), event_id="other", session_id="s2"))
    await wait_event(pool, owner, "other")
    assert len(await turns(pool, owner)) == 22


async def test_repeated_turn_within_one_event_is_stored_once(
    ingest: ServiceContext, nc: Client, pool: asyncpg.Pool, owner: str
) -> None:
    await publish(nc, chat(owner, ("user", "ok"), ("assistant", "ok"), ("user", "ok"), event_id="rep"))
    row = await wait_event(pool, owner, "rep")
    assert row["turns_stored"] == 2
    assert sorted(r["metadata"]["role"] for r in await turns(pool, owner)) == ["assistant", "user"]


async def test_no_memory_field_and_header_store_nothing_and_are_counted(
    ingest: ServiceContext, nc: Client, pool: asyncpg.Pool, owner: str
) -> None:
    before = EVENTS.labels("no_memory")._value.get()
    await publish(nc, chat(owner, ("user", "I prefer Rust."), event_id="nm-field", no_memory=True))
    for i, value in enumerate(["true", "1", "YES"]):
        await publish(nc, chat(owner, ("user", "I prefer Go."), event_id=f"nm-h{i}"), **{"x-memory-no-memory": value})
    await publish(nc, chat(owner, ("user", "I prefer C."), event_id="nm-case"), **{"X-Memory-No-Memory": "true"})
    await publish(nc, chat(owner, ("user", "kept"), event_id="nm-false"), **{"x-memory-no-memory": "false"})
    for eid in ("nm-field", "nm-h0", "nm-h1", "nm-h2", "nm-case"):
        row = await wait_event(pool, owner, eid)
        assert (row["outcome"], row["no_memory"], row["turns_stored"]) == ("no_memory", True, 0)
    assert (await wait_event(pool, owner, "nm-false"))["outcome"] == "stored"
    assert EVENTS.labels("no_memory")._value.get() - before == 5
    assert [r["content"] for r in await turns(pool, owner)] == ["kept"]
    hashes = await pool.fetchval("SELECT count(*) FROM turn_hashes WHERE owner = $1", owner)
    assert hashes == 1
    tap = await JobTap(nc).poll()
    assert [j.event_id for j in tap.extract] == ["nm-false"]


async def test_owner_settings_disable_or_skip_raw_turns(
    ingest: ServiceContext, nc: Client, pool: asyncpg.Pool, owner: str
) -> None:
    await put_values(pool, owner, {"enabled": False})
    await publish(nc, chat(owner, ("user", "I prefer Java."), event_id="off"))
    row = await wait_event(pool, owner, "off")
    assert (row["outcome"], row["turns_stored"]) == ("disabled", 0)

    await put_values(pool, owner, {"enabled": True, "storeTurns": False})
    await announce_change(nc, owner)  # as settings.put does: every cache drops the owner
    await publish(nc, chat(owner, ("user", "I prefer Kotlin."), event_id="noturns"))
    await publish(nc, chat(owner, ("user", "I prefer Kotlin."), event_id="noturns-again"))
    await wait_event(pool, owner, "noturns")
    await wait_event(pool, owner, "noturns-again")
    assert await turns(pool, owner) == []
    tap = await JobTap(nc).poll()
    # extraction still runs on the new turn, once; no vectors for turns that were not stored
    assert [(j.event_id, [(t.content, t.memory_id) for t in j.turns]) for j in tap.extract] == [
        ("noturns", [("I prefer Kotlin.", None)])
    ]
    assert tap.embed == []


async def test_a_raw_turn_stores_its_context_for_keyword_search(
    ingest: ServiceContext, nc: Client, pool: asyncpg.Pool, owner: str
) -> None:
    """A plain turn's head (when, who) is stored in ``context`` and found by a search for the
    speaker or the month; a turn carrying its own prefix and a memory added directly get none."""
    said = datetime(2023, 5, 8, 13, 56, 7, tzinfo=UTC)
    event = ChatEvent(
        event_id="ev-ctx",
        owner=owner,
        occurred_at=said,
        messages=[
            ChatMessage(role="user", content="I went to the adoption meeting", name="Caroline"),
            ChatMessage(role="assistant", content="How did the adoption meeting go?"),
            ChatMessage(role="user", content="[2:00 pm on 1 June, 2023] Mel: adoption papers are signed"),
        ],
    )
    await publish(nc, event, "ev-ctx")
    await wait_event(pool, owner, "ev-ctx")
    await MemoryClient(nc).create(owner, "Caroline prefers tea in May")
    rows = await pool.fetch("SELECT content, context FROM memories WHERE owner = $1 ORDER BY created_at", owner)
    contexts = {r["content"]: r["context"] for r in rows}
    assert contexts == {
        "I went to the adoption meeting": "[1:56 pm on 8 May, 2023] Caroline:",
        "How did the adoption meeting go?": "[1:56 pm on 8 May, 2023] Assistant:",
        "[2:00 pm on 1 June, 2023] Mel: adoption papers are signed": None,
        "Caroline prefers tea in May": None,
    }

    async def found(question: str) -> set[str]:
        hits = await pool.fetch(
            "SELECT content FROM memories WHERE owner = $1 AND tsv @@ websearch_to_tsquery('english', $2)",
            owner,
            question,
        )
        return {r["content"] for r in hits}

    assert await found("Caroline adoption") == {"I went to the adoption meeting"}
    assert await found("May adoption") == {"I went to the adoption meeting", "How did the adoption meeting go?"}
    assert await found("June Mel") == {"[2:00 pm on 1 June, 2023] Mel: adoption papers are signed"}
    assert await found("Caroline May") == {"I went to the adoption meeting", "Caroline prefers tea in May"}
