"""Work repeated every N seconds until a stop event: the loop of every background task.

``every`` runs the work, waits ``interval_s`` (cut short by ``wake`` or ``stop``) and runs it
again; a failed round is logged and the next one retries, so a passing outage never ends a
background task. ``wait_or_stop`` is that wait, for loops of another shape.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from shared.observability.logging import get_logger

log = get_logger(__name__)


async def wait_or_stop(stop: asyncio.Event, timeout: float, wake: asyncio.Event | None = None) -> bool:
    """Wait up to ``timeout`` seconds for ``stop`` (or ``wake``, which is then cleared); whether
    ``stop`` is set."""
    waiters = [asyncio.ensure_future(stop.wait())]
    if wake is not None:
        waiters.append(asyncio.ensure_future(wake.wait()))
    try:
        await asyncio.wait(waiters, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for waiter in waiters:
            waiter.cancel()
    if wake is not None:
        wake.clear()
    return stop.is_set()


async def every(
    interval_s: float,
    stop: asyncio.Event,
    work: Callable[[], Awaitable[object]],
    *,
    failed: str,
    wait_first: bool = False,
    wake: asyncio.Event | None = None,
) -> None:
    """Run ``work`` every ``interval_s`` until ``stop`` (first after one interval when
    ``wait_first``); an exception of a round is logged as the event ``failed``."""
    if wait_first and await wait_or_stop(stop, interval_s, wake):
        return
    while not stop.is_set():
        try:
            await work()
        except Exception as exc:
            log.warning(failed, error=f"{type(exc).__name__}: {exc}")
        if await wait_or_stop(stop, interval_s, wake):
            return
