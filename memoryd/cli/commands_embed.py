"""``memoryd reindex`` (queue the backfill, show progress until nothing is pending)

``reindex`` calls the ``reindex`` RPC once to queue jobs, then polls it with ``dry_run``
(which queues nothing) and draws a progress bar until ``pending`` reaches 0 and the active
signature has switched to the configured one. NATS is found like the other client commands.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time

from memoryd.cli.commands_search import resolve_nats_url
from shared.schemas.ops import ReindexRequest, ReindexResult
from shared.settings.env import NatsConfig


def _done(result: ReindexResult, owner: str | None, switching: bool) -> bool:
    """Finished: the owner's memories are all embedded; or (everyone) the active signature is the
    configured one and, unless this run switched it, nothing is pending (memories created during
    a switch do not hold it up: they are embedded as they arrive)."""
    if owner is not None:
        return result.pending == 0
    return result.active_signature == result.signature and (result.pending == 0 or switching)


def _bar(total: int, pending: int, width: int = 30) -> str:
    done = 1.0 if total <= 0 else max(0.0, min(1.0, (total - pending) / total))
    filled = round(done * width)
    return f"[{'#' * filled}{'.' * (width - filled)}] {done * 100:5.1f}% {max(0, total - pending)}/{total}"


async def cmd_reindex(args: argparse.Namespace) -> int:
    from shared.bus.connect import connect
    from shared.bus.rpc_client import call

    url = resolve_nats_url(args.nats_url, args.data_dir)
    nc = await connect(NatsConfig(url=url), "memoryd-cli", reconnect_forever=False)
    try:
        first: ReindexResult = await call(
            nc, "reindex", ReindexRequest(owner=args.owner, batch_size=args.batch_size), timeout=args.rpc_timeout
        )
        total = first.pending
        print(
            f"reindex to {first.signature}: queued {first.queued}, pending {first.pending}"
            f" (active: {first.active_signature or 'none'})",
            flush=True,
        )
        if args.no_wait:
            return 0
        switching = first.active_signature != first.signature
        result = first
        deadline = time.monotonic() + args.timeout if args.timeout else None
        progress_at, lowest = time.monotonic(), first.pending
        tty = sys.stdout.isatty()
        last_line = ""
        while not _done(result, args.owner, switching):
            if deadline is not None and time.monotonic() > deadline:
                print(f"\nreindex: still {result.pending} pending after {args.timeout:.0f} s", file=sys.stderr)
                return 1
            await asyncio.sleep(args.interval)
            requeue = time.monotonic() - progress_at > args.requeue_after
            result = await call(
                nc,
                "reindex",
                ReindexRequest(owner=args.owner, batch_size=args.batch_size, dry_run=not requeue),
                timeout=args.rpc_timeout,
            )
            if result.pending < lowest or requeue:
                progress_at, lowest = time.monotonic(), min(lowest, result.pending)
            if requeue and result.queued:
                print(f"\nno progress for {args.requeue_after:.0f} s: queued {result.queued} again", flush=True)
            total = max(total, result.pending)
            line = f"{_bar(total, result.pending)} pending {result.pending}"
            if tty:
                print(f"\r{line}", end="", flush=True)
            elif line != last_line:
                print(line, flush=True)
            last_line = line
        if tty:
            print(f"\r{_bar(total, result.pending)} pending {result.pending}", flush=True)
        print(f"reindex complete: active signature {result.active_signature}", flush=True)
        return 0
    finally:
        await nc.close()


def register(sub: argparse._SubParsersAction) -> None:
    r = sub.add_parser("reindex", help="re-embed memories without a current vector, with a progress bar")
    r.add_argument("--owner", help="only this owner's memories (default: all)")
    r.add_argument("--batch-size", type=int, default=256, help="jobs queued per page (1..4096)")
    r.add_argument("--no-wait", action="store_true", help="queue and exit, no progress bar")
    r.add_argument("--interval", type=float, default=1.0, help="seconds between progress polls")
    r.add_argument("--timeout", type=float, default=0.0, help="give up after this many seconds (0 = never)")
    r.add_argument("--rpc-timeout", type=float, default=300.0, help="seconds to wait for the queueing call")
    r.add_argument(
        "--requeue-after", type=float, default=120.0, help="queue again when pending has not dropped for this long"
    )
    r.add_argument("--nats-url", help="default $MEMORYD_NATS_URL or <data-dir>/runtime.json")
    r.add_argument("--data-dir", help="where `memoryd up` keeps runtime.json (default .memoryd)")
    r.set_defaults(func=cmd_reindex)
