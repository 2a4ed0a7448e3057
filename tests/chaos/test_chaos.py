"""Reduced chaos run for CI (the full 10k-event run: `make chaos`): the short single-machine
plan (every service SIGKILLed at once, then the three overlapping faults with NATS and
PostgreSQL SIGKILLs), fsync on, searches and sleep runs throughout."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from .harness import run_chaos

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]


async def test_no_turn_or_fact_lost_or_duplicated_under_sigkills(tmp_path: Path) -> None:
    n = int(os.environ.get("MEMORYD_CHAOS_EVENTS", "200"))
    report = await run_chaos(n, root=tmp_path / "stack", down_s=1.5, gap_s=1.0, short=True)
    print("\n" + report.table())
    assert len(report.faults) == 4, [f.fault for f in report.faults]
    assert report.search_total["ok"] > 0 and report.sleep_runs, report.table()
    assert report.ok, (report.table(), report.search_errors)
