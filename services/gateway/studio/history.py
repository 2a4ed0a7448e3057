"""The last hour of activity, kept by each gateway so the Studio's Activity tab opens with it.

``ActivityHistory`` is a ring buffer of ``ActivitySample``: one sample per interval (a minute
by default, ``MEMORYD_GATEWAY_ACTIVITY_HISTORY_S``), the oldest dropped past an hour. The
sampler takes the same reading ``GET /v1/activity`` returns; ``GET /v1/activity/history``
serves the buffer, oldest first. The counters are cluster-wide, so any replica's hour is the
whole system's (a replica started recently simply has a shorter one).
"""

from __future__ import annotations

import asyncio
import math
from collections import deque
from collections.abc import Awaitable, Callable
from datetime import timedelta

from shared.periodic import every

from .schemas import ActivityHistory, ActivitySample

#: how far back the history reaches
SPAN = timedelta(hours=1)


class History:
    """Samples of the last ``SPAN`` at one per ``interval_s`` (pure: the sampler feeds it)."""

    def __init__(self, interval_s: float) -> None:
        self.interval_s = interval_s
        self._samples: deque[ActivitySample] = deque(maxlen=math.ceil(SPAN.total_seconds() / interval_s) + 1)

    def add(self, sample: ActivitySample) -> None:
        if self._samples and sample.at <= self._samples[-1].at:
            return  # a clock step back: keep the series ordered
        self._samples.append(sample)
        while self._samples and sample.at - self._samples[0].at > SPAN:
            self._samples.popleft()

    def read(self) -> ActivityHistory:
        return ActivityHistory(interval_s=self.interval_s, samples=list(self._samples))


async def keep(history: History, take: Callable[[], Awaitable[ActivitySample]], stop: asyncio.Event) -> None:
    """Take a sample now and every interval until ``stop`` (a failed reading is skipped)."""

    async def one() -> None:
        history.add(await take())

    await every(history.interval_s, stop, one, failed="gateway.activity_history_failed")
