"""Runtime settings: the per-process cache (bounded to a number of owners, LRU; TTL;
invalidation) and the retrieval shares that are runtime settings per owner."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from memoryd.errors import ValidationFailed
from shared.settings.cache import SettingsCache
from shared.settings.memory import GLOBAL_OWNER, MemorySettings, validate, validate_update


class CountingLoader:
    def __init__(self) -> None:
        self.loads: list[str] = []

    async def __call__(self, owner: str) -> MemorySettings:
        self.loads.append(owner)
        return MemorySettings(max_tokens=len(self.loads))


def _cache(loader: CountingLoader, **kw: Any) -> SettingsCache:
    return SettingsCache(None, loader=loader, **kw)  # type: ignore[arg-type]  # the loader replaces the pool


async def test_least_recently_used_owner_is_dropped_beyond_the_bound() -> None:
    loader = CountingLoader()
    cache = _cache(loader, ttl_s=3600, max_owners=2)
    assert (await cache.get("a")).max_tokens == 1
    assert (await cache.get("b")).max_tokens == 2
    assert (await cache.get("a")).max_tokens == 1  # a hit: a is now the most recent
    assert (await cache.get("c")).max_tokens == 3  # evicts b, the least recently used
    assert (await cache.get("a")).max_tokens == 1
    assert (await cache.get("b")).max_tokens == 4  # b was dropped: read again
    assert loader.loads == ["a", "b", "c", "b"]


async def test_invalidation_of_one_owner_and_of_everything() -> None:
    loader = CountingLoader()
    cache = _cache(loader, ttl_s=3600)
    await cache.get("a")
    await cache.get("b")
    cache.invalidate("a")
    await cache.get("a")
    await cache.get("b")
    assert loader.loads == ["a", "b", "a"]
    cache.invalidate(GLOBAL_OWNER)
    await cache.get("b")
    assert loader.loads == ["a", "b", "a", "b"]


async def test_ttl_zero_reads_every_time() -> None:
    loader = CountingLoader()
    cache = _cache(loader, ttl_s=0)
    await cache.get("a")
    await cache.get("a")
    assert loader.loads == ["a", "a"]


@pytest.mark.parametrize(
    ("key", "bad"), [("sessionBoost", -0.1), ("neighbourBoost", 11), ("ftsWeight", "high"), ("vecWeight", -1)]
)
def test_retrieval_shares_are_runtime_settings_validated_by_name(key: str, bad: object) -> None:
    d = MemorySettings()
    assert (d.session_boost, d.neighbour_boost, d.fts_weight, d.vec_weight) == (0.3, 0.3, 0.6, 0.4)
    assert validate({key: 1.5}) == msgspec.structs.replace(d, **{_snake(key): 1.5})
    with pytest.raises(ValidationFailed, match=rf"`\$\.{key}`"):
        validate_update({}, {}, {key: bad})


def _snake(camel: str) -> str:
    return "".join(f"_{c.lower()}" if c.isupper() else c for c in camel)
