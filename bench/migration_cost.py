"""How long an upgrade's migrations hold ``memories``: applies every migration before 0015 to a
fresh database on an embedded PostgreSQL, loads generated memories (chat turns with a speaker and
role, and facts), then times 0015 (a table rewrite: the generated ``tsv`` column and its GIN
indexes are rebuilt under an exclusive lock) and 0016 (a trigger and a backfill of turns written
without their context meanwhile, ``--stale`` of them), wall clock and the server's CPU time per
statement, and the cost of the trigger on inserting chat turns.
``python -m bench.migration_cost --memories 100000``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import tempfile
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

import asyncpg

from memoryd.local.postgres import EmbeddedPostgres
from shared.db.memories import content_hash
from shared.db.migrate import migration_files

WORDS = [
    "the",
    "a",
    "we",
    "went",
    "to",
    "meeting",
    "group",
    "paint",
    "lake",
    "dog",
    "beagle",
    "park",
    "coffee",
    "trip",
    "train",
    "city",
    "museum",
    "friend",
]
SPEAKERS = ["Caroline", "Melanie", "Jon", "Gina", "Tim", "Evan Lee"]


def _rows(n: int, start: int, rnd: random.Random, t0: datetime) -> list[tuple[object, ...]]:
    out: list[tuple[object, ...]] = []
    for i in range(start, start + n):
        text = " ".join(rnd.choice(WORDS) for _ in range(rnd.randint(8, 40)))
        turn = i % 10 < 7  # 70% raw chat turns, 30% facts
        meta = {"speaker": rnd.choice(SPEAKERS), "role": "user"} if turn else {"category": "preference"}
        created = t0 + timedelta(minutes=i)
        out.append((uuid.uuid4(), f"owner-{i % 100}", "episodic" if turn else "factual", text, json.dumps(meta),
                    "chat_turn" if turn else "llm", created, created, content_hash(text)))  # fmt: skip
    return out


COLUMNS = ["id", "owner", "type", "content", "metadata", "source", "created_at", "updated_at", "content_hash"]


async def _timed(conn: asyncpg.Connection, sql: str) -> tuple[float, float]:
    """Wall seconds and the server backend's CPU seconds of one migration file in a transaction."""
    pid = await conn.fetchval("SELECT pg_backend_pid()")
    cpu0, t0 = _cpu(pid), time.perf_counter()
    async with conn.transaction():
        await conn.execute(sql)
    return time.perf_counter() - t0, _cpu(pid) - cpu0


def _cpu(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / 100.0  # utime + stime, in clock ticks of 10 ms


async def run(memories: int, stale: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory(prefix="memoryd-mig-") as tmp:
        server = EmbeddedPostgres(Path(tmp) / "data")
        server.start(fsync=False)
        try:
            conn = await asyncpg.connect(server.dsn())
            files = dict(migration_files())
            for version, sql in migration_files():
                if version >= "0015":
                    break
                await conn.execute(sql)
            rnd, t0 = random.Random(7), datetime(2024, 1, 1, tzinfo=UTC)
            await conn.copy_records_to_table("memories", records=_rows(memories - stale, 0, rnd, t0), columns=COLUMNS)
            await conn.execute("ANALYZE memories")
            out = {"memories": float(memories)}
            out["0015_s"], out["0015_cpu_s"] = await _timed(conn, files["0015_turn_context"])
            # turns an ingest not yet upgraded writes between 0015 and 0016: no context
            await conn.copy_records_to_table("memories", records=_rows(stale, memories, rnd, t0), columns=COLUMNS)
            out["0016_s"], out["0016_cpu_s"] = await _timed(conn, files["0016_turn_context_trigger"])
            out["filled"] = float(await conn.fetchval("SELECT count(*) FROM memories WHERE context IS NOT NULL"))
            # the trigger on the write path: 10k turns inserted with it, then without it
            for name in ("insert_10k_trigger_s", "insert_10k_no_trigger_s"):
                batch = _rows(10_000, 10 * memories, rnd, t0)
                t = time.perf_counter()
                await conn.copy_records_to_table("memories", records=batch, columns=COLUMNS)
                out[name] = time.perf_counter() - t
                await conn.execute("ALTER TABLE memories DISABLE TRIGGER memories_turn_context")
            await conn.close()
            return out
        finally:
            server.stop()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    p.add_argument("--memories", type=int, default=100_000)
    p.add_argument("--stale", type=int, default=1_000, help="turns written without context before 0016")
    args = p.parse_args()
    print(json.dumps(asyncio.run(run(args.memories, args.stale)), indent=1))


if __name__ == "__main__":
    main()
