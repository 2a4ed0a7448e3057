"""A circuit breaker for the retrieve service's optional dependencies (embed RPC, Qdrant).

Pure state machine fed with monotonic timestamps: after ``threshold`` consecutive failures
the dependency is skipped for ``cooldown_s`` (a request then degrades at once instead of
waiting for a timeout); after the cooldown one trial request is let through (half-open),
and its outcome closes the breaker or opens it for another cooldown.
"""

from __future__ import annotations

from typing import Literal

BreakerState = Literal["closed", "open", "half_open"]


class Breaker:
    """Consecutive-failure breaker; ``allow`` before a call, ``success``/``failure`` after."""

    def __init__(self, threshold: int = 3, cooldown_s: float = 5.0) -> None:
        if threshold < 1:
            raise ValueError(f"threshold must be >= 1, got {threshold}")
        if cooldown_s < 0:
            raise ValueError(f"cooldown_s must be >= 0, got {cooldown_s}")
        self.threshold = threshold
        self.cooldown_s = cooldown_s
        self.failures = 0
        self._opened_at: float | None = None
        self._trial_running = False
        self.last_error = ""

    def state(self, now: float) -> BreakerState:
        if self._opened_at is None:
            return "closed"
        return "open" if now - self._opened_at < self.cooldown_s else "half_open"

    def allow(self, now: float) -> bool:
        """May a call go out now? In half-open state only one trial at a time."""
        state = self.state(now)
        if state == "closed":
            return True
        if state == "open" or self._trial_running:
            return False
        self._trial_running = True
        return True

    def success(self) -> None:
        self.failures = 0
        self._opened_at = None
        self._trial_running = False
        self.last_error = ""

    def failure(self, now: float, error: str = "") -> None:
        self.failures += 1
        self.last_error = error
        if self._trial_running or self.failures >= self.threshold:
            self._opened_at = now
        self._trial_running = False

    def retry_in(self, now: float) -> float:
        """Seconds until the next trial is allowed (0 when closed or half-open)."""
        if self._opened_at is None:
            return 0.0
        return max(0.0, self._opened_at + self.cooldown_s - now)
