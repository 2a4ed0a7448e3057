"""``memoryd sleep run --owner O [--wait]`` and ``memoryd sleep status [--owner O]`` (over NATS).

``run`` queues a manual run (sleep mode need not be on); with ``--wait`` it shows a spinner
with the elapsed time until the run is done, prints the run, and exits 1 when it failed.
``status`` lists the recorded runs as a table, newest first.
"""

from __future__ import annotations

import sys
from typing import Any

import click

from memoryd.cli.common import (
    CONTEXT_SETTINGS,
    activity,
    cells,
    json_option,
    nats_connection,
    nats_options,
    owner_option,
    print_table,
    print_wire,
    run,
    table,
)
from memoryd.schemas.ops import SleepRunRecord

_PHASE_ORDER = (
    "conflict_resolution",
    "archival_demotion",
    "pattern_discovery",
    "relation_completion",
    "affective_attribution",
)
_WIRE_HELP = "print the result as it came over the wire"


def _took(record: SleepRunRecord) -> str:
    if record.started_at is None or record.finished_at is None:
        return ""
    return f"{(record.finished_at - record.started_at).total_seconds():.2f} s"


def _counters(phase: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v}" for k, v in sorted(phase.items()) if k not in ("status", "reason") and v not in (0, ""))


def _phase_line(name: str, phase: dict[str, Any]) -> str:
    counters = _counters(phase)
    reason = f" ({phase['reason']})" if phase.get("reason") else ""
    return f"{name}: {phase.get('status')}{reason}" + (f" {counters}" if counters else "")


def render_run(record: SleepRunRecord) -> str:
    """One run: id, status, times, receipt, and one line per phase."""
    times = ""
    if record.started_at is not None:
        times = f" started {record.started_at:%Y-%m-%d %H:%M:%S}"
        if record.finished_at is not None:
            times += f" took {_took(record)}"
    lines = [f"run {record.run_id} owner={record.owner} status={record.status}{times}"]
    if record.receipt:
        lines.append(f"  receipt {record.receipt}")
    for name in _PHASE_ORDER:
        phase = record.phases.get(name)
        if isinstance(phase, dict):
            lines.append(f"  {_phase_line(name, phase)}")
    return "\n".join(lines)


def _phases(record: SleepRunRecord) -> str:
    """The phases that did something or did not run ok, one per line."""
    lines = []
    for name in _PHASE_ORDER:
        phase = record.phases.get(name)
        if isinstance(phase, dict) and (phase.get("status") != "ok" or _counters(phase)):
            lines.append(_phase_line(name, phase))
    return "\n".join(lines)


@click.group("sleep", context_settings=CONTEXT_SETTINGS)
def sleep() -> None:
    """Sleep runs: queue one by hand, list recorded runs."""


@sleep.command("run", context_settings=CONTEXT_SETTINGS)
@owner_option(help_text="the owner (user or tenant) whose memory to consolidate")
@click.option("--wait", is_flag=True, help="wait for the run to finish and print its result")
@click.option("--timeout", type=float, default=300.0, show_default=True, help="seconds to wait with --wait")
@json_option(_WIRE_HELP)
@nats_options
def run_(owner: str, wait: bool, timeout: float, as_json: bool, nats_url: str | None, data_dir: str | None) -> int:
    """Queue a consolidation run for an owner."""
    from memoryd.rpc import call
    from memoryd.schemas.ops import SleepRunRequest, SleepRunResult

    async def go() -> int:
        nc = await nats_connection(nats_url, data_dir)
        try:
            request = SleepRunRequest(owner=owner, wait=wait, timeout_s=timeout)
            with activity(f"sleep run for {owner}", enabled=wait):
                result: SleepRunResult = await call(nc, "sleep.run", request, timeout=timeout + 10)
        finally:
            await nc.drain()
        if as_json:
            print_wire(result)
        elif result.run is not None:
            print(render_run(result.run))
        else:
            print(f"run {result.run_id} queued")
        if result.notice and not as_json:
            print(f"note: {result.notice}", file=sys.stderr)
        status = result.run.status if result.run is not None else "queued"
        return 1 if wait and status == "failed" else 0

    return run(go())


@sleep.command("status", context_settings=CONTEXT_SETTINGS)
@owner_option(required=False, help_text="only this owner's runs")
@click.option(
    "--limit", type=click.IntRange(1, 1000), default=20, show_default=True, metavar="N", help="at most N runs"
)
@json_option(_WIRE_HELP)
@nats_options
def status(owner: str | None, limit: int, as_json: bool, nats_url: str | None, data_dir: str | None) -> int:
    """Recorded runs, newest first."""
    from memoryd.rpc import call
    from memoryd.schemas.ops import SleepStatusRequest, SleepStatusResult

    async def go() -> int:
        nc = await nats_connection(nats_url, data_dir)
        try:
            result: SleepStatusResult = await call(nc, "sleep.status", SleepStatusRequest(owner=owner, limit=limit))
        finally:
            await nc.drain()
        if as_json:
            print_wire(result)
            return 0
        if not result.runs:
            print("no runs recorded")
            return 0
        rows = table("run", "owner", "status", "started", "took", "phases", "receipt")
        for r in result.runs:
            started = f"{r.started_at:%Y-%m-%d %H:%M:%S}" if r.started_at is not None else ""
            rows.add_row(*cells(r.run_id, r.owner, r.status, started, _took(r), _phases(r), r.receipt or ""))
        print_table(rows)
        return 0

    return run(go())


COMMANDS = (sleep,)
