"""``bench peers`` end to end at a tiny size: both engines, same corpus and queries, one report.

Skipped when mem0 (the optional ``peers`` extra) is not installed.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ["MEM0_TELEMETRY"] = "False"  # read by mem0 at import: nothing may leave the machine
pytest.importorskip("mem0")
pytest.importorskip("psycopg")

from bench import peers
from bench.harness import ServiceStack
from memoryd.local.nats import EmbeddedNats

pytestmark = [pytest.mark.integration, pytest.mark.slow]


async def test_peers_benchmark_tiny(nats_server: EmbeddedNats, pg_dsn: str, tmp_path: Path) -> None:
    database = pg_dsn.rsplit("/", 1)[1] + "_mem0"
    async with ServiceStack(
        nats_server.url, pg_dsn, services=("ingest", "embed", "retrieve"), mode="inprocess"
    ) as stack:
        factory = await peers.mem0_factory(stack, tmp_path / "mem0", database)
        report = await peers.run_peers(
            stack,
            factory,
            [120],
            concurrency=[1, 4],
            add_concurrency=4,
            n_questions=12,
            requests_per_client=2,
            hit_queries=10,
            log=lambda _m: None,
        )
        stored = await stack.pool.fetchval("SELECT count(*) FROM memories WHERE owner = 'peers-120'")
    assert stored == 120
    (res,) = report["sizes"]
    assert res["memories"] == 120
    import mem0.memory.telemetry

    assert mem0.memory.telemetry.MEM0_TELEMETRY is False
    assert res["mem0_llm_calls"] == 0  # infer=False: the unroutable LLM is never asked
    assert res["mem0_texts_embedded"] >= 120 + 12  # every add and every search through the adapter
    for engine in peers.ENGINES:
        assert res["add"][engine]["memories"] == 120
        assert res["add"][engine]["add_to_searchable_per_s"] > 0
        add = res["add"][engine]
        assert add["cpu_ms_per_memory"] == pytest.approx(sum(add["cpu_ms_per_memory_by_process"].values()), abs=0.05)
        assert 0 <= add["cpu_used_of_cores"] <= 1.0
        # tiny corpus: every keyword query finds its memory in both engines
        assert res["figures"][engine]["hit_rate"] == 1.0
    # here memoryd runs in this process and no server CPU is read (its share may be 0); mem0 is "bench"
    assert res["add"]["mem0"]["cpu_used_of_cores"] > 0
    pipeline = res["add"]["memoryd"]["stored_to_embedded_s"]
    assert 0 <= pipeline["p50"] <= pipeline["p90"] <= pipeline["p99"]
    assert "stored_to_embedded_s" not in res["add"]["mem0"]
    assert "- memoryd add: " in peers.render(report) and "stored to embedded p50" in peers.render(report)
    # who goes first alternates from one level to the next
    assert [(r["engine"], r["c"]) for r in res["rows"]] == [
        ("memoryd", "cold"), ("mem0", "cold"), ("mem0", 1), ("memoryd", 1), ("memoryd", 4), ("mem0", 4)
    ]  # fmt: skip
    for row in res["rows"]:
        assert row["errors"] == 0 and row["qps"] > 0
        assert 0 < row["p50_ms"] <= row["p99_ms"]
        keys = peers.MEMORYD_KEYS if row["engine"] == "memoryd" else peers.MEM0_KEYS
        assert set(row["cpu_ms_per_query_by_process"]) <= set(keys)
    assert set(res["ratios"]) == {
        "add_to_searchable_per_s", "search_p50_ms", "search_p99_ms", "cold_p50_ms", "qps_c1", "qps_c4", "hit_rate"
    }  # fmt: skip
    assert res["ratios"]["hit_rate"] == 1.0
    text = peers.render(report)
    assert "**120 memories of one owner**" in text
    assert "| hit_rate | 1.000 | 1.000 | 1.000 |" in text
    assert "mem0 LLM calls: 0" in text
