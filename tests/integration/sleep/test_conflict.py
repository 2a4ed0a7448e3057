"""Phase 1 through the service: vector pairs, LLM batches, plans applied per batch, the two ledgers."""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Callable
from datetime import datetime
from typing import Any

import asyncpg
from nats.aio.client import Client

from memoryd.local.nats import EmbeddedNats
from memoryd.subjects import JOBS_STREAM

from .conftest import DIM, SleepLlm, add_memory, memory_row, put_settings, run_sleep, sleep_service, states


def vec(group: int, tilt: float = 0.0) -> list[float]:
    """Eight groups of near-parallel vectors: cosine ~1 inside a group, <= 0 across groups."""
    axis, sign = (group % 4) * 2, 1.0 if group < 4 else -1.0
    v = [0.0] * DIM
    v[axis] = sign
    v[axis + 1] = tilt
    return v


def pairs_of(prompt: str) -> list[tuple[str, str]]:
    """(a text, b text) of each pair of a conflict prompt, in order (each text is quoted as JSON)."""
    texts = [json.loads(t) for t in re.findall(r"^  [ab] \(updated [^)]*\): (.*)$", prompt, flags=re.M)]
    return list(zip(texts[0::2], texts[1::2], strict=True))


Rule = Callable[[int, Callable[[str], str]], dict[str, Any] | None]


def by_marker(rules: dict[str, Rule]) -> Callable[[str], dict[str, Any]]:
    """Decide each pair by the first marker word (e.g. MERGE) found in its two texts.

    A rule gets the pair's index and `side(text)`: "a" or "b", whichever memory holds
    `text` (pairs come in id order, not in seeding order).
    """

    def decide(prompt: str) -> dict[str, Any]:
        decisions = []
        for index, (a, b) in enumerate(pairs_of(prompt)):
            marker = next((m for m in rules if m in a or m in b), None)

            def side(text: str, a: str = a) -> str:
                return "a" if a == text else "b"

            decision = rules[marker](index, side) if marker else {"pair": index, "action": "keep"}
            if decision is not None:
                decisions.append(decision)
        return {"decisions": decisions}

    return decide


async def seed_pair(pool: asyncpg.Pool, owner: str, group: int, a: str, b: str, tilt: float = 0.1) -> tuple[str, str]:
    first = await add_memory(pool, owner, a, vector=vec(group))
    second = await add_memory(pool, owner, b, vector=vec(group, tilt))
    return first, second


def key(a: str, b: str) -> tuple[uuid.UUID, uuid.UUID]:
    x, y = sorted((a, b))
    return uuid.UUID(x), uuid.UUID(y)


async def ledger(pool: asyncpg.Pool, owner: str) -> dict[tuple[uuid.UUID, uuid.UUID], asyncpg.Record]:
    rows = await pool.fetch("SELECT * FROM conflict_reviewed WHERE owner = $1", owner)
    return {(r["memory_a"], r["memory_b"]): r for r in rows}


async def test_default_actions_apply_per_batch_and_every_pair_is_recorded(
    nats_server: EmbeddedNats, pg_dsn: str, pool: asyncpg.Pool, nc: Client, llm: SleepLlm
) -> None:
    merge = await seed_pair(pool, "o1", 0, "MERGE uses vim", "MERGE uses neovim")
    update = await seed_pair(pool, "o1", 1, "UPDATE lives in Berlin", "UPDATE moved to Lisbon")
    archive = await seed_pair(pool, "o1", 2, "ARCHIVE likes tea", "ARCHIVE likes tea a lot")
    conflict = await seed_pair(pool, "o1", 3, "CONFLICT is vegan", "CONFLICT eats fish")
    create = await seed_pair(pool, "o1", 4, "CREATE runs on Mondays", "CREATE runs on Fridays")
    keep = await seed_pair(pool, "o1", 5, "KEEP has a cat", "KEEP has a dog")
    invalid = await seed_pair(pool, "o1", 6, "INVALID wants supersede", "INVALID second")
    undecided = await seed_pair(pool, "o1", 7, "SILENT one", "SILENT two")
    llm.phases["conflict"] = by_marker(
        {
            "MERGE": lambda i, side: {
                "pair": i,
                "action": "merge",
                "keep": side("MERGE uses vim"),
                "content": "Uses vim and neovim.",
            },
            "UPDATE": lambda i, side: {
                "pair": i,
                "action": "update",
                "target": side("UPDATE lives in Berlin"),
                "content": "Lives in Lisbon.",
            },
            "ARCHIVE": lambda i, side: {"pair": i, "action": "archive", "target": side("ARCHIVE likes tea a lot")},
            "CONFLICT": lambda i, side: {"pair": i, "action": "conflict", "reason": "diet contradicts"},
            "CREATE": lambda i, side: {"pair": i, "action": "create", "content": "Runs twice a week."},
            "KEEP": lambda i, side: {"pair": i, "action": "keep"},
            "INVALID": lambda i, side: {"pair": i, "action": "supersede"},  # not in the default set
            "SILENT": lambda i, side: None,
        }
    )
    await put_settings(pool, "*", {"sleepConflictMaxPairs": 0})  # one batch
    async with sleep_service(nats_server, pg_dsn, llm):
        started = datetime.now().astimezone()
        run = await run_sleep(nc, "o1")
        info = await nc.jetstream().stream_info(JOBS_STREAM)

    phase = run.phases["conflict_resolution"]
    assert run.status == "ok"
    assert (phase["candidates"], phase["pairs"], phase["batches"], phase["batchesFailed"]) == (8, 8, 1, 0)
    assert (phase["merge"], phase["update"], phase["archive"], phase["conflict"], phase["create"]) == (1, 1, 1, 1, 1)
    assert (phase["keep"], phase["invalid"], phase["undecided"], phase["recorded"]) == (3, 1, 1, 8)

    kept = await memory_row(pool, merge[0])
    assert kept["content"] == "Uses vim and neovim." and kept["state"] == "active" and kept["needs_reindex"]
    gone = await memory_row(pool, merge[1])
    assert gone["state"] == "archived" and gone["metadata"]["mergedInto"] == merge[0]
    assert (await memory_row(pool, update[0]))["content"] == "Lives in Lisbon."
    assert (await memory_row(pool, update[1]))["content"] == "UPDATE moved to Lisbon"
    assert await states(pool, *archive) == ["active", "archived"]
    history = await pool.fetch("SELECT memory_id, old_content, reason FROM content_history ORDER BY id")
    assert sorted((str(h["memory_id"]), h["old_content"], h["reason"]) for h in history) == sorted(
        [(merge[0], "MERGE uses vim", "sleep:merge"), (update[0], "UPDATE lives in Berlin", "sleep:update")]
    )
    pending = await pool.fetch("SELECT memory_a, memory_b, reason FROM conflict_pending WHERE owner = 'o1'")
    assert [((p["memory_a"], p["memory_b"]), p["reason"]) for p in pending] == [(key(*conflict), "diet contradicts")]
    created = await pool.fetchrow("SELECT * FROM memories WHERE owner = 'o1' AND source = 'sleep'")
    assert created["content"] == "Runs twice a week." and sorted(created["metadata"]["derivedFrom"]) == sorted(create)
    assert set(await states(pool, *keep, *invalid, *undecided, *conflict)) == {"active"}
    assert info.state.messages == 3  # EmbedJobs: the merged, the updated and the created memory

    rows = await ledger(pool, "o1")
    assert set(rows) == {key(*p) for p in (merge, update, archive, conflict, create, keep, invalid, undecided)}
    outcomes = {k: r["outcome"] for k, r in rows.items()}
    assert outcomes[key(*merge)] == "merge" and outcomes[key(*conflict)] == "conflict"
    assert outcomes[key(*keep)] == outcomes[key(*invalid)] == outcomes[key(*undecided)] == "keep"
    newest = max([(await memory_row(pool, m))["updated_at"] for p in (keep, invalid) for m in p])
    judged = {r["judged_at"] for r in rows.values()}
    assert len(judged) == 1 and min(judged) >= started and min(judged) >= newest


FORGET_SCANS = "UPDATE dream_runs SET counters = counters - 'conflictScan'"  # full scans: the ledger alone decides


async def test_second_run_skips_judged_pairs_and_rejudges_changed_ones(
    nats_server: EmbeddedNats, pg_dsn: str, pool: asyncpg.Pool, nc: Client, llm: SleepLlm
) -> None:
    keep = await seed_pair(pool, "o1", 0, "KEEP a", "KEEP b")
    edited = await seed_pair(pool, "o1", 1, "EDIT a", "EDIT b")
    async with sleep_service(nats_server, pg_dsn, llm):
        first = await run_sleep(nc, "o1")
        await pool.execute("UPDATE memories SET updated_at = now() WHERE id = $1", uuid.UUID(edited[1]))
        await pool.execute(FORGET_SCANS)
        second = await run_sleep(nc, "o1")
        await pool.execute(FORGET_SCANS)
        third = await run_sleep(nc, "o1")
    assert (first.phases["conflict_resolution"]["pairs"], first.phases["conflict_resolution"]["recorded"]) == (2, 2)
    phase = second.phases["conflict_resolution"]
    assert (phase["ledgerSkipped"], phase["pairs"], phase["batches"]) == (1, 1, 1)
    assert sorted(pairs_of(llm.prompts("conflict")[1])[0]) == ["EDIT a", "EDIT b"]
    assert (third.phases["conflict_resolution"]["ledgerSkipped"], third.phases["conflict_resolution"]["pairs"]) == (
        2,
        0,
    )
    assert third.status == "noop"
    assert keep  # both untouched


async def test_after_a_complete_scan_only_changed_memories_probe(
    nats_server: EmbeddedNats, pg_dsn: str, pool: asyncpg.Pool, nc: Client, llm: SleepLlm
) -> None:
    await seed_pair(pool, "o1", 0, "STILL a", "STILL b")
    changed = await seed_pair(pool, "o1", 1, "CHANGED a", "CHANGED b")
    hub = await add_memory(pool, "o1", "HUB", vector=vec(2))
    async with sleep_service(nats_server, pg_dsn, llm):
        full = await run_sleep(nc, "o1")
        await pool.execute("UPDATE memories SET updated_at = now() WHERE id = $1", uuid.UUID(changed[0]))
        incremental = await run_sleep(nc, "o1")
        await add_memory(pool, "o1", "HUB twin", vector=vec(2, 0.05))
        await add_memory(pool, "o1", "HUB cousin", vector=vec(2, -0.1))
        with_leftover = await run_sleep(nc, "o1")  # one pair per memory: one pair waits
        after_leftover = await run_sleep(nc, "o1")
    counters = {
        r["id"]: r["counters"]["conflictScan"]
        for r in await pool.fetch("SELECT id, counters FROM dream_runs WHERE owner = 'o1'")
    }

    def scan(run: Any) -> dict[str, Any]:
        return counters[uuid.UUID(run.run_id)]  # type: ignore[no-any-return]

    assert scan(full) == {"since": None, "threshold": 0.85, "complete": True}
    assert datetime.fromisoformat(scan(incremental)["since"]) == full.started_at
    assert incremental.phases["conflict_resolution"]["candidates"] == 1  # the STILL pair did not probe
    # the new memories kept an old updated_at (like imports): their fresh vectors force a full scan
    assert scan(with_leftover) == {"since": None, "threshold": 0.85, "complete": True}
    assert with_leftover.phases["conflict_resolution"]["dedupeSkipped"] == 2  # the HUB triangle: one pair judged
    assert datetime.fromisoformat(scan(after_leftover)["since"]) == with_leftover.started_at
    waiting = after_leftover.phases["conflict_resolution"]
    assert (waiting["candidates"], waiting["pairs"], waiting["dedupeSkipped"]) == (2, 1, 1)  # from the backlog
    assert await pool.fetchval("SELECT count(*) FROM conflict_backlog WHERE owner = 'o1'") == 1
    assert hub
