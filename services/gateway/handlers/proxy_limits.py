"""Per-key limits at the gateway's doors: every proxy route calls ``admit_proxy`` before its upstream.

``admit_proxy`` checks, in order, the model allowlist (403), the day's LLM tokens (429
``budget_exceeded``), a streamed answer's slot and the requests per minute (429
``rate_limited``); all of them with ``Retry-After``, and before the upstream is contacted.
The ``ProxyGrant`` it returns asks a stream for its usage, charges what the upstream reports
(``spend``) and frees the stream's slot (``release``). ``admit_events`` holds
``POST /v1/events`` to its events per second before anything is published. The state is in
NATS KV (``adapters/limits_kv.py``), so the limits hold across gateway replicas; a key with
no limits costs no KV round trip.

A proxy route: ``grant = await admit_proxy(gw, key, body)``, then ``body, usage =
grant.forwarded(body)``; feed a stream's chunks through ``usage.feed`` (and ``usage.flush``),
charge with ``spend_stream`` / ``spend_answer``, and ``release`` in a ``finally`` (for a
stream: when it ends, e.g. ``BoundedStream(on_close=grant.release)``).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from shared.api_keys import ApiKeyRecord
from shared.observability.logging import get_logger

from ..context import Gateway
from ..logic.chat import upstream_json
from ..logic.limits import (
    Limits,
    check_budget,
    check_model,
    counter_key,
    effective,
    rate_limited,
    streams_full,
    take_slot,
)
from ..logic.usage import SseUsage, ask_for_usage, estimate, usage_tokens

log = get_logger(__name__)


@dataclass
class ProxyGrant:
    """One admitted proxy call: its key's limits and, for a stream, the slot it holds."""

    gw: Gateway
    key_id: str
    limits: Limits
    slot: str | None = None
    _renewal: asyncio.Task[None] | None = field(default=None, repr=False)

    @property
    def counts_tokens(self) -> bool:
        return self.limits.tokens_per_day > 0

    def forwarded(self, body: dict[str, Any], *, ask_usage: bool = True) -> tuple[dict[str, Any], SseUsage]:
        """The body to send and its usage reader; a chat completion stream asks for its usage chunk
        when tokens are counted (``ask_usage=False`` for APIs whose streams always carry usage)."""
        if not self.counts_tokens:  # nothing to charge: the stream's events are not read a second time
            return body, SseUsage(strip=False, read=False)
        if not ask_usage:
            return body, SseUsage(strip=False)
        body, added = ask_for_usage(body)
        return body, SseUsage(strip=added)

    async def spend(self, tokens: int) -> None:
        """Charge ``tokens`` to the key's day (a failure to do so is logged, the answer is already out)."""
        if not self.counts_tokens or tokens <= 0:
            return
        try:
            await self.gw.limits.add(counter_key("tokens", self.key_id, "day", time.time()), tokens)
        except Exception as exc:
            log.warning("proxy.tokens_not_charged", key_id=self.key_id, tokens=tokens, error=str(exc))

    async def spend_answer(self, request_bytes: int, answer: bytes) -> None:
        """Charge a whole answer's reported usage (else an estimate)."""
        if not self.counts_tokens:
            return
        tokens = usage_tokens(upstream_json(answer))
        await self.spend(tokens if tokens is not None else estimate(request_bytes, len(answer)))

    async def spend_stream(self, request_bytes: int, usage: SseUsage) -> None:
        """Charge a stream's reported usage (else an estimate)."""
        await self.spend(usage.tokens if usage.tokens is not None else estimate(request_bytes, usage.seen))

    async def release(self) -> None:
        """Free the stream's slot (idempotent; an unreachable KV lets the slot expire instead)."""
        slot, self.slot = self.slot, None
        if self._renewal is not None:
            self._renewal.cancel()
            self._renewal = None
        if slot is None:
            return
        try:
            await self.gw.limits.slots(_streams_key(self.key_id), lambda slots: _without(slots, slot))
        except Exception as exc:
            log.warning("proxy.stream_slot_not_freed", key_id=self.key_id, error=str(exc))

    async def _renew(self, slot: str) -> None:
        lease = self.gw.config.stream_slot_lease_s
        while True:
            await asyncio.sleep(lease / 3)
            with contextlib.suppress(Exception):  # missed renewals let the slot lapse, never fail the stream
                await self.gw.limits.slots(
                    _streams_key(self.key_id), lambda slots: {**slots, slot: time.time() + lease}
                )


def _streams_key(key_id: str) -> str:
    return f"streams.{key_id}"


def _without(slots: dict[str, float], slot: str) -> dict[str, float] | None:
    if slot not in slots:
        return None
    return {s: t for s, t in slots.items() if s != slot}


def limits_of(gw: Gateway, key: ApiKeyRecord) -> Limits:
    return effective(key.limits, gw.config)


async def admit_proxy(gw: Gateway, key: ApiKeyRecord, body: dict[str, Any]) -> ProxyGrant:
    """Admit one proxied call before its upstream is contacted, or raise its 403/429."""
    limits = limits_of(gw, key)
    grant = ProxyGrant(gw=gw, key_id=key.id, limits=limits)
    check_model(body.get("model"), limits)
    now = time.time()
    if limits.tokens_per_day:
        check_budget(await gw.limits.count(counter_key("tokens", key.id, "day", now)), limits, now)
    if limits.streams and body.get("stream") is True:
        slot, lease = uuid.uuid4().hex, gw.config.stream_slot_lease_s
        if not await gw.limits.slots(
            _streams_key(key.id), lambda slots: take_slot(slots, slot, limits.streams, time.time(), lease)
        ):
            raise streams_full(limits.streams)
        grant.slot = slot
        grant._renewal = asyncio.create_task(grant._renew(slot))
    try:
        if limits.requests_per_minute:
            added, _ = await gw.limits.add(counter_key("rpm", key.id, "minute", now), 1, limits.requests_per_minute)
            if not added:
                raise rate_limited("requests", limits.requests_per_minute, "minute", now)
    except BaseException:
        await grant.release()
        raise
    return grant


async def admit_events(gw: Gateway, key: ApiKeyRecord, events: int = 1) -> None:
    """Count ``events`` chat events against the key's events per second, or raise its 429 (none counted)."""
    limit = limits_of(gw, key).events_per_second
    if not limit or events < 1:
        return
    now = time.time()
    added, _ = await gw.limits.add(counter_key("eps", key.id, "second", now), events, limit)
    if not added:
        raise rate_limited("chat events", limit, "second", now)
