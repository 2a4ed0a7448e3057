"""``python -m bench sleep``: one owner's sleep run (time, LLM tokens) by size, and runs per hour across owners.

Per size, one owner gets synthetic memories with vectors, a share of them near-duplicates (so
conflict resolution has real candidates), a spread of ages and access times, entities with
mentions, and every phase on. The LLM is ``FakeLlm`` answering in the reply schemas with zero
latency, so the times are memoryd's own. The sleep service runs as its own process against an
embedded NATS + PostgreSQL; each size gets a first and a second (steady-state) run, reported as
wall time, per-phase time, LLM calls and tokens, status, writes and peak resident memory. Then,
in the same stack, runs per hour across owners at each `sleepMaxConcurrentRuns` (`bench.sleep_owners`).
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import re
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import asyncpg
import numpy as np
from pgvector import Vector

from bench import synth
from bench.harness import ServiceStack, cpu_delta, embedded_servers
from bench.report import environment, markdown_table, render_peak_rss
from bench.sleep_owners import measure, owner_name, render_owners, seed_owners
from memoryd.rpc import call
from memoryd.schemas.ops import SleepRunRequest
from shared.db.memories import content_hash
from shared.db.pool import create_pool
from shared.settings.env import PgConfig
from shared.vectors.pgvector import PgVectorStore
from tests.support.fake_llm import FakeLlm

SIGNATURE = "bench:random:384"
DIM = 384
ENTITIES = 200
CHUNK = 5000
PHASES = (
    "conflict_resolution",
    "archival_demotion",
    "pattern_discovery",
    "relation_completion",
    "affective_attribution",
)
Log = Callable[[str], None]


def owner_of(size: int) -> str:
    return f"bench-sleep-{size}"


def _vectors(n: int, rng: np.random.Generator) -> np.ndarray[Any, Any]:
    """Random unit vectors; every 20th is a slightly perturbed copy of an earlier one."""
    v = rng.standard_normal((n, DIM), dtype=np.float32)
    for i in range(20, n, 20):
        v[i] = v[int(rng.integers(0, i))] + 0.3 * rng.standard_normal(DIM, dtype=np.float32)  # cosine ~0.96
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    return v


async def seed(pool: asyncpg.Pool, size: int, seed_value: int = 7) -> None:
    """COPY one owner's memories, vectors, entities and mentions."""
    owner = owner_of(size)
    rnd = random.Random(seed_value + size)
    rng = np.random.default_rng(seed_value + size)
    now = datetime.now(UTC)
    texts = synth.sentences(size, seed_value + size)
    vectors = _vectors(size, rng)
    entity_ids = [uuid.uuid4() for _ in range(ENTITIES)]
    entity_rows = [
        (eid, owner, f"{name} {i}", f"{name.lower()} {i}", "person" if i % 4 == 0 else "thing")
        for i, (eid, name) in enumerate(zip(entity_ids, (synth.NAMES * 10)[:ENTITIES], strict=True))
    ]
    async with pool.acquire() as conn:
        await conn.copy_records_to_table(
            "entities", records=entity_rows, columns=["id", "owner", "name", "normalized", "kind"]
        )
    for start in range(0, size, CHUNK):
        mems, vecs, mentions = [], [], []
        for i in range(start, min(size, start + CHUNK)):
            text = next(texts)
            mid = uuid.uuid4()
            roll = rnd.random()
            age = rnd.uniform(0, 29) if roll < 0.65 else rnd.uniform(31, 89) if roll < 0.9 else rnd.uniform(91, 300)
            created = now - timedelta(days=age)
            accessed = created + timedelta(days=rnd.uniform(0, age)) if rnd.random() < 0.5 else None
            session = f"s{rnd.randrange(max(1, size // 20))}"
            mems.append((mid, owner, session, "episodic", text, "chat_turn", created, created, accessed,
                         content_hash(text), SIGNATURE, False))  # fmt: skip
            vecs.append((mid, SIGNATURE, owner, DIM, Vector(vectors[i])))
            mentions += [(eid, mid) for eid in rnd.sample(entity_ids, rnd.choice((0, 1, 2)))]
        async with pool.acquire() as conn, conn.transaction():
            await conn.copy_records_to_table(
                "memories",
                records=mems,
                columns=["id", "owner", "session_id", "type", "content", "source", "created_at", "updated_at",
                         "last_accessed_at", "content_hash", "embedding_signature", "needs_reindex"],
            )  # fmt: skip
            await conn.copy_records_to_table(
                "memory_embeddings", records=vecs, columns=["memory_id", "signature", "owner", "dim", "embedding"]
            )
            await conn.copy_records_to_table("entity_mentions", records=mentions, columns=["entity_id", "memory_id"])


def scripted_reply(request: dict[str, Any]) -> str:
    """The FakeLlm handler: a valid reply for each sleep prompt."""
    prompt = str(request["messages"][-1]["content"])
    ids = re.findall(r"^- \[([0-9a-f-]{36})\]", prompt, flags=re.M)
    if prompt.startswith("Pairs of memories"):
        pairs = len(re.findall(r"^Pair \d+:$", prompt, flags=re.M))
        decisions = [
            {"pair": i, "action": "merge", "keep": "a", "content": "Merged by the benchmark."}
            if i % 4 == 0
            else {"pair": i, "action": "keep"}
            for i in range(pairs)
        ]
        return json.dumps({"decisions": decisions})
    if "recurring patterns" in prompt:
        return json.dumps(
            {
                "patterns": [
                    {"title": f"Pattern {k}", "content": f"A recurring theme {k}.", "evidence": ids[k * 5 : k * 5 + 5]}
                    for k in range(3)
                ]
            }
        )
    names = re.findall(r"^- (.+) \((?:person|thing)\)$", prompt, flags=re.M)
    if len(names) >= 2 and ids:
        candidate = {"person": names[0], "target": names[1], "emotion": "joy", "evidence": ids[:2], "why": "bench"}
        return json.dumps({"candidates": [candidate]})
    return json.dumps({"candidates": []})


async def _prepare(
    dsn: str, sizes: Sequence[int], log: Log, groups: Mapping[int, Sequence[str]], owner_memories: int
) -> dict[str, float]:
    pool = await create_pool(PgConfig(dsn=dsn, pool_min=1, pool_max=4))
    try:
        started = time.perf_counter()
        for size in sizes:
            await seed(pool, size)
            log(f"bench sleep: seeded {size} memories")
        for limit, group in groups.items():
            await seed_owners(pool, SIGNATURE, group, owner_memories, seed=limit)
        log(f"bench sleep: seeded {sum(len(g) for g in groups.values())} owners of {owner_memories} memories")
        seeded = time.perf_counter() - started
        started = time.perf_counter()
        await PgVectorStore(pool).ensure(SIGNATURE, DIM)
        indexed = time.perf_counter() - started
        log(f"bench sleep: HNSW index built in {indexed:.1f} s")
        await pool.execute(
            "INSERT INTO memory_vec_meta (store, active_dim, embedding_signature) VALUES ('pgvector', $1, $2)",
            DIM,
            SIGNATURE,
        )
        values = {"sleepAffectiveEnabled": True}
        await pool.execute('INSERT INTO settings (owner, "values") VALUES ($1, $2::jsonb)', "*", values)
        await pool.execute("ANALYZE")
    finally:
        await pool.close()
    return {"seed_s": round(seeded, 2), "index_s": round(indexed, 2)}


async def _one_run(stack: ServiceStack, fake: FakeLlm, size: int, label: str) -> dict[str, Any]:
    calls_before = len(fake.requests)
    cpu_before = stack.cpu_seconds()
    started = time.perf_counter()
    request = SleepRunRequest(owner=owner_of(size), wait=True, timeout_s=3600)
    result = await call(stack.nc, "sleep.run", request, timeout=3700)
    wall = time.perf_counter() - started
    cpu = cpu_delta(cpu_before, stack.cpu_seconds())
    row = await stack.pool.fetchrow("SELECT counters FROM dream_runs WHERE id = $1", uuid.UUID(result.run_id))
    counters = dict(row["counters"]) if row else {}
    run = result.run
    return {
        "memories": size,
        "run": label,
        "status": run.status if run else "?",
        "wall_s": round(wall, 2),
        "cpu_s": {name: round(cpu.get(name, 0.0), 2) for name in ("sleep", "postgres")},
        "load_average_1m": round(os.getloadavg()[0], 2),
        "phase_ms": counters.get("phaseMs", {}),
        "llm_calls": len(fake.requests) - calls_before,
        "prompt_tokens": counters.get("llmPromptTokens", 0),
        "completion_tokens": counters.get("llmCompletionTokens", 0),
        "writes": counters.get("writes", 0),
        "receipt": run.receipt if run else None,
        "pairs": (run.phases.get("conflict_resolution") or {}).get("pairs") if run else None,
    }


async def run_sleep_bench(
    sizes: Sequence[int],
    log: Log = print,
    *,
    owners: int = 50,
    owner_memories: int = 30,
    llm_latency_s: float = 0.5,
    limits: Sequence[int] = (1, 4),
) -> dict[str, Any]:
    """Seed, index, and run sleep twice per size; then runs per hour across many owners per limit."""
    groups = {limit: [owner_name(limit, i) for i in range(owners)] for limit in limits}

    async def handler(request: dict[str, Any]) -> str:
        if "bench-lane" in str(request["messages"][-1]["content"]):
            await asyncio.sleep(llm_latency_s)
        return scripted_reply(request)

    async with embedded_servers() as servers, FakeLlm() as fake:
        fake.handler = handler
        prep = await _prepare(servers.pg_dsn, sizes, log, groups, owner_memories)
        env = {
            "MEMORYD_LLM_BASE_URL": fake.base_url,
            "MEMORYD_LLM_MODEL": "fake",
            "MEMORYD_LLM_DAILY_TOKEN_BUDGET": "0",
            "MEMORYD_SLEEP_SCHEDULER": "false",
            "MEMORYD_SLEEP_ACK_WAIT_S": "120",
            "MEMORYD_SLEEP_LANES": str(max(limits, default=1)),
            "MEMORYD_SLEEP_LOCK_POLL_S": "0.1",
        }
        runs = []
        lanes: list[dict[str, Any]] = []
        async with ServiceStack(
            servers.nats_url, servers.pg_dsn, services=("sleep",), env=env, servers=servers
        ) as stack:
            for limit, group in groups.items():
                lanes.append(await measure(stack.pool, stack.nc, group, limit, settle_s=1.5))
                log(f"bench sleep: limit {limit}, {owners} owners: {lanes[-1]['runs_per_hour']} runs/h")
            for size in sizes:
                for label in ("first", "second"):
                    runs.append(await _one_run(stack, fake, size, label))
                    log(f"bench sleep: {size} memories, {label} run: {runs[-1]['wall_s']} s, {runs[-1]['status']}")
            peak_rss = stack.peak_rss_mb()
        log(f"bench sleep: peak resident memory (MB) {peak_rss}")
    many = {"memories": owner_memories, "llm_latency_s": llm_latency_s, "limits": lanes}
    return {
        "benchmark": "sleep",
        "environment": environment(),
        "prepare": prep,
        "runs": runs,
        "many_owners": many,
        "peak_rss_mb": peak_rss,
    }


#: The first run of the largest owner should be bounded by the LLM, not by search (scripted LLM).
FIRST_RUN_TARGET = (100_000, 60.0)


def first_run_target(runs: Sequence[Mapping[str, Any]]) -> str:
    """``Target: ...`` for the first run at ``FIRST_RUN_TARGET``'s size ("" when it was not run)."""
    size, limit_s = FIRST_RUN_TARGET
    first = [r for r in runs if r["memories"] == size and r["run"] == "first"]
    if not first:
        return ""
    wall = first[0]["wall_s"]
    met = "met" if first[0]["status"] == "ok" and wall <= limit_s else "NOT met"
    return f"Target: the first run at {size:,} memories <= {limit_s:.0f} s: measured {wall} s ({met})."


def render(report: dict[str, Any]) -> str:
    rows = [
        [
            r["memories"],
            r["run"],
            r["status"],
            r["wall_s"],
            r.get("cpu_s", {}).get("sleep", "-"),
            r.get("cpu_s", {}).get("postgres", "-"),
            *[round(r["phase_ms"].get(p, 0) / 1000, 2) for p in PHASES],
            r["llm_calls"],
            r["prompt_tokens"] + r["completion_tokens"],
            r["writes"],
            r.get("load_average_1m", "-"),
        ]
        for r in report["runs"]
    ]
    headers = ["memories", "run", "status", "wall s", "sleep CPU s", "postgres CPU s",
               "conflict s", "demotion s", "patterns s", "relations s",
               "affective s", "LLM calls", "LLM tokens", "writes", "load 1m"]  # fmt: skip
    prep = report["prepare"]
    text = ""
    if rows:
        text = (
            f"sleep benchmark (seed {prep['seed_s']} s, HNSW build {prep['index_s']} s; scripted LLM, zero latency)\n"
            + markdown_table(headers, rows, digits=2)
        )
    if target := first_run_target(report["runs"]):
        text += f"\n\n{target}"
    if peaks := report.get("peak_rss_mb"):
        text += f"\n\n{render_peak_rss(dict(sorted(peaks.items())))}"
    many = report.get("many_owners")
    if many and many["limits"]:
        text = f"{text}\n\n{render_owners(many)}" if text else render_owners(many)
    return text
