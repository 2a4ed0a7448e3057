"""The per-key limit state in the NATS KV bucket ``MEM_KEY_LIMITS``, shared by every gateway replica.

Every change is a read followed by an ``update`` naming the revision read (``create`` when the
entry is new); when another replica wrote in between, the write is refused and the change is
made again on the fresh value. Counters are decimal integers, one entry per key and window;
open streams are one JSON entry per key (slot id -> expiry time). The bucket's age limit drops
counters of past windows.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Callable
from typing import TypeVar

import msgspec
import nats.errors
from nats.js import JetStreamContext
from nats.js.api import KeyValueConfig
from nats.js.errors import KeyNotFoundError, KeyWrongLastSequenceError, NotFoundError
from nats.js.kv import KeyValue

from memoryd.errors import DependencyDown

LIMITS_BUCKET = "MEM_KEY_LIMITS"
#: entries older than this are dropped (a day counter must outlive its day)
MAX_AGE_S = 2 * 86_400.0
#: writes tried before giving up on a hot entry (each retry reads the other replica's write)
ATTEMPTS = 50

T = TypeVar("T")
_slots = msgspec.json.Decoder(dict[str, float])


async def open_limits_bucket(js: JetStreamContext) -> KeyValue:
    """The limits bucket, created on first use."""
    try:
        return await js.key_value(LIMITS_BUCKET)
    except NotFoundError:
        return await js.create_key_value(KeyValueConfig(bucket=LIMITS_BUCKET, history=1, ttl=MAX_AGE_S))


class LimitStore:
    """Counters and stream slots of API keys, changed with optimistic concurrency."""

    def __init__(self, kv: KeyValue) -> None:
        self.kv = kv

    async def _read(self, key: str) -> tuple[bytes | None, int]:
        try:
            entry = await self.kv.get(key)
        except KeyNotFoundError:
            return None, 0
        return entry.value or None, entry.revision or 0

    async def _change(self, key: str, change: Callable[[bytes | None], tuple[bytes | None, T]]) -> T:
        """Apply ``change`` (old value -> new value or None for no write, and a result) atomically."""
        try:
            for _ in range(ATTEMPTS):
                value, revision = await self._read(key)
                new, result = change(value)
                if new is None:
                    return result
                try:
                    if revision:
                        await self.kv.update(key, new, last=revision)
                    else:
                        await self.kv.create(key, new)
                    return result
                except KeyWrongLastSequenceError:
                    await asyncio.sleep(random.uniform(0, 0.005))
        except (nats.errors.Error, TimeoutError) as exc:
            raise DependencyDown(f"the key limits in {LIMITS_BUCKET} are unreachable: {type(exc).__name__}") from exc
        raise DependencyDown(f"the key limits in {LIMITS_BUCKET} stayed contended for {ATTEMPTS} writes")

    async def count(self, key: str) -> int:
        """A counter's value (0 when it does not exist)."""
        try:
            value, _ = await self._read(key)
        except (nats.errors.Error, TimeoutError) as exc:
            raise DependencyDown(f"the key limits in {LIMITS_BUCKET} are unreachable: {type(exc).__name__}") from exc
        return int(value) if value else 0

    async def add(self, key: str, amount: int, limit: int = 0) -> tuple[bool, int]:
        """Add ``amount`` unless that takes the counter over ``limit`` (0: always); (added, the value now)."""

        def change(value: bytes | None) -> tuple[bytes | None, tuple[bool, int]]:
            used = int(value) if value else 0
            if limit and used + amount > limit:
                return None, (False, used)
            return str(used + amount).encode(), (True, used + amount)

        return await self._change(key, change)

    async def slots(self, key: str, change: Callable[[dict[str, float]], dict[str, float] | None]) -> bool:
        """Change the slot map under ``key``; False when ``change`` refused (returned None)."""

        def apply(value: bytes | None) -> tuple[bytes | None, bool]:
            new = change(_slots.decode(value) if value else {})
            return (None, False) if new is None else (msgspec.json.encode(new), True)

        return await self._change(key, apply)
