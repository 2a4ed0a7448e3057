"""The keyword tier's BM25 on real PostgreSQL: the SQL scores as the pure reference does, a rare
word outranks a common one, another owner's memories never change an owner's scores, the cover
stays on ts_rank_cd's scale, an owner within the match budget is searched through its own rows,
a pruned large owner still ranks by BM25, and a pruned plan that finds too few is widened."""

from __future__ import annotations

import uuid
from collections import Counter

import asyncpg
import pytest

from services.retrieve.adapters import postgres as tiers
from services.retrieve.adapters.postgres_stats import read_term_stats
from services.retrieve.logic import lexemes
from services.retrieve.logic.bm25 import score

from .seeding import seed_texts

pytestmark = pytest.mark.integration

TEXTS = [
    "Caroline: I went to the pride parade with friends",
    "Caroline: my research on adoption agencies is going well",
    "Caroline: Caroline here, Caroline again, thanks Melanie",
    "Melanie: I painted a sunrise by the lake",
    "Caroline: research research research about counseling",
    "Melanie: camping in July with the kids",
]


async def _seed(pool: asyncpg.Pool, owner: str, texts: list[str]) -> dict[str, str]:
    """Memory id -> text."""
    return {mid: text for text, mid in (await seed_texts(pool, owner, texts)).items()}


async def _reference(pool: asyncpg.Pool, owner: str, question: str) -> dict[str, float]:
    """BM25 by the pure reference: lexemes and counts from PostgreSQL's own parser."""
    lexemes = set(await pool.fetchval("SELECT tsvector_to_array(to_tsvector('english', $1))", question))
    rows = await pool.fetch(
        "SELECT m.id, x.lexeme, cardinality(x.positions) AS tf FROM memories m, unnest(m.tsv) AS x"
        " WHERE m.owner = $1 AND x.lexeme = ANY($2::text[])",
        owner,
        list(lexemes),
    )
    documents = await pool.fetchval("SELECT count(*) FROM memories WHERE owner = $1", owner)
    df = Counter(r["lexeme"] for r in rows)
    per_doc: dict[str, list[tuple[int, int]]] = {}
    for r in rows:
        per_doc.setdefault(str(r["id"]), []).append((df[r["lexeme"]], r["tf"]))
    return {m: score(documents, [f for f, _ in v], [t for _, t in v]) for m, v in per_doc.items()}


async def test_sql_scores_match_the_reference_and_rare_words_win(pool: asyncpg.Pool) -> None:
    owner = f"bm25-{uuid.uuid4().hex[:8]}"
    ids = await _seed(pool, owner, TEXTS)
    vis = tiers.Visibility(owner, None, None, 365)
    question = "What did Caroline research?"
    got = await tiers.keyword_search(pool, vis, question, 10)
    expected = await _reference(pool, owner, question)
    assert dict(got.ranked) == pytest.approx(expected, rel=1e-9)
    # 'research' (2 of 6 memories) outweighs 'caroline' (4 of 6), even said three times
    assert ids[got.ranked[0][0]].startswith("Caroline: research research")
    assert ids[got.ranked[1][0]].startswith("Caroline: my research")
    # the cover: the most question-word occurrences of any match (3 x research + 1 x caroline)
    assert got.cover == pytest.approx(0.4)
    # ts_rank_cd ranks by occurrences: the thrice-named Caroline line beats 'my research'
    dense = await tiers.keyword_search(pool, vis, question, 10, scoring="cover_density")
    assert dense.cover == pytest.approx(0.4)
    assert [ids[m][:30] for m, _ in dense.ranked[:2]] == [
        "Caroline: research research re",
        "Caroline: Caroline here, Carol",
    ]


async def test_another_owners_memories_never_change_the_scores(pool: asyncpg.Pool) -> None:
    owner = f"bm25-{uuid.uuid4().hex[:8]}"
    await _seed(pool, owner, TEXTS)
    vis = tiers.Visibility(owner, None, None, 365)
    before = await tiers.keyword_search(pool, vis, "Caroline research camping", 10)
    # a hostile tenant floods the same words
    await _seed(pool, f"other-{uuid.uuid4().hex[:8]}", ["research camping camping"] * 200)
    after = await tiers.keyword_search(pool, vis, "Caroline research camping", 10)
    assert after == before


async def test_a_question_without_a_lexeme_matches_nothing(pool: asyncpg.Pool) -> None:
    owner = f"bm25-{uuid.uuid4().hex[:8]}"
    await _seed(pool, owner, TEXTS)
    got = await tiers.keyword_search(pool, tiers.Visibility(owner, None, None, 365), "what is it?", 10)
    assert got.ranked == [] and got.cover == 0.0


async def test_an_owner_within_the_budget_is_searched_through_its_own_rows(pool: asyncpg.Pool) -> None:
    """Within the match budget the owner's rows are tested one by one instead of being looked up in
    the GIN index (which holds every owner's rows): the same ranking, for both scorings, as the
    index path, with another owner's matches left out of both."""
    owner = f"bm25-small-{uuid.uuid4().hex[:8]}"
    await _seed(pool, owner, TEXTS)
    await _seed(pool, f"other-{uuid.uuid4().hex[:8]}", ["research camping Caroline"] * 50)
    vis = tiers.Visibility(owner, None, None, 365)
    question = "Caroline research camping"
    for scoring in ("bm25", "cover_density"):
        own_rows = await tiers.keyword_search(pool, vis, question, 10, 2000, match_budget=1000, scoring=scoring)
        through_index = await tiers.keyword_search(pool, vis, question, 10, 2000, match_budget=0, scoring=scoring)
        assert own_rows == through_index and len(own_rows.ranked) == 5
    # the owner's rows are filtered by the full-text test itself, which no index can answer
    statement = tiers._unpruned(vis, question, 10, 2000, owner_scan=True)
    plan = [r[0].strip() for r in await pool.fetch("EXPLAIN " + tiers._bm25_sql(statement), *statement.args)]
    assert any(line.startswith("Filter: (ts_match_vq(") for line in plan), plan


async def test_a_pruned_large_owner_ranks_by_bm25_with_estimated_frequencies(pool: asyncpg.Pool) -> None:
    owner = f"bm25-big-{uuid.uuid4().hex[:8]}"
    common = [f"went to work on the budget, item {i}" for i in range(3000)]
    flights = [f"flight {i} to Lisbon" for i in range(lexemes.WIDEN_BELOW)]
    ids = await _seed(pool, owner, [*common, "work trip to Lisbon", *flights, "work work work"])
    await pool.execute("ANALYZE memories")
    stats = await read_term_stats(pool)
    vis = tiers.Visibility(owner, None, None, 365)
    got = await tiers.keyword_search(pool, vis, "work trip Lisbon", 50, 2000, stats=stats, match_budget=500)
    texts = [ids[m] for m, _ in got.ranked]
    # 'work' is pruned from the match (3000 rows): only rows with a rare word or every word remain
    # (enough of them: no widening), and the rarest words rank first whatever 'work' adds
    assert texts[0] == "work trip to Lisbon"
    assert set(texts) == {"work trip to Lisbon", *flights}
    scores = [s for _, s in got.ranked]
    assert all(s > 0 for s in scores) and scores == sorted(scores, reverse=True)


async def test_a_pruned_plan_that_finds_too_few_is_widened(pool: asyncpg.Pool) -> None:
    """'kayak' is assumed rare but no memory holds it, and 'cycling' and 'trip' are each too common
    to keep: the pruned plan finds nothing, so it widens to the memories holding all words but one
    (and stops there: enough found), never to those holding one word only."""
    owner = f"bm25-wide-{uuid.uuid4().hex[:8]}"
    both = [f"a cycling trip, day {i}" for i in range(600)]
    one = [f"cycling to work, day {i}" for i in range(600)] + [f"a trip to work, day {i}" for i in range(600)]
    ids = await _seed(pool, owner, [*both, *one, *(f"went to the office, day {i}" for i in range(1200))])
    await pool.execute("ANALYZE memories")
    stats = await read_term_stats(pool)
    vis = tiers.Visibility(owner, None, None, 365)
    question = "kayak cycling trip"
    never_widened = await tiers.keyword_search(
        pool, vis, question, 50, 2000, stats=stats, match_budget=500, widen_below=0
    )
    assert never_widened.ranked == []
    got = await tiers.keyword_search(pool, vis, question, 50, 2000, stats=stats, match_budget=500)
    assert len(got.ranked) == 50
    assert all(ids[m] in both for m, _ in got.ranked)
