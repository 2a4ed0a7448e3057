"""memoryd on a three-node JetStream cluster (R3 streams), reduced for CI (the full 10k-event
run: `make chaos-cluster`): one NATS node SIGKILLed, later another (never two at once, each
restarted and caught up first), service processes SIGKILLed alone and with a node, embed in
two processes; every turn and fact stored exactly once, searches and sleep runs throughout."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from .harness import run_chaos

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]


async def test_r3_cluster_loses_nothing_under_node_and_service_sigkills(tmp_path: Path) -> None:
    n = int(os.environ.get("MEMORYD_CHAOS_CLUSTER_EVENTS", "200"))
    report = await run_chaos(n, cluster=True, root=tmp_path / "stack", down_s=2.0, gap_s=1.0, short=True)
    print("\n" + report.table())
    assert [f.fault for f in report.faults if "NATS node" in f.fault][:2] == [
        "SIGKILL NATS node n0",
        "SIGKILL NATS node n1 + embed-1",
    ]
    assert report.search_total["ok"] > 0 and report.sleep_runs, report.table()
    assert report.ok, (report.table(), report.search_errors)
