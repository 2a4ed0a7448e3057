"""Reduced chaos run for CI (the full 10k-event run: `make chaos`)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from .harness import run_chaos

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1200)]


async def test_no_event_lost_or_duplicated_under_faults(tmp_path: Path) -> None:
    n = int(os.environ.get("MEMORYD_CHAOS_EVENTS", "300"))
    report = await run_chaos(n, owners=5, root=tmp_path / "stack")
    print("\n" + report.table())
    assert len(report.faults) == 7, [f.fault for f in report.faults]
    assert all(f.recovery_s is not None for f in report.faults), report.table()
    assert report.ok, report.table()
