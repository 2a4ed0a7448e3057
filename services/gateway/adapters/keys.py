"""API keys as the gateway sees them: records from ``MEM_API_KEYS``, cached for ``key_cache_s``.

A lookup that finds nothing is cached too (a flood of bad keys costs one KV read per key id and
interval). A revoked key stops working within ``key_cache_s``.
"""

from __future__ import annotations

import time

from shared.api_keys import ApiKeyRecord, KeyStore, matches, parse_key


class KeyCache:
    def __init__(self, store: KeyStore, ttl_s: float) -> None:
        self.store = store
        self.ttl_s = ttl_s
        self._cache: dict[str, tuple[float, ApiKeyRecord | None]] = {}

    async def record(self, key_id: str) -> ApiKeyRecord | None:
        now = time.monotonic()
        hit = self._cache.get(key_id)
        if hit is not None and hit[0] > now:
            return hit[1]
        record = await self.store.get(key_id)
        if len(self._cache) > 10_000:
            self._cache.clear()
        self._cache[key_id] = (now + self.ttl_s, record)
        return record

    async def authenticate(self, token: str) -> ApiKeyRecord | None:
        """The record of a valid key, else None."""
        parsed = parse_key(token)
        if parsed is None:
            return None
        record = await self.record(parsed[0])
        return record if record is not None and matches(record, parsed[1]) else None
