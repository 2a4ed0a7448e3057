"""``memoryd sleep run --owner O [--wait]`` and ``memoryd sleep status [--owner O]`` (over NATS).

NATS is found like the other client commands (``--nats-url``, ``$MEMORYD_NATS_URL``, or the
``runtime.json`` of ``memoryd up``). ``run`` queues a manual run (sleep mode need not be
on); with ``--wait`` it waits for the result and exits 1 when the run failed.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from shared.codec import encode
from shared.schemas.ops import SleepRunRecord

_PHASE_ORDER = (
    "conflict_resolution",
    "archival_demotion",
    "pattern_discovery",
    "relation_completion",
    "affective_attribution",
)


def render_run(record: SleepRunRecord) -> str:
    """One run: id, status, times, receipt, and one line per phase."""
    times = ""
    if record.started_at is not None:
        times = f" started {record.started_at:%Y-%m-%d %H:%M:%S}"
        if record.finished_at is not None:
            times += f" took {(record.finished_at - record.started_at).total_seconds():.2f} s"
    lines = [f"run {record.run_id} owner={record.owner} status={record.status}{times}"]
    if record.receipt:
        lines.append(f"  receipt {record.receipt}")
    for name in _PHASE_ORDER:
        phase = record.phases.get(name)
        if not isinstance(phase, dict):
            continue
        counters = ", ".join(
            f"{k}={v}" for k, v in sorted(phase.items()) if k not in ("status", "reason") and v not in (0, "")
        )
        reason = f" ({phase['reason']})" if phase.get("reason") else ""
        lines.append(f"  {name}: {phase.get('status')}{reason}" + (f" {counters}" if counters else ""))
    return "\n".join(lines)


async def _client(args: argparse.Namespace) -> Any:
    from memoryd.cli.commands_search import resolve_nats_url
    from shared.bus.connect import connect
    from shared.observability.logging import configure
    from shared.settings.env import LogConfig, NatsConfig

    configure("cli", LogConfig(level="error", format="console"))
    return await connect(
        NatsConfig(url=resolve_nats_url(args.nats_url, args.data_dir)), "memoryd-cli", reconnect_forever=False
    )


async def cmd_run(args: argparse.Namespace) -> int:
    from shared.bus.rpc_client import call
    from shared.schemas.ops import SleepRunRequest, SleepRunResult

    nc = await _client(args)
    try:
        request = SleepRunRequest(owner=args.owner, wait=args.wait, timeout_s=args.timeout)
        result: SleepRunResult = await call(nc, "sleep.run", request, timeout=args.timeout + 10)
    finally:
        await nc.drain()
    if args.json:
        sys.stdout.write(encode(result).decode() + "\n")
    elif result.run is not None:
        print(render_run(result.run))
    else:
        print(f"run {result.run_id} queued")
    status = result.run.status if result.run is not None else "queued"
    return 1 if args.wait and status == "failed" else 0


async def cmd_status(args: argparse.Namespace) -> int:
    from shared.bus.rpc_client import call
    from shared.schemas.ops import SleepStatusRequest, SleepStatusResult

    nc = await _client(args)
    try:
        result: SleepStatusResult = await call(
            nc, "sleep.status", SleepStatusRequest(owner=args.owner, limit=args.limit)
        )
    finally:
        await nc.drain()
    if args.json:
        sys.stdout.write(encode(result).decode() + "\n")
    else:
        print("\n".join(render_run(r) for r in result.runs) or "no runs recorded")
    return 0


def _limit(value: str) -> int:
    n = int(value)
    if not 1 <= n <= 1000:
        raise argparse.ArgumentTypeError("must be 1..1000")
    return n


def _client_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", action="store_true", help="print the result as it came over the wire")
    p.add_argument("--nats-url", help="default $MEMORYD_NATS_URL, else <data-dir>/runtime.json")
    p.add_argument("--data-dir", help="where `memoryd up` keeps runtime.json (default .memoryd or $MEMORYD_DATA_DIR)")


def register(sub: argparse._SubParsersAction) -> None:
    sleep = sub.add_parser("sleep", help="sleep-worker runs: queue one by hand, list recorded runs")
    cmds = sleep.add_subparsers(dest="sleep_command", required=True, metavar="COMMAND")
    run = cmds.add_parser("run", help="queue a consolidation run for an owner")
    run.add_argument("--owner", required=True, help="the API key id whose memory to consolidate")
    run.add_argument("--wait", action="store_true", help="wait for the run to finish and print its result")
    run.add_argument("--timeout", type=float, default=300.0, help="seconds to wait with --wait (default 300)")
    _client_args(run)
    run.set_defaults(func=cmd_run)
    status = cmds.add_parser("status", help="recorded runs, newest first")
    status.add_argument("--owner", help="only this owner's runs")
    status.add_argument("--limit", type=_limit, default=20, metavar="N", help="at most N runs (1..1000, default 20)")
    _client_args(status)
    status.set_defaults(func=cmd_status)
