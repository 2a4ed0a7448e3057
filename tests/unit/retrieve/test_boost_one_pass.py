"""``plan.boost`` reads what its boosts need of the rows in one pass; the scores and order are those
of the gains applied one by one over every row, as the boosts define them."""

from __future__ import annotations

import json
import random
from datetime import UTC, date, datetime, timedelta

from services.retrieve.logic import temporal
from services.retrieve.logic.fusion import (
    Fused,
    neighbour_gains,
    rescored,
    scores_of,
    session_gains,
    speaker_gains,
    temporal_gains,
)
from services.retrieve.logic.plan import MemoryRow, boost

TODAY = date(2026, 3, 1)
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
START = datetime(2026, 1, 1, tzinfo=UTC)
TEXTS = ["we met in May 2025", "the trip was last week", "I like tea", "[8 May 2025] back from Paris", "hello"]


def _stored(at: datetime) -> datetime | int:
    """Half the rows hold microseconds since the epoch, as ``fetch_rows`` reads them."""
    return at if at.hour % 2 else (at - EPOCH) // timedelta(microseconds=1)


def _as_datetime(at: datetime | int) -> datetime:
    return at if isinstance(at, datetime) else EPOCH + timedelta(microseconds=at)


def _rows(rng: random.Random, n: int) -> dict[str, MemoryRow]:
    out = {}
    for i in range(n):
        session = rng.choice([None, "s1", "s2", "s3"])
        meta = {"speaker": rng.choice(["Ann", "Bob Ray", 7])} if rng.random() < 0.5 else {"k": "speaker"}
        out[f"m{i:03d}"] = MemoryRow(
            id=f"m{i:03d}",
            content=rng.choice(TEXTS),
            memory_type="episodic",
            created_at=_stored(START + timedelta(days=rng.randrange(60), hours=rng.randrange(24))),
            session_id=session,
            metadata_json=json.dumps(meta),
            turn=rng.randrange(30) if session is not None and rng.random() < 0.8 else None,
        )
    return out


def _one_by_one(ranked: list[Fused], rows: dict[str, MemoryRow], query: str) -> list[Fused]:
    scores = session_gains(scores_of(ranked), {i: r.session_id for i, r in rows.items()}, 0.3)
    positions = {i: (r.session_id, r.turn) for i, r in rows.items() if r.session_id is not None and r.turn is not None}
    scores = neighbour_gains(scores, positions, 0.3)
    scores = speaker_gains(scores, {i: r.speaker for i, r in rows.items()}, query, 0.6)
    scores = temporal_gains(scores, {i: r.content for i, r in rows.items()}, query, 0.2)
    moments = {i: (r.content, _as_datetime(r.created_at).date()) for i, r in rows.items()}
    return rescored(ranked, temporal.temporal_gains(scores, moments, query, 0.4, TODAY))


def test_boost_scores_as_the_gains_applied_one_by_one() -> None:
    rng = random.Random(3)
    for query in ["when did Ann go to Paris", "what does bob ray like", "what happened in May 2025", "tea"]:
        for _ in range(20):
            rows = _rows(rng, 60)
            ids = [*rng.sample(sorted(rows), 50), "gone"]  # a candidate whose row is gone
            ranked = [Fused(memory_id=i, score=rng.random()) for i in ids]
            got = boost(ranked, rows, 0.3, 0.3, 0.6, query, 0.2, 0.4, TODAY)
            assert got == _one_by_one(ranked, rows, query)
            assert [f.memory_id for f in got] != ids  # the boosts did re-rank
