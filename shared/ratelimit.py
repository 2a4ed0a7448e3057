"""Per-owner rates (token buckets), kept in memory by each replica: pure, no I/O.

A rate of ``r`` per second allows a burst of ``max(1, r)`` and refills continuously;
``take`` answers 0.0 (allowed, one token spent) or the seconds until a token is there
(``RateLimited.retry_after_s``). The limit holds per replica: N replicas of a service
admit at most N times the rate for one owner. At most ``max_owners`` buckets are kept;
past that the least recently used owner's bucket is dropped (a full bucket again).
"""

from __future__ import annotations

from collections import OrderedDict


class RateLimiter:
    def __init__(self, max_owners: int = 100_000) -> None:
        self.max_owners = max_owners
        self._buckets: OrderedDict[str, tuple[float, float]] = OrderedDict()  # owner -> (tokens, at)

    def take(self, owner: str, rate: float, now: float) -> float:
        """Spend one of ``owner``'s tokens at ``rate``/s (0 = unlimited): 0.0, or the wait in seconds."""
        if rate <= 0:
            return 0.0
        burst = max(1.0, rate)
        tokens, at = self._buckets.pop(owner, (burst, now))
        tokens = min(burst, tokens + max(0.0, now - at) * rate)
        wait = 0.0
        if tokens >= 1.0:
            tokens -= 1.0
        else:
            wait = (1.0 - tokens) / rate
        self._buckets[owner] = (tokens, now)
        while len(self._buckets) > self.max_owners:
            self._buckets.popitem(last=False)
        return wait

    def __len__(self) -> int:
        return len(self._buckets)
