"""Keyword-match pruning on real PostgreSQL: a large owner's common words stop being candidates
on their own, the rare words and all-words matches still are, and small owners are untouched."""

from __future__ import annotations

import asyncpg
import pytest

from services.retrieve.adapters import postgres as tiers
from services.retrieve.adapters.postgres_stats import read_term_stats
from services.retrieve.logic.bm25 import KEYWORD_SCORINGS, KeywordScoring
from services.retrieve.logic.lexemes import WIDEN_BELOW

from .seeding import seed_texts

pytestmark = pytest.mark.integration


#: enough rows with a rare word that the pruned plan is not widened (``lexemes.WIDEN_BELOW``)
SPECIAL = [
    "work trip to Lisbon",
    "Lisbon weekend",
    "flight delayed again",
    "work flight to Lisbon",
    *(f"Lisbon day {i}" for i in range(WIDEN_BELOW)),
]


@pytest.fixture(scope="module")
async def seeded(pool: asyncpg.Pool) -> tuple[dict[str, str], dict[str, str]]:
    """Owner ``big``: 3000 rows saying 'work' and ``SPECIAL`` with rarer words; owner ``small``: two rows."""
    common = [f"went to work on the budget, item {i}" for i in range(3000)]
    ids = await seed_texts(pool, "big", common + SPECIAL)
    small = await seed_texts(pool, "small", ["went to work early", "Lisbon is sunny"])
    await pool.execute("ANALYZE memories")
    return ids, small


@pytest.mark.parametrize("scoring", KEYWORD_SCORINGS)
async def test_large_owner_matches_rare_and_all_words_only(
    pool: asyncpg.Pool, seeded: tuple[dict[str, str], dict[str, str]], scoring: KeywordScoring
) -> None:
    ids, small = seeded
    special = SPECIAL
    stats = await read_term_stats(pool)
    assert stats.owner_rows("big") > 2000

    big = tiers.Visibility("big", None, None, 365)
    pruned = (
        await tiers.keyword_search(
            pool, big, "work flight Lisbon", 50, None, stats=stats, match_budget=500, scoring=scoring
        )
    ).ranked
    full = (await tiers.keyword_search(pool, big, "work flight Lisbon", 50, None, scoring=scoring)).ranked
    # 'work' alone (3000 rows) no longer makes a candidate; every row with a rare word still does
    assert {m for m, _ in pruned} == {ids[t] for t in special}
    assert len(full) == 50 and {ids[t] for t in special} <= {m for m, _ in full}
    # ranking still scores all the words: the row with all three comes first either way
    assert pruned[0][0] == full[0][0] == ids["work flight to Lisbon"]

    small_vis = tiers.Visibility("small", None, None, 365)
    got = (
        await tiers.keyword_search(
            pool, small_vis, "work Lisbon", 10, None, stats=stats, match_budget=500, scoring=scoring
        )
    ).ranked
    assert {m for m, _ in got} == set(small.values())  # a small owner matches any word, as before


async def test_phrases_and_negations_are_not_pruned(pool: asyncpg.Pool, seeded: object) -> None:
    stats = await read_term_stats(pool)
    big = tiers.Visibility("big", None, None, 365)
    got = (await tiers.keyword_search(pool, big, "work -Lisbon", 5, None, stats=stats, match_budget=500)).ranked
    assert len(got) == 5  # AND NOT semantics kept: common rows without Lisbon
    rows = await pool.fetch("SELECT content FROM memories WHERE id = ANY($1::uuid[])", [m for m, _ in got])
    assert all("Lisbon" not in r["content"] for r in rows)
