"""The planner statistics behind keyword-match pruning (``lexeme_logic``), read from ``pg_stats``.

``ANALYZE`` (autovacuum) keeps, for ``memories.tsv``, the most common lexemes with the
fraction of rows containing each, and for ``memories.owner`` the most common owners with
their share of rows. One snapshot per process, re-read at most every ``ttl_s`` seconds;
reading it costs three catalogue lookups. Until a table has been analysed the snapshot is
empty and nothing is pruned (every owner looks small).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import asyncpg

from services.retrieve.logic.lexemes import EMPTY_STATS, TermStats, quoted

_LEXEMES = (
    "SELECT most_common_elems::text::text[] AS elems, most_common_elem_freqs AS freqs FROM pg_stats"
    " WHERE schemaname = current_schema() AND tablename = 'memories' AND attname = 'tsv'"
)
_OWNERS = (
    "SELECT most_common_vals::text::text[] AS vals, most_common_freqs AS freqs, n_distinct FROM pg_stats"
    " WHERE schemaname = current_schema() AND tablename = 'memories' AND attname = 'owner'"
)
_ROWS = "SELECT greatest(reltuples, 0) FROM pg_class WHERE oid = 'memories'::regclass"


def snapshot(rows: float, lexemes: Mapping[str, Any] | None, owners: Mapping[str, Any] | None) -> TermStats:
    """Turn the ``pg_stats`` rows into a ``TermStats`` (pure; None rows = not analysed yet)."""
    if rows <= 0 or lexemes is None or owners is None:
        return EMPTY_STATS
    elems = list(lexemes["elems"] or [])
    freqs = list(lexemes["freqs"] or [])
    # most_common_elem_freqs: one per element, then their minimum, maximum and the null fraction
    lexeme_freq = {quoted(e): float(f) for e, f in zip(elems, freqs, strict=False)}
    minimum = float(freqs[len(elems)]) if len(freqs) > len(elems) else 0.0
    vals = list(owners["vals"] or [])
    owner_freqs = [float(f) for f in owners["freqs"] or []]
    distinct = float(owners["n_distinct"] or 0.0)
    distinct = -distinct * rows if distinct < 0 else distinct
    others = max(1.0, distinct - len(vals))
    return TermStats(
        rows=float(rows),
        lexeme_freq=lexeme_freq,
        rare_lexeme_freq=minimum / 2,
        owner_freq=dict(zip(vals, owner_freqs, strict=False)),
        other_owner_freq=max(0.0, 1.0 - sum(owner_freqs)) / others,
    )


async def read_term_stats(pool: asyncpg.Pool) -> TermStats:
    """The current snapshot (the engine keeps it for ``term_stats_ttl_s``)."""
    async with pool.acquire() as conn:
        rows = float(await conn.fetchval(_ROWS) or 0.0)
        return snapshot(rows, await conn.fetchrow(_LEXEMES), await conn.fetchrow(_OWNERS))
