"""The keyword-pruning prototype (``bench.keyword_postings``) on real PostgreSQL: its triggers keep
the postings equal to a recount after inserts, updates, state and scope changes and deletes (and
backfill rows that were there before), and its pruned top k is the reference statement's exact
BM25 ranking under every visibility rule (sessions, global rows, expired rows, types, metadata,
retention), ties newest first, when both use the postings' statistics."""

from __future__ import annotations

import functools
import itertools
import math
import random
import uuid
from datetime import UTC, datetime, timedelta

import asyncpg
import pytest

from bench import keyword_postings as kp
from bench import synth
from bench.keyword_pruning import recall
from services.retrieve.adapters import postgres as tiers
from services.retrieve.logic.lexemes import unquoted_lexemes
from shared.db.memories import content_hash
from shared.metadata_filter import parse

pytestmark = pytest.mark.integration

OWNERS = ("kpa", "kpb", "kpc")
TYPES = ("factual", "episodic")


async def _insert(pool: asyncpg.Pool, rnd: random.Random, texts: list[str], start: datetime) -> list[str]:
    """One INSERT statement per memory, a second apart, of random owners, sessions, scopes, types."""
    ids = []
    for i, text in enumerate(texts):
        mid = uuid.uuid4()
        ids.append(str(mid))
        created = start + timedelta(seconds=i)
        expired = rnd.random() < 0.05
        await pool.execute(
            "INSERT INTO memories (id, owner, session_id, type, content, source, scope, metadata, created_at,"
            " updated_at, expires_at, content_hash) VALUES ($1, $2, $3, $4, $5, 'api', $6, $7::jsonb, $8, $8, $9, $10)",
            mid,
            rnd.choice(OWNERS),
            f"s{rnd.randint(0, 3)}",
            rnd.choice(TYPES),
            text,
            "global" if rnd.random() < 0.1 else "apiKey",
            {"topic": rnd.choice(("work", "home"))},
            created,
            created - timedelta(days=400) if expired else None,
            content_hash(text),
        )
    return ids


async def _postings_match_a_recount(pool: asyncpg.Pool) -> None:
    bucket = "CASE WHEN m.scope = 'global' THEN '' ELSE m.owner END"
    recount = await pool.fetch(
        f"SELECT {bucket} AS bucket, x.lexeme, m.id AS memory_id, cardinality(x.positions) AS tf"
        " FROM memories m, unnest(m.tsv) x WHERE m.state = 'active' ORDER BY 1, 2, 3"
    )
    kept = await pool.fetch("SELECT bucket, lexeme, memory_id, tf FROM memory_postings ORDER BY 1, 2, 3")
    assert [tuple(r) for r in kept] == [tuple(r) for r in recount]
    df = await pool.fetch(
        "SELECT d.bucket, d.lexeme, d.df, d.max_tf, coalesce(p.n, 0) AS n, coalesce(p.top, 0) AS top"
        " FROM memory_lexeme_df d LEFT JOIN (SELECT bucket, lexeme, count(*) AS n, max(tf) AS top"
        " FROM memory_postings GROUP BY 1, 2) p USING (bucket, lexeme)"
    )
    assert df and all(r["df"] == r["n"] and r["max_tf"] >= r["top"] for r in df)
    assert {r["lexeme"] for r in df if r["df"] > 0} == {r["lexeme"] for r in kept}
    docs = dict(await pool.fetch("SELECT owner, docs FROM memory_owner_docs WHERE docs > 0"))
    active = dict(await pool.fetch("SELECT owner, count(*) FROM memories WHERE state = 'active' GROUP BY 1"))
    assert docs == active


async def _reference(pool: asyncpg.Pool, vis: tiers.Visibility, question: str) -> list[tuple[str, float, datetime]]:
    """Every visible match ranked by the keyword tier's own statement, BM25's N and document
    frequencies floored to the postings' (the prototype's statistics)."""
    text = await pool.fetchval("SELECT websearch_to_tsquery('english', $1)::text", question)
    lexemes = unquoted_lexemes(text)
    stats = dict(
        await pool.fetch(
            "SELECT lexeme, sum(df)::float8 FROM memory_lexeme_df WHERE bucket IN ($1, '') AND lexeme = ANY($2)"
            " GROUP BY lexeme",
            vis.owner,
            lexemes,
        )
    )
    documents = await pool.fetchval("SELECT docs::float8 FROM memory_owner_docs WHERE owner = $1", vis.owner)
    c = tiers._Clauses(vis, 7)
    st = tiers._KeywordStatement(
        head="",
        c=c,
        matches=["$1::tsquery"],
        rank=None,
        counts=tiers._Counts("$4::text[]", "$6::float8", floors="$5::float8[]"),
        args=[
            text.replace(" & ", " | "),
            10_000,
            None,
            lexemes,
            [stats.get(x, 0.0) for x in lexemes],
            documents,
            *c.args,
        ],
    )
    rows = await pool.fetch(tiers._bm25_sql(st), *st.args)
    created = dict(await pool.fetch("SELECT id::text, created_at FROM memories"))
    return [(str(r["id"]), float(r["score"]), created[str(r["id"])]) for r in rows]


async def _frequencies(pool: asyncpg.Pool, owner: str, question: str) -> list[tuple[str, int]]:
    return [
        (r["lexeme"], int(r["df"]))
        for r in await pool.fetch(
            "SELECT lexeme, sum(df) AS df FROM memory_lexeme_df WHERE bucket IN ($1, '')"
            " AND lexeme = ANY(tsvector_to_array(to_tsvector('english', $2))) GROUP BY lexeme",
            owner,
            question,
        )
    ]


def _same_top(reference: list[tuple[str, float, datetime]], got: list[tuple[str, float]], k: int) -> None:
    """``got`` is the reference's top ``k``: the same scores in order, every memory scored as the
    reference scores it, and within a tied score the newest first (which ties the last place cuts
    may differ only in what the float rounding of equal scores leaves)."""
    assert len(got) == min(k, len(reference))
    by_id = {m: (s, at) for m, s, at in reference}
    for (m, s), (_, ref_score, _) in zip(got, reference, strict=False):
        assert math.isclose(s, ref_score, rel_tol=1e-9), (m, s, ref_score)
        assert math.isclose(by_id[m][0], s, rel_tol=1e-9)
    for (a, sa), (b, sb) in itertools.pairwise(got):
        if math.isclose(sa, sb, rel_tol=1e-9):
            assert by_id[a][1] >= by_id[b][1], "ties newest first"
    assert recall([(m, s) for m, s, _ in reference], got, k) == 1.0


async def test_postings_follow_every_write_and_the_pruned_top_k_is_exact(pool: asyncpg.Pool) -> None:
    rnd = random.Random(3)
    start = datetime.now(UTC) - timedelta(days=30)
    texts = list(synth.sentences(700, seed=21))
    before = await _insert(pool, rnd, texts[:200], start)  # there before the tables: backfilled
    await kp.install(pool)
    ids = before + await _insert(pool, rnd, texts[200:500], start + timedelta(hours=1))
    await pool.copy_records_to_table(  # a bulk load is one statement with many rows
        "memories",
        records=[
            (uuid.uuid4(), rnd.choice(OWNERS), "s9", "factual", t, "import", content_hash(t)) for t in texts[500:]
        ],
        columns=["id", "owner", "session_id", "type", "content", "source", "content_hash"],
    )
    await _postings_match_a_recount(pool)
    picked = rnd.sample(ids, 120)
    for mid in picked[:30]:
        await pool.execute("UPDATE memories SET content = $2 || ' meeting notes' WHERE id = $1", mid, "Moved:")
    await pool.execute("UPDATE memories SET state = 'archived' WHERE id = ANY($1::uuid[])", picked[30:60])
    await pool.execute("UPDATE memories SET state = 'active' WHERE id = ANY($1::uuid[])", picked[30:40])
    await pool.execute("UPDATE memories SET scope = 'global' WHERE id = ANY($1::uuid[])", picked[60:75])
    await pool.execute("UPDATE memories SET last_accessed_at = now() WHERE id = ANY($1::uuid[])", picked[75:100])
    await pool.execute("DELETE FROM memories WHERE id = ANY($1::uuid[])", picked[100:])
    await _postings_match_a_recount(pool)

    visibilities = [
        tiers.Visibility("kpa", None, None, 3650),
        tiers.Visibility("kpb", "s1", None, 3650),
        tiers.Visibility("kpc", None, ("factual",), 3650),
        tiers.Visibility("kpa", None, None, 3650, parse({"topic": "work"})),
        tiers.Visibility("kpb", None, None, 20),
    ]
    questions = [*synth.questions(12, seed=5), "meeting notes", "nothing matches zyzzyva"]
    checked = pruned = 0
    for vis in visibilities:
        for q in questions:
            reference = await _reference(pool, vis, q)
            ways = (("none", False), ("sample", False), ("rarest", False), ("pair", False), ("pair", True))
            for k, (seed, probe) in itertools.product((1, 3, 10), ways):
                clauses = functools.partial(tiers._Clauses, vis)
                got = await kp.postings_search(pool, vis.owner, q, k, clauses, seed=seed, probe=probe)
                _same_top(reference, got.ranked, k)
                checked += bool(got.ranked)
                st = kp.statement(vis.owner, q, k, clauses, seed=seed, probe=probe, diagnostic=True)
                read = await pool.fetchrow(st.sql, *st.args)
                pruned += read["essential"] < sum(d for _, d in await _frequencies(pool, vis.owner, q))
    assert checked > 400
    assert pruned > 50  # the bound left some common word's postings unread
