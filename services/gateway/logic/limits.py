"""Per-key limits, the pure part: which limits hold for a key, fixed windows, allow or deny, Retry-After.

Counters live in fixed windows (a UTC second, minute or day) named by the key id and the
window's number, so every gateway replica counts into the same KV entry
(``adapters/limits_kv.py``). Open streams are slots with an expiry time: a slot not renewed
by then no longer counts, so a gateway that dies cannot hold one forever.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

from memoryd.errors import BudgetExceeded, Forbidden, RateLimited

Window = Literal["second", "minute", "day"]
WINDOW_SECONDS: dict[Window, int] = {"second": 1, "minute": 60, "day": 86_400}


class TokenBudgetSpent(BudgetExceeded):
    """A key's LLM tokens for the day are spent; ``retry_after_s`` is the time to the next UTC day."""

    def __init__(self, description: str, retry_after_s: float) -> None:
        super().__init__(description)
        self.retry_after_s = retry_after_s


class OwnLimits(Protocol):
    """A key's own limits (``shared.api_keys.KeyLimits``): None = the gateway's default."""

    @property
    def max_tokens_per_day(self) -> int | None: ...
    @property
    def requests_per_minute(self) -> int | None: ...
    @property
    def max_streams(self) -> int | None: ...
    @property
    def models(self) -> Sequence[str] | None: ...
    @property
    def events_per_second(self) -> int | None: ...


class DefaultLimits(Protocol):
    """The gateway's defaults (``GatewayConfig.key_*``)."""

    @property
    def key_max_tokens_per_day(self) -> int: ...
    @property
    def key_requests_per_minute(self) -> int: ...
    @property
    def key_max_streams(self) -> int: ...
    @property
    def key_models(self) -> str: ...
    @property
    def key_events_per_second(self) -> int: ...


@dataclass(frozen=True)
class Limits:
    """The limits that hold for one key: its own, else the gateway's defaults; 0 = unlimited."""

    tokens_per_day: int = 0
    requests_per_minute: int = 0
    streams: int = 0
    models: frozenset[str] = frozenset()  # empty: any model
    events_per_second: int = 0


def models_list(text: str) -> frozenset[str]:
    """``"a, b"`` -> ``{"a", "b"}`` (the gateway's comma-separated default allowlist)."""
    return frozenset(m.strip() for m in text.split(",") if m.strip())


def effective(own: OwnLimits, defaults: DefaultLimits) -> Limits:
    """A key's limits: each one the key sets, else the gateway's default for it."""

    def pick(value: int | None, default: int) -> int:
        return default if value is None else value

    return Limits(
        tokens_per_day=pick(own.max_tokens_per_day, defaults.key_max_tokens_per_day),
        requests_per_minute=pick(own.requests_per_minute, defaults.key_requests_per_minute),
        streams=pick(own.max_streams, defaults.key_max_streams),
        models=frozenset(own.models) if own.models else models_list(defaults.key_models),
        events_per_second=pick(own.events_per_second, defaults.key_events_per_second),
    )


def window_of(window: Window, now: float) -> tuple[int, float]:
    """The number of the fixed window holding ``now`` (epoch seconds, UTC) and the seconds left in it."""
    size = WINDOW_SECONDS[window]
    number = math.floor(now / size)
    return number, (number + 1) * size - now


def counter_key(kind: str, key_id: str, window: Window, now: float) -> str:
    """The KV key of one key's counter in the window holding ``now``: ``rpm.<key id>.<window number>``."""
    return f"{kind}.{key_id}.{window_of(window, now)[0]}"


def retry_after(seconds: float) -> int:
    """A ``Retry-After`` value: whole seconds, at least 1."""
    return max(1, math.ceil(seconds))


def fits(used: int, cost: int, limit: int) -> bool:
    """``cost`` more fits under ``limit`` (0 = unlimited) after ``used``."""
    return limit == 0 or used + cost <= limit


def check_model(model: object, limits: Limits) -> None:
    """``Forbidden`` when the key has an allowlist and ``model`` is not on it."""
    if limits.models and (not isinstance(model, str) or model not in limits.models):
        allowed = ", ".join(sorted(limits.models))
        raise Forbidden(f"this API key may not use model {model!r} (allowed: {allowed})")


def check_budget(used: int, limits: Limits, now: float) -> None:
    """``TokenBudgetSpent`` when the day's tokens are used up (the call that crosses the limit is let through)."""
    if limits.tokens_per_day and used >= limits.tokens_per_day:
        raise TokenBudgetSpent(
            f"this API key has used {used} of its {limits.tokens_per_day} LLM tokens for today (UTC)",
            retry_after(window_of("day", now)[1]),
        )


def rate_limited(what: str, limit: int, window: Window, now: float) -> RateLimited:
    """The 429 of a rate over ``limit`` per ``window``, retried when the window ends."""
    return RateLimited(
        f"this API key is over its limit of {limit} {what} per {window}", retry_after(window_of(window, now)[1])
    )


def live_slots(slots: dict[str, float], now: float) -> dict[str, float]:
    """The stream slots (slot id -> expiry time) not expired at ``now``."""
    return {slot: expires for slot, expires in slots.items() if expires > now}


def take_slot(slots: dict[str, float], slot: str, limit: int, now: float, lease_s: float) -> dict[str, float] | None:
    """The slots with ``slot`` taken (expired ones dropped), or None when ``limit`` are open already."""
    live = live_slots(slots, now)
    if limit and len(live) >= limit:
        return None
    return {**live, slot: now + lease_s}


def streams_full(limit: int) -> RateLimited:
    """The 429 of a key with ``limit`` streams open (a slot frees when one of them ends)."""
    return RateLimited(f"this API key has its {limit} streamed answers open already", 1.0)
