"""Per-owner token buckets: a burst of one second's worth, continuous refill, bounded memory."""

from __future__ import annotations

import pytest

from shared.ratelimit import RateLimiter


def test_a_burst_then_the_wait_until_the_next_token() -> None:
    limiter = RateLimiter()
    assert [limiter.take("a", 5.0, 100.0) for _ in range(5)] == [0.0] * 5
    assert limiter.take("a", 5.0, 100.0) == pytest.approx(0.2)
    assert limiter.take("b", 5.0, 100.0) == 0.0  # owners are apart
    assert limiter.take("a", 5.0, 100.2) == 0.0  # refilled one token
    assert limiter.take("a", 5.0, 100.2) > 0.0


def test_zero_rate_is_unlimited_and_keeps_no_state() -> None:
    limiter = RateLimiter()
    assert all(limiter.take("a", 0.0, 1.0) == 0.0 for _ in range(1000))
    assert len(limiter) == 0


def test_slow_rates_allow_one_request_then_wait_the_period() -> None:
    limiter = RateLimiter()
    assert limiter.take("a", 0.5, 10.0) == 0.0
    assert limiter.take("a", 0.5, 10.0) == pytest.approx(2.0)


def test_at_most_max_owners_buckets_are_kept() -> None:
    limiter = RateLimiter(max_owners=3)
    for i in range(10):
        limiter.take(f"o{i}", 1.0, 0.0)
    assert len(limiter) == 3
    assert limiter.take("o0", 1.0, 0.0) == 0.0  # dropped, so full again
