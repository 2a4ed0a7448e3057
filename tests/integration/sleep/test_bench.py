"""The sleep benchmark end to end at a tiny size: its own embedded stack, the scripted LLM, the report,
and runs per hour across owners at limits 1 and 4."""

from __future__ import annotations

import pytest

from bench.sleep import PHASES, render, run_sleep_bench
from services.sleep.receipt import parse_receipt

pytestmark = [pytest.mark.integration, pytest.mark.slow]


async def test_the_benchmark_reports_time_tokens_and_receipts() -> None:
    report = await run_sleep_bench([400], log=lambda message: None, owners=8, owner_memories=10, llm_latency_s=0.2)
    first, second = report["runs"]
    assert (first["memories"], first["run"], second["run"]) == (400, "first", "second")
    assert first["status"] == "ok" and first["writes"] > 0
    assert set(first["phase_ms"]) == set(PHASES)
    assert first["llm_calls"] >= 3 and first["prompt_tokens"] > 0 and first["completion_tokens"] > 0
    assert first["pairs"] > 0  # the near-duplicates were found through the vector index
    assert parse_receipt(first["receipt"]).llm_used
    table = render(report)
    assert "| 400 | first | ok |" in table and "LLM tokens" in table and "load 1m" in table
    lane1, lane4 = report["many_owners"]["limits"]
    assert (lane1["limit"], lane4["limit"]) == (1, 4)
    assert lane1["runs"] == lane4["runs"] == 8 and lane1["statuses"] == lane4["statuses"] == {"ok": 8}
    assert lane4["runs_per_hour"] > 1.5 * lane1["runs_per_hour"]  # four at once, each waiting on the LLM
    assert "runs per hour" in table
