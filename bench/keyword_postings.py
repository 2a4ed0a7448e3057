"""The keyword-pruning prototype: BM25's exact top k from postings tables without ranking every
match, in one statement (measured by ``bench.keyword_pruning`` against the keyword tier).

``memory_postings`` (per bucket, lexeme and memory: the lexeme's count), ``memory_lexeme_df`` and
``memory_owner_docs`` are kept by triggers on ``memories`` (``keyword_postings.sql``). The statement is
MaxScore done set by set: the rarest words' memories, fully scored and checked for visibility,
give a threshold ``t`` that ``limit`` visible memories reach; the commonest words whose upper
bounds (``max_tf``) sum below ``t`` cannot lift a memory that has none of the others into the
answer, so only the other words' postings are read; their memories whose bound still reaches
``t`` get the remaining words added, and the visible ones with a score of at least ``t`` are
ranked (scores equal to 9 decimals tie, newest first: two equal memories' float sums may differ
in the last bit). A filter that hides memories only lowers ``t``: the answer is never cut short.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, Protocol

import asyncpg

from services.retrieve.logic import bm25 as bm25_logic
from services.retrieve.logic.bm25 import NO_MATCH, KeywordRanking, cover_of
from services.retrieve.logic.coverage import content_words
from services.retrieve.logic.lexemes import TS_CONFIG

#: postings of each of the two rarest words read to find the threshold's memories
SEED_POSTINGS = 256
#: bounds are compared with this much slack, so a float rounding never prunes a tie
_SLACK = "1.000000001"


#: how the threshold's memories are found (``_seed``)
Seed = Literal["none", "sample", "rarest", "pair"]


class Clauses(Protocol):
    """The visibility rule over alias ``m`` (``adapters.postgres._Clauses``)."""

    args: list[object]
    own: str
    shared: str
    common: str


SCHEMA = Path(__file__).with_name("keyword_postings.sql")


async def install(pool: asyncpg.Pool) -> None:
    """Create the postings tables and triggers (backfilled from the memories already there)."""
    await pool.execute(SCHEMA.read_text(encoding="utf-8"))


@dataclass(frozen=True)
class PostingsStatement:
    sql: str
    args: list[object]


def _weight(tf: str) -> str:
    """One lexeme's BM25 term (``logic.bm25.score``), written as the reference statement does."""
    return f"w.idf * {tf} * {bm25_logic.K1 + 1!r} / ({tf} + {bm25_logic.K1!r})"


def _seed(seed: Seed, term: str) -> str:
    """The ``ss`` CTE: memories fully scored to find the threshold. ``none``: no memory (no pruning,
    for comparison); ``sample``: up to ``$4`` postings
    of each of the two rarest words; ``rarest``: the two rarest words' postings read whole, the
    ``4 x $3`` memories best on those two fully scored; ``pair``: the first ``4 x $3`` memories of the
    owner holding both of the two rarest words (a merge of two lists sorted by memory) and as many
    holding the rarest."""
    if seed == "none":  # no threshold: every posting of every question word is read
        docs = " sd AS MATERIALIZED (SELECT NULL::text AS bucket, NULL::uuid AS memory_id WHERE $4::int < 0),"
    elif seed == "pair":
        rarest = "(SELECT lexeme FROM w ORDER BY df, lexeme LIMIT 1)"
        second = "(SELECT lexeme FROM w ORDER BY df, lexeme OFFSET 1 LIMIT 1)"
        docs = (
            " sd AS MATERIALIZED (SELECT * FROM (SELECT p1.bucket, p1.memory_id FROM memory_postings p1"
            "  JOIN memory_postings p2 ON p2.bucket = $2 AND p2.memory_id = p1.memory_id"
            f"  AND p2.lexeme = {second} WHERE p1.bucket = $2 AND p1.lexeme = {rarest} LIMIT 4 * $3) a"
            " UNION SELECT * FROM (SELECT p.bucket, p.memory_id FROM memory_postings p"
            f"  WHERE p.bucket IN ($2, '') AND p.lexeme = {rarest} LIMIT least($4::int, 4 * $3)) b),"
        )
    elif seed == "sample":
        docs = (
            " sd AS MATERIALIZED (SELECT DISTINCT p.bucket, p.memory_id"
            "  FROM (SELECT lexeme FROM w ORDER BY df, lexeme LIMIT 2) r"
            "  CROSS JOIN LATERAL (SELECT p.bucket, p.memory_id FROM memory_postings p"
            "   WHERE p.bucket IN ($2, '') AND p.lexeme = r.lexeme LIMIT $4) p),"
        )
    else:
        docs = (
            " sd AS MATERIALIZED (SELECT p.bucket, p.memory_id"
            "  FROM (SELECT lexeme FROM w ORDER BY df, lexeme LIMIT 2) r"
            "  JOIN w ON w.lexeme = r.lexeme"
            "  CROSS JOIN LATERAL (SELECT p.bucket, p.memory_id, p.tf FROM memory_postings p"
            "   WHERE p.bucket IN ($2, '') AND p.lexeme = r.lexeme) p"
            f"  GROUP BY 1, 2 ORDER BY sum({term}) DESC LIMIT least($4::int, 4 * $3)),"
        )
    return (
        docs + " ss AS MATERIALIZED (SELECT sd.memory_id, e.score FROM sd"
        f"  CROSS JOIN LATERAL (SELECT sum({term}) AS score FROM w JOIN memory_postings p"
        "   ON p.bucket = sd.bucket AND p.lexeme = w.lexeme AND p.memory_id = sd.memory_id) e),"
    )


def _rest(term: str, probe: bool) -> str:
    """The ``ex`` CTE: the commonest words' part of each remaining candidate's score. By default a
    join the planner runs as a hash join over those words' whole lists; ``probe``: one index probe
    per candidate for all of them."""
    if not probe:
        return (
            f" ex AS MATERIALIZED (SELECT p.memory_id, sum({term}) AS s, sum(p.tf) AS o FROM cf c"
            "  JOIN memory_postings p ON p.bucket = c.bucket AND p.memory_id = c.memory_id"
            "   AND p.lexeme = ANY ((SELECT coalesce(array_agg(lexeme), '{}') FROM ne)::text[])"
            "  JOIN w ON w.lexeme = p.lexeme GROUP BY p.memory_id),"
        )
    return (
        " na AS MATERIALIZED (SELECT coalesce(array_agg(lexeme), '{}')::text[] AS a FROM ne),"
        " ex AS MATERIALIZED (SELECT c.memory_id, e.s, e.o FROM cf c CROSS JOIN na"
        f"  CROSS JOIN LATERAL (SELECT sum({term}) AS s, sum(p.tf) AS o FROM memory_postings p"
        "   JOIN w ON w.lexeme = p.lexeme WHERE p.bucket = c.bucket AND p.memory_id = c.memory_id"
        "   AND p.lexeme = ANY (na.a)) e WHERE cardinality(na.a) > 0),"
    )


def statement(
    owner: str,
    query: str,
    limit: int,
    clauses: Callable[[int], Clauses],
    *,
    seed: Seed = "sample",
    probe: bool = False,
    diagnostic: bool = False,
) -> PostingsStatement:
    """The search statement: ``$1`` the question, ``$2`` the owner, ``$3`` the limit, ``$4`` the seed
    postings per word; the visibility parameters follow. ``diagnostic``: instead of the answer, one
    row of what the search read (``essential`` postings, the ``non_essential`` ones of the
    commonest words, ``candidates``, ``scored``,
    ``seeds``, ``threshold``, ``at_threshold``: memories scoring at least the threshold)."""
    c = clauses(5)
    visible = f"(({c.own}) OR ({c.shared})) AND {c.common}"
    term = _weight("p.tf::float8")
    head = (
        "WITH ql AS MATERIALIZED (SELECT DISTINCT x AS lexeme"
        f"  FROM unnest(tsvector_to_array(to_tsvector('{TS_CONFIG}', $1))) x),"
        " n AS MATERIALIZED (SELECT coalesce((SELECT docs FROM memory_owner_docs WHERE owner = $2), 0)::float8 AS n),"
        " w AS MATERIALIZED (SELECT s.lexeme, s.df, i.idf,"
        f"  i.idf * s.max_tf * {bm25_logic.K1 + 1!r} / (s.max_tf + {bm25_logic.K1!r}) AS ub"
        "  FROM (SELECT d.lexeme, sum(d.df)::float8 AS df, max(d.max_tf)::float8 AS max_tf FROM memory_lexeme_df d"
        "   WHERE d.bucket IN ($2, '') AND d.lexeme IN (SELECT lexeme FROM ql)"
        "   GROUP BY d.lexeme HAVING sum(d.df) > 0) s"
        "  CROSS JOIN n CROSS JOIN LATERAL"
        "  (SELECT ln(1 + (greatest(n.n, s.df) - s.df + 0.5) / (s.df + 0.5)) AS idf) i),"
        f"{_seed(seed, term)}"
        " th AS MATERIALIZED (SELECT coalesce((SELECT ss.score FROM ss JOIN memories m ON m.id = ss.memory_id"
        f"  WHERE {visible} ORDER BY ss.score DESC OFFSET $3 - 1 LIMIT 1), 0)::float8 AS t),"
        " ne AS MATERIALIZED (SELECT z.lexeme, z.run"
        "  FROM (SELECT lexeme, sum(ub) OVER (ORDER BY ub, lexeme) AS run FROM w) z"
        f"  CROSS JOIN th WHERE z.run * {_SLACK} < th.t),"
        " nu AS MATERIALIZED (SELECT coalesce(max(run), 0) AS u FROM ne),"
        f" ce AS MATERIALIZED (SELECT min(p.bucket) AS bucket, p.memory_id, sum({term}) AS part, sum(p.tf) AS occ"
        "  FROM w JOIN memory_postings p ON p.bucket IN ($2, '') AND p.lexeme = w.lexeme"
        "  WHERE w.lexeme NOT IN (SELECT lexeme FROM ne) GROUP BY p.memory_id),"
        " cf AS MATERIALIZED (SELECT c.bucket, c.memory_id, c.part, c.occ FROM ce c CROSS JOIN th CROSS JOIN nu"
        f"  WHERE (c.part + nu.u) * {_SLACK} >= th.t),"
        f"{_rest(term, probe)}"
        " fs AS MATERIALIZED (SELECT c.memory_id, c.part + coalesce(e.s, 0) AS score, c.occ + coalesce(e.o, 0) AS occ"
        "  FROM cf c LEFT JOIN ex e ON e.memory_id = c.memory_id)"
    )
    if diagnostic:
        sql = (
            f"{head} SELECT (SELECT coalesce(sum(df), 0) FROM w"
            "  WHERE lexeme NOT IN (SELECT lexeme FROM ne)) AS essential,"
            " (SELECT coalesce(sum(df), 0) FROM w WHERE lexeme IN (SELECT lexeme FROM ne)) AS non_essential,"
            " (SELECT count(*) FROM ce) AS candidates, (SELECT count(*) FROM fs) AS scored,"
            " (SELECT count(*) FROM sd) AS seeds, (SELECT t FROM th) AS threshold,"
            f" (SELECT count(*) FROM fs CROSS JOIN th WHERE fs.score * {_SLACK} >= th.t) AS at_threshold"
        )
    else:
        sql = (
            f"{head} SELECT f.memory_id AS id, f.score, max(f.occ) OVER () AS occurrences"
            f" FROM fs f CROSS JOIN th JOIN memories m ON m.id = f.memory_id"
            f" WHERE f.score * {_SLACK} >= th.t AND {visible}"
            " ORDER BY round(f.score::numeric, 9) DESC, m.created_at DESC, m.id LIMIT $3"
        )
    return PostingsStatement(sql, [query, owner, limit, SEED_POSTINGS, *c.args])


async def postings_search(
    pool: asyncpg.Pool,
    owner: str,
    query: str,
    limit: int,
    clauses: Callable[[int], Clauses],
    *,
    seed: Seed = "sample",
    probe: bool = False,
) -> KeywordRanking:
    """The keyword tier's answer from the postings: the exact BM25 top ``limit`` of the visible
    memories, ties newest first; ``cover`` from the memories that reach the threshold, at most
    the question's content words (all that ``coverage`` reads)."""
    if limit <= 0:
        return NO_MATCH
    st = statement(owner, query, limit, clauses, seed=seed, probe=probe)
    rows = await pool.fetch(st.sql, *st.args)
    if not rows:
        return NO_MATCH
    words = max(1, content_words(query))
    cover = cover_of(min(float(rows[0]["occurrences"] or 0), float(words)))
    return KeywordRanking([(str(r["id"]), float(r["score"])) for r in rows], cover)
