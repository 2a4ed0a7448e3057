"""The in-process keyword index (``bench.keyword_inproc``) on real PostgreSQL: built from the
memories' lexemes, it ranks as the keyword tier's exact statement does (same scores, ties newest
first, same cover), before and after memories are appended and deleted, and it leaves negations
and phrases to the statement."""

from __future__ import annotations

import itertools
import math
import random
import uuid
from datetime import UTC, datetime, timedelta

import asyncpg
import pytest

from bench import keyword_inproc as inproc
from bench import synth
from bench.keyword_pruning import recall
from services.retrieve.adapters import postgres as tiers
from services.retrieve.logic.keyword_index import OwnerIndex
from shared.db.memories import content_hash

pytestmark = pytest.mark.integration

OWNER = "kia"
VIS = tiers.Visibility(OWNER, None, None, 3650)


async def _insert(pool: asyncpg.Pool, owner: str, text: str, created: datetime, **extra: object) -> uuid.UUID:
    mid = uuid.uuid4()
    await pool.execute(
        "INSERT INTO memories (id, owner, type, content, source, created_at, updated_at, content_hash, state,"
        " expires_at) VALUES ($1, $2, 'episodic', $3, 'api', $4, $4, $5, $6, $7)",
        mid, owner, text, created, content_hash(text), extra.get("state", "active"), extra.get("expires_at"),
    )  # fmt: skip
    return mid


async def _statement(pool: asyncpg.Pool, question: str, k: int) -> tuple[list[tuple[str, float]], float]:
    got = await tiers.keyword_search(pool, VIS, question, k, None, match_budget=0)
    return got.ranked, got.cover


async def _same_as_statement(pool: asyncpg.Pool, index: OwnerIndex, questions: list[str]) -> int:
    """Every plain question's top k from the index is the statement's; returns how many matched."""
    created = {str(r[0]): r[1] for r in await pool.fetch("SELECT id, created_at FROM memories")}
    compared = 0
    for text, k in itertools.product(questions, (1, 3, 10)):
        q = await inproc.question(pool, text)
        assert q.plain, text
        mine = inproc.ranking(index, q, k)
        ranked, cover = await _statement(pool, text, k)
        deeper, _ = await _statement(pool, text, 1000)
        assert len(mine.ranked) == len(ranked), text
        for (m, s), (_, ref) in zip(mine.ranked, ranked, strict=True):
            assert math.isclose(s, ref, rel_tol=1e-9), (text, m, s, ref)
        for (a, sa), (b, sb) in itertools.pairwise(mine.ranked):
            if math.isclose(sa, sb, rel_tol=1e-9):
                assert (created[a], uuid.UUID(b)) >= (created[b], uuid.UUID(a)), "ties newest first, then id"
        assert recall(deeper, mine.ranked, k) == 1.0
        assert mine.cover == pytest.approx(cover)
        compared += bool(ranked)
    return compared


async def test_the_index_ranks_as_the_exact_statement_before_and_after_writes(pool: asyncpg.Pool) -> None:
    rnd = random.Random(4)
    start = datetime.now(UTC) - timedelta(days=20)
    texts = list(synth.sentences(400, seed=31))
    for i, text in enumerate(texts):
        await _insert(pool, OWNER, text, start + timedelta(minutes=i))
    same_time = start + timedelta(days=1)
    for _ in range(4):  # equal memories at one time: tied scores ordered by id alone
        await _insert(pool, OWNER, "Budget review budget review with Jonas", same_time)
    await _insert(pool, OWNER, "budget budget budget meeting", start)
    # not the owner's, archived or expired: neither in the index nor in the statement
    await _insert(pool, "kib", "budget review with Jonas", start)
    await _insert(pool, OWNER, "budget review archived", start, state="archived")
    await _insert(pool, OWNER, "budget review expired", start, expires_at=start)

    index = OwnerIndex(await inproc.read_docs(pool, OWNER))
    assert index.size == 405
    questions = [*synth.questions(15, seed=8), "budget review", "Jonas budget", "nothing matches zyzzyva"]
    assert await _same_as_statement(pool, index, questions) >= 15

    # writes: new memories appended with their lexemes read back, some deleted in both places
    fresh = [await _insert(pool, OWNER, t, datetime.now(UTC)) for t in synth.sentences(30, seed=32)]
    fresh.append(await _insert(pool, OWNER, "Budget review budget review with Jonas", same_time))
    rows = await pool.fetch(inproc.DOCS_SQL + " AND m.id = ANY($2::uuid[])", OWNER, fresh)
    for doc in inproc.docs_of(rows):
        index.append(doc)
    ids = [r[0] for r in await pool.fetch("SELECT id FROM memories WHERE owner = $1 AND state = 'active'", OWNER)]
    gone = rnd.sample(ids, 40)
    await pool.execute("DELETE FROM memories WHERE id = ANY($1::uuid[])", gone)
    for mid in gone:
        index.delete(mid)
    assert await _same_as_statement(pool, index, questions) >= 15
    index.compact()
    assert await _same_as_statement(pool, index, questions) >= 15


@pytest.mark.parametrize(
    ("text", "plain"),
    [
        ("budget review", True),
        ("budget -review", False),  # a negation
        ('"budget review" Jonas', False),  # a phrase
        ("budget or review", True),
        ("the and of", True),  # stopwords only: no lexeme, no match
    ],
)
async def test_only_plain_any_word_questions_are_ranked_in_process(pool: asyncpg.Pool, text: str, plain: bool) -> None:
    q = await inproc.question(pool, text)
    assert q.plain is plain
    if text == "budget or review":
        assert q.lexemes == ("budget", "review")
    if text == "the and of":
        assert q.lexemes == ()
