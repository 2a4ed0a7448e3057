"""Liveness: is this process stuck? Its event loop beats and its NATS connection is not closed.

A loop task stamps ``beat`` every second; the probe (served from another thread, or from the
loop itself) says *dead* when the last beat is older than ``stale_after_s`` (a blocked or
starved loop) or when the NATS client gave up reconnecting (closed). A NATS server that is
briefly away is not death: the client reconnects on its own, and readiness covers it.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from nats.aio.client import Client


@dataclass
class Liveness:
    stale_after_s: float = 10.0
    interval_s: float = 1.0
    clock: Callable[[], float] = time.monotonic
    nc: Client | None = None  # set once connected; before that the process is starting
    last_beat: float = field(default=0.0)

    def __post_init__(self) -> None:
        self.last_beat = self.clock()

    def beat(self) -> None:
        self.last_beat = self.clock()

    def state(self) -> tuple[bool, str]:
        """``(alive, reason)``: the reason names what is wrong (or ``ok``)."""
        age = self.clock() - self.last_beat
        if age > self.stale_after_s:
            return False, f"event loop stuck: no beat for {age:.1f} s (limit {self.stale_after_s:g} s)"
        if self.nc is not None and self.nc.is_closed:
            return False, "NATS connection closed"
        return True, "ok"

    async def run(self, stop: asyncio.Event) -> None:
        """Beat until ``stop`` is set."""
        while not stop.is_set():
            self.beat()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), self.interval_s)
