"""``memoryd reindex`` (queue the backfill, show progress until nothing is pending)

``reindex`` calls the ``reindex`` RPC once to queue jobs, then polls it with ``dry_run``
(which queues nothing) and shows a progress bar until ``pending`` reaches 0 and the active
signature has switched to the configured one.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import click

from memoryd.cli.common import CONTEXT_SETTINGS, nats_connection, nats_options, progress, run
from memoryd.schemas.ops import ReindexRequest, ReindexResult


def _done(result: ReindexResult, owner: str | None, switching: bool) -> bool:
    """Finished: the owner's memories are all embedded; or (everyone) the active signature is the
    configured one and, unless this run switched it, nothing is pending (memories created during
    a switch do not hold it up: they are embedded as they arrive)."""
    if owner is not None:
        return result.pending == 0
    return result.active_signature == result.signature and (result.pending == 0 or switching)


@click.command("reindex", context_settings=CONTEXT_SETTINGS)
@click.option("--owner", metavar="OWNER", help="only this owner's memories (default: all)")
@click.option("--batch-size", type=click.IntRange(1, 4096), default=256, show_default=True, help="jobs queued per page")
@click.option("--no-wait", is_flag=True, help="queue and exit, no progress bar")
@click.option("--interval", type=float, default=1.0, show_default=True, help="seconds between progress polls")
@click.option(
    "--timeout", type=float, default=0.0, show_default=True, help="give up after this many seconds (0 = never)"
)
@click.option(
    "--rpc-timeout", type=float, default=300.0, show_default=True, help="seconds to wait for the queueing call"
)
@click.option(
    "--requeue-after",
    type=float,
    default=120.0,
    show_default=True,
    help="queue again when pending has not dropped for this long",
)
@nats_options
def reindex(
    owner: str | None,
    batch_size: int,
    no_wait: bool,
    interval: float,
    timeout: float,
    rpc_timeout: float,
    requeue_after: float,
    nats_url: str | None,
    data_dir: str | None,
) -> int:
    """Re-embed memories that lack a current vector.

    Queues the jobs, then shows a progress bar until nothing is pending.
    """
    from memoryd.rpc import call

    async def go(nc: Any) -> int:
        async def ask(dry_run: bool) -> ReindexResult:
            request = ReindexRequest(owner=owner, batch_size=batch_size, dry_run=dry_run)
            result: ReindexResult = await call(nc, "reindex", request, timeout=rpc_timeout)
            return result

        first = await ask(dry_run=False)
        print(
            f"reindex to {first.signature}: queued {first.queued}, pending {first.pending}"
            f" (active: {first.active_signature or 'none'})",
            flush=True,
        )
        if no_wait:
            return 0
        switching = first.active_signature != first.signature
        result, total = first, first.pending
        deadline = time.monotonic() + timeout if timeout else None
        progress_at, lowest = time.monotonic(), first.pending
        with progress("reindex", total) as (bar, task):
            while not _done(result, owner, switching):
                if deadline is not None and time.monotonic() > deadline:
                    bar.console.print(f"reindex: still {result.pending} pending after {timeout:.0f} s")
                    return 1
                await asyncio.sleep(interval)
                requeue = time.monotonic() - progress_at > requeue_after
                result = await ask(dry_run=not requeue)
                if result.pending < lowest or requeue:
                    progress_at, lowest = time.monotonic(), min(lowest, result.pending)
                if requeue and result.queued:
                    bar.console.print(f"no progress for {requeue_after:.0f} s: queued {result.queued} again")
                total = max(total, result.pending)
                bar.update(task, total=total, completed=total - result.pending)
        print(f"reindex complete: active signature {result.active_signature}", flush=True)
        return 0

    async def connected() -> int:
        nc = await nats_connection(nats_url, data_dir)
        try:
            return await go(nc)
        finally:
            await nc.close()

    return run(connected())


COMMANDS = (reindex,)
